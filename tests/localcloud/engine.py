"""A stack run by the real engine for the lifecycle tests: a copy of the program in a work
directory, a private PULUMI_HOME with the plugins built here and the command stand-in, a local
file backend, and the comparison of real previews with the offline preview. Test harness."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cluster.config import ConfigError, load_config
from harness.command_standin import install as install_command_standin
from tests.conftest import PULL_SECRET, ROOT, preview
from tools import toolchain

PASSPHRASE = "lifecycle-only-passphrase"
PLUGINS = ROOT / ".toolchain" / "pulumi-home" / "plugins"
# Step ops of `pulumi preview --json`, as the offline preview names the action.
OPS = {"same": "same", "update": "update", "create": "create", "delete": "delete", "replace": "replace", "create-replacement": "replace", "delete-replaced": "replace"}


def plugin(name: str, version: str) -> Path:
    return PLUGINS / f"resource-{name}-v{version}" / f"pulumi-resource-{name}"


def needs(*plugins: tuple[str, str]) -> str | None:
    """Why the real engine cannot run these stacks here, or None."""
    for name in ("pulumi", "pulumi-language-python", "openshift-install"):
        if toolchain.binary(name) is None:
            return toolchain.missing(name)
    for name, version in plugins:
        if not plugin(name, version).is_file():
            return toolchain.missing(f"pulumi-resource-{name}")
    return None


def structured(value: str):
    return json.loads(value) if value[:1] in "[{" else value


def flat(config: dict) -> dict[str, str]:
    """A stack file's config as the CLI passes it: objects as JSON text."""
    return {key: json.dumps(value) if isinstance(value, (dict, list)) else str(value) for key, value in config.items()}


@dataclass
class Stack:
    name: str
    project: Path
    env: dict[str, str]
    base: dict[str, str]  # the deployed config, as tests.conftest's stack_config writes configs
    work: Path = field(default=Path())

    @classmethod
    def create(
        cls, name: str, work: Path, env: dict[str, str], plugins: Iterable[tuple[str, str]], config: Callable[[dict], dict],
        secrets_provider: str | None = None,
    ) -> Stack:
        """A new stack of a copy of the program, its config the committed stack file's passed through `config`;
        its secrets under `secrets_provider` (`hashivault://KEY`, say) rather than the passphrase."""
        project = work / "project"
        shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".toolchain", "venv", "build", "assets", "tests", "__pycache__", "Pulumi.*.yaml"))
        (project / "venv").symlink_to(ROOT / "venv")
        if (ROOT / "policy" / "venv").is_dir():  # the pack's own (.ci/setup makes it): `python -m ocp` runs with it
            (project / "policy" / "venv").symlink_to(ROOT / "policy" / "venv")
        (work / "state").mkdir()
        environment = {**toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE}
        # env's PATH comes after the toolchain's (the cloud's `openstack` CLI, say); the rest is set as given.
        environment.update({**env, "PATH": os.pathsep.join(filter(None, [environment["PATH"], env.get("PATH")]))})
        if secrets_provider:
            del environment["PULUMI_CONFIG_PASSPHRASE"]
        for plugin_name, version in plugins:
            installed = subprocess.run(
                ["pulumi", "plugin", "install", "resource", plugin_name, version, "--file", str(plugin(plugin_name, version))],
                env=environment, capture_output=True, text=True,
            )
            assert installed.returncode == 0, installed.stderr
        install_command_standin(work / "home", toolchain.binary("pulumi"), environment)
        committed = yaml.safe_load((ROOT / f"Pulumi.{name}.yaml").read_text())["config"]
        base = flat(config(committed))
        base["ocp:pullSecret"] = PULL_SECRET
        created = cls(name, project, environment, base, work)
        (project / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": {}}))
        initialised = created.pulumi("stack", "init", *(["--secrets-provider", secrets_provider] if secrets_provider else []))
        assert initialised.returncode == 0, initialised.stderr
        secret = created.pulumi("config", "set", "--secret", "ocp:pullSecret", stdin=PULL_SECRET)
        assert secret.returncode == 0, secret.stderr
        created.write_config(base)
        return created

    def pulumi(self, *args: str, stdin: str | None = None, timeout: float = 1800, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["pulumi", *args, "--stack", self.name, "--non-interactive"],
            cwd=self.project, env={**self.env, **(env or {})}, input=stdin, capture_output=True, text=True, timeout=timeout,
        )

    def start(self, *args: str, log: Path) -> subprocess.Popen:
        """`pulumi ARGS` in the background, in a process group of its own (to be killed whole), output to `log`."""
        with log.open("w") as out:
            return subprocess.Popen(
                ["pulumi", *args, "--stack", self.name, "--non-interactive"],
                cwd=self.project, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        """SIGKILL to the CLI, its language host, the program and every plugin: a crash, not a Ctrl-C."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def after_crash(self) -> list[str]:
        """What a user does after a crash of the CLI with a file backend: the checkpoint's `.attrs` side
        file (gocloud's fileblob writes it beside the checkpoint, not atomically) may be left empty, and
        then every command fails with `failed to load checkpoint: EOF` (seen once, in a full run of
        2026-11-26: the kill landed on that write); without it the checkpoint reads as the plain JSON it
        is. Returns the files removed (docs/troubleshooting.md says the same to users)."""
        removed = [path for path in (self.work / "state").rglob("*.attrs") if path.stat().st_size == 0]
        for path in removed:
            path.unlink()
        return [str(path) for path in removed]

    def write_config(self, config: dict[str, str], path: Path | None = None) -> None:
        """The stack file (or a copy of it at `path`) with this config (objects as YAML objects), keeping the
        encrypted pull secret and the passphrase's salt."""
        stack_file = yaml.safe_load((self.project / f"Pulumi.{self.name}.yaml").read_text())
        path = path or self.project / f"Pulumi.{self.name}.yaml"
        kept = {key: value for key, value in stack_file["config"].items() if key == "ocp:pullSecret"}
        written = {key: structured(value) for key, value in config.items() if key != "ocp:pullSecret"}
        stack_file["config"] = {**written, **kept}
        path.write_text(yaml.safe_dump(stack_file, sort_keys=True))

    def up(self, config: dict[str, str] | None = None, event_log: Path | None = None) -> subprocess.CompletedProcess:
        if config is not None:
            self.write_config(config)
        # --event-log (each step's start and end) is one of the CLI's debug commands.
        flags, env = (["--event-log", str(event_log)], {"PULUMI_DEBUG_COMMANDS": "true"}) if event_log else ([], {})
        done = self.pulumi("up", "--yes", "--skip-preview", *flags, env=env)
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        return done

    def config(self) -> dict[str, str]:
        """The stack file's config as it stands, flat (the pull secret left out: write_config keeps it)."""
        written = yaml.safe_load((self.project / f"Pulumi.{self.name}.yaml").read_text())["config"]
        return flat({key: value for key, value in written.items() if key != "ocp:pullSecret"})

    def destroy(self, teardown: bool = False) -> subprocess.CompletedProcess:
        """`pulumi destroy`, as a user makes it of a stack that protects its masters, network and
        installer's record (ocp:protect): the key lowered and an `up` first, which changes only
        the flag. A fixture's teardown after a failure, where that `up` cannot run, lifts the
        protection in the state instead, so the cloud is left clean; a test gets the failed `up`."""
        if any(resource.get("protect") for resource in self.state()):
            self.write_config({**self.config(), "ocp:protect": "false"})
            lowered = self.pulumi("up", "--yes", "--skip-preview")
            if lowered.returncode != 0:
                if not teardown:
                    return lowered
                self.pulumi("state", "unprotect", "--all", "--yes")
        return self.pulumi("destroy", "--yes", "--skip-preview")

    def ocp(self, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
        """`python -m ocp ARGS --stack NAME`, as a user runs it in the project (its venv, the stack's environment)."""
        return subprocess.run(
            ["venv/bin/python", "-m", "ocp", *args, "--stack", self.name],
            cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )

    def outputs(self) -> dict:
        return json.loads(self.pulumi("stack", "output", "--json").stdout)

    def state(self) -> list[dict]:
        """Every resource of the state, secrets shown (`pulumi stack export --show-secrets`)."""
        done = self.pulumi("stack", "export", "--show-secrets")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["deployment"].get("resources", [])

    def steps(self, config: dict[str, str], config_file: Path | None = None) -> tuple[dict[str, str] | None, str]:
        """What `pulumi preview` does with this config: resource name -> action, or None and the output when it
        fails. With `config_file`, the config goes there (`--config-file`) and the stack file stays as it is: such
        previews of one deployed stack run side by side (a preview takes no lock and writes no state)."""
        if config_file is None:
            self.write_config(config)
            done = self.pulumi("preview", "--json")
        else:
            self.write_config(config, config_file)
            done = self.pulumi("preview", "--json", "--config-file", str(config_file))
        output = done.stdout + done.stderr
        try:  # --json puts the diagnostics' messages (refusals, warnings) in JSON strings: read them as text
            output = "\n".join(d.get("message", "") for d in json.loads(done.stdout).get("diagnostics", [])) + "\n" + output
        except ValueError:
            pass
        if done.returncode != 0:
            return None, output
        found: dict[str, str] = {}
        for step in json.loads(done.stdout)["steps"]:
            urn = step["urn"]
            # Custom resources only, as the offline preview lists them (components never diff).
            if "::pulumi:pulumi:Stack::" in urn or "::pulumi:providers:" in urn or urn.split("::")[2].split("$")[-1].startswith("ocp:"):
                continue
            name = urn.rsplit("::", 1)[1]
            action = OPS[step["op"]]
            if found.get(name, "same") == "same":
                found[name] = action
        return found, output


def timeline(event_log: Path) -> dict[str, tuple[str, int, int]]:
    """Each resource step of a run's `--event-log`: name -> (type, start, end), in the engine's whole seconds."""
    started: dict[str, tuple[str, int]] = {}
    steps: dict[str, tuple[str, int, int]] = {}
    for line in event_log.read_text().splitlines():
        event = json.loads(line)
        for kind in ("resourcePreEvent", "resOutputsEvent"):
            if kind in event:
                metadata = event[kind]["metadata"]
                name = metadata["urn"].rsplit("::", 1)[1]
                if kind == "resourcePreEvent":
                    started[name] = (metadata["type"], event["timestamp"])
                elif name in started:
                    steps[name] = (started[name][0], started[name][1], event["timestamp"])
    return steps


def summary(steps: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for action in steps.values():
        counts[action] = counts.get(action, 0) + 1
    return ", ".join(f"{count} {action}" for action, count in sorted(counts.items()))


# Real previews of one deployed stack at once: each waits on the cloud's APIs and the plugins as much as it computes.
SIDE_BY_SIDE = 3


def agreement(stack: Stack, deployed: list, edits) -> tuple[list[tuple[str, str, str, bool]], list[str]]:
    """Every edit previewed by the real engine and plugins against the deployed stack, and by the
    offline preview against `deployed` (the offline deployment of the same config): rows (edit,
    offline, real, agree) and the disagreements. The real ones run SIDE_BY_SIDE at a time, each with
    its config in a file of its own, the stack file keeping the base; those of edits the catalogue
    says change or refuse something start while this process makes the offline ones (in-process).
    Edits the offline preview finds change nothing are previewed for real together, BATCH at a time
    (each a config holding every one's change): a batch whose real preview changes nothing and
    warns about every key the edits expect agrees for each; any other batch is previewed again edit
    by edit, so the assertions are each edit's own."""
    edits = list(edits)
    configs = [edit.change(stack.base) for edit in edits]
    files = stack.work / "previews"
    files.mkdir(exist_ok=True)
    # A key the stack file does not list is known to the program only from that file (components/config_source.py):
    # such an edit is previewed through the stack file itself, after the others.
    own_file = {index for index, config in enumerate(configs) if set(config) - set(stack.base)}
    # Edits the catalogue says change or refuse something go alone, at once, while the offline previews are made.
    loud = {index for index, edit in enumerate(edits) if index not in own_file and (edit.refused or edit.refused_on_http_cloud or edit.expect)}
    results: dict[int, tuple[dict[str, str] | None, str]] = {}
    with ThreadPoolExecutor(SIDE_BY_SIDE) as pool:
        alone = {index: pool.submit(stack.steps, configs[index], files / f"Pulumi.{stack.name}.{index}.yaml") for index in sorted(loud)}
        offlines = [preview(deployed, config, stack.name) for config in configs]
        quiet = [
            index for index, offline in enumerate(offlines)
            if index not in own_file | loud and offline.error is None and all(change.action == "same" for change in offline.changes.values())
        ]
        batches = _batches(stack.base, configs, quiet)
        batched = {index for batch, _ in batches for index in batch}
        together = [
            (batch, pool.submit(stack.steps, config, files / f"Pulumi.{stack.name}.batch{number}.yaml"))
            for number, (batch, config) in enumerate(batches)
        ]
        alone |= {
            index: pool.submit(stack.steps, config, files / f"Pulumi.{stack.name}.{index}.yaml")
            for index, config in enumerate(configs)
            if index not in own_file | loud | batched
        }
        again: dict[int, Future] = {}
        for batch, future in together:
            real, output = future.result()
            warned = all(key in output for index in batch for key in edits[index].warns)
            if real is not None and warned and all(action == "same" for action in real.values()):
                results |= dict.fromkeys(batch, (real, output))
            else:  # something in it disagrees: each edit on its own, to name which
                why = "refused" if real is None else f"changes {sorted(name for name, action in real.items() if action != 'same')}" if warned else "a warning missing"
                print(f"a batch of {len(batch)} edits ({', '.join(edits[index].id for index in batch)}) disagrees ({why}): each again alone\n{output[-1500:] if real is None else ''}")
                again |= {index: pool.submit(stack.steps, configs[index], files / f"Pulumi.{stack.name}.{index}.yaml") for index in batch}
        results |= {index: future.result() for index, future in (alone | again).items()}
    print(f"{len(edits)} edits: {len(batched)} in {len(batches)} real previews together ({len(again)} of them again alone), {len(edits) - len(batched)} alone")
    for index in sorted(own_file):
        results[index] = stack.steps(configs[index])
    stack.write_config(stack.base)
    rows: list[tuple[str, str, str, bool]] = []
    disagreements: list[str] = []
    for index, (edit, offline) in enumerate(zip(edits, offlines, strict=True)):
        real, output = results[index]
        rows.append(_agree(edit, offline, real, output, disagreements))
    return rows, disagreements


# Edits previewed for real in one config at most (a batch that disagrees costs each of its edits a preview more).
BATCH = 10


def _batches(base: dict[str, str], configs: list[dict[str, str]], indexes: list[int]) -> list[tuple[list[int], dict[str, str]]]:
    """The edits at `indexes` in batches of at most BATCH whose changes touch no common key (nor one inside
    another) and whose config the program's config rules refuse for nothing they do not refuse in one edit alone
    (masters.availabilityZones and masters.rootVolume each pass alone; together the volume needs zones), each with
    the config holding
    all of their changes; an edit that fits no batch is left out."""
    made: list[_Batch] = []
    for index in indexes:
        delta, own = _delta(base, configs[index]), _refusals(configs[index])
        for batch in made:
            if len(batch.edits) < BATCH and not any(_nested(path, other) for path in delta for other in batch.touched):
                merged = _with(batch.config, delta)
                if merged is not None and _refusals(merged) <= batch.refused | own:
                    batch.edits.append(index)
                    batch.config = merged
                    batch.touched.extend(delta)
                    batch.refused |= own
                    break
        else:
            made.append(_Batch([index], dict(configs[index]), list(delta), own))
    return [(batch.edits, batch.config) for batch in made if len(batch.edits) > 1]


def _refusals(config: dict[str, str]) -> set[str]:
    """What the program's config rules refuse in `config` (cluster/config.py; the pure core, no preview)."""
    try:
        load_config(config)
    except ConfigError as error:
        return set(error.problems)
    return set()


@dataclass
class _Batch:
    edits: list[int]
    config: dict[str, str]  # the base with every edit's change
    touched: list[tuple[str, ...]]  # the paths they change
    refused: set[str]  # what the config rules refuse in each of them alone (nothing, for edits that preview `same`)


_GONE = object()


def _parsed(text: str | object) -> object:
    """A stack file value: an object's as its JSON, anything else as written."""
    if isinstance(text, str) and text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _delta(base: dict[str, str], config: dict[str, str]) -> dict[tuple[str, ...], object]:
    """What `config` changes of `base`: path -> new value (_GONE: removed). Objects are entered only where both
    hold one: an object that is new, or replaces something else, is one value, as the edit wrote it."""
    found: dict[tuple[str, ...], object] = {}

    def walk(path: tuple[str, ...], before: object, after: object) -> None:
        if isinstance(before, dict) and isinstance(after, dict):
            for name in before.keys() | after.keys():
                walk((*path, name), before.get(name, _GONE), after.get(name, _GONE))
        elif before != after:
            found[path] = after

    for name in base.keys() | config.keys():
        walk((name,), _parsed(base.get(name, _GONE)), _parsed(config.get(name, _GONE)))
    return found


def _nested(one: tuple[str, ...], other: tuple[str, ...]) -> bool:
    return one[: len(other)] == other or other[: len(one)] == one


def _with(config: dict[str, str], delta: dict[tuple[str, ...], object]) -> dict[str, str] | None:
    """`config` with `delta`'s leaves set (or removed); None where a leaf's parent is not an object there."""
    merged = dict(config)
    for path, value in delta.items():
        name, inner = path[0], path[1:]
        if not inner:
            if value is _GONE:
                merged.pop(name, None)
            else:
                merged[name] = value if isinstance(value, str) else json.dumps(value)
            continue
        try:
            document = json.loads(merged.get(name, "{}"))
        except ValueError:
            return None
        node = document
        for step in inner[:-1]:
            node = node.setdefault(step, {})
            if not isinstance(node, dict):
                return None
        if not isinstance(node, dict):
            return None
        if value is _GONE:
            node.pop(inner[-1], None)
        else:
            node[inner[-1]] = value
        merged[name] = json.dumps(document)
    return merged


def _agree(edit, offline, real: dict[str, str] | None, output: str, disagreements: list[str]) -> tuple[str, str, str, bool]:
    if edit.refused_on_http_cloud is not None:  # the local cloud's image endpoint is http, the mock cloud's https
        agree = offline.error is None and real is None and edit.refused_on_http_cloud in output
        if not agree:
            disagreements.append(f"{edit.id}: refused by the http local cloud expected; offline {offline.error!r}; real: {output[-1500:]}")
        return (edit.id, "ran" if offline.error is None else "refused", "refused" if real is None else "ran", agree)
    if offline.error is not None or real is None:
        agree = offline.error is not None and real is None and edit.refused is not None and edit.refused in output
        if not agree:
            disagreements.append(f"{edit.id}: offline {offline.error!r}; real: {output[-1500:]}")
        return (edit.id, "refused" if offline.error else "ran", "refused" if real is None else "ran", agree)
    offline_steps = {name: change.action for name, change in offline.changes.items() if not change.type.startswith("pulumi:")}
    # The offline preview tells an OpenStack server's resize and rebuild apart; the engine calls both an update.
    offline_steps = {name: "update" if action in ("resize", "rebuild") else action for name, action in offline_steps.items()}
    differ = {name: (offline_steps.get(name, "absent"), real.get(name, "absent")) for name in set(offline_steps) | set(real) if offline_steps.get(name, "same") != real.get(name, "same")}
    warned = [key for key in edit.warns if key not in output]
    if differ or warned:
        disagreements.append(f"{edit.id}: offline vs real {differ}; warnings missing from the real run: {warned}")
    return (edit.id, summary(offline_steps), summary(real), not differ and not warned)


def table(rows: list[tuple[str, str, str, bool]]) -> str:
    return "\n".join(f"{'agree' if agree else 'DIFFER':7} {edit:50} offline: {offline:40} real: {real}" for edit, offline, real, agree in rows)
