"""From nothing to an installed cluster, on Pulumi's Automation API (a local workspace on this
project, the stack selected; its tools checked first, ocp/checks.py): preview, up with progress,
a check that the API's name resolves here, the bootstrap (its masters' CSRs approved beside the wait), its
teardown, the workers' CSRs (this stack's nodes only), install-complete. Run again, it continues from where the
cluster is: `up` changes only what is missing, and a stack whose bootstrap is gone skips the bootstrap's steps."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from pulumi import automation as auto

from cluster.config import ClusterConfig, load_config
from cluster.csr import SETTLE, role
from cluster.gather import gather_argv, gathering
from cluster.installer import installer_dir
from ocp import checks, keyservice, locks, private_files, state_guard
from ocp.approver import approve_named, approve_until_ready, approving_beside, untimed
from ocp.kube import Kube
from ocp.version import run_message

PROJECT = Path(__file__).resolve().parent.parent
# The guard rails (policy/README.md): every preview and up of this driver runs with them.
POLICY = PROJECT / "policy"
# Steps a running cluster does not come back from unchanged.
DISRUPTIVE_OPS = {"replace", "create-replacement", "delete-replaced", "delete"}
# What a disruption is judged on: machines and the network they stand on (not commands, rules, files).
MACHINE_TYPES = (
    "openstack:compute/instance:Instance",
    "openstack:networking/network:Network",
    "openstack:networking/subnet:Subnet",
    "openstack:networking/port:Port",
    "openstack:networking/router:Router",
    "openstack:blockstorage/volume:Volume",
    "libvirt:index/domain:Domain",
    "libvirt:index/network:Network",
    "libvirt:index/volume:Volume",
)
# The bootstrap's components: whatever they hold goes with its teardown, by design.
BOOTSTRAP_TYPES = ("ocp:openstack:Bootstrap", "ocp:libvirt:Bootstrap")


class Stop(Exception):
    """The install stops here; the message says why and what to do."""


@dataclass
class Progress:
    say: Callable[[str], None]
    total: int = 0
    done: int = 0
    began: float = field(default_factory=time.monotonic)

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.began)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def event(self, event: auto.EngineEvent) -> None:
        if event.resource_pre_event and _op(event.resource_pre_event.metadata) != "same":
            step = event.resource_pre_event.metadata
            self.say(f"[{self.done}/{self.total} {self.elapsed()}] {_op(step)} {step.type} {step.urn.rsplit('::', 1)[1]}")
        elif event.res_outputs_event and _op(event.res_outputs_event.metadata) != "same":
            self.done += 1
        elif event.res_op_failed_event:
            self.say(f"[{self.done}/{self.total} {self.elapsed()}] failed: {event.res_op_failed_event.metadata.urn.rsplit('::', 1)[1]}")
        elif event.diagnostic_event and event.diagnostic_event.severity in ("warning", "error"):
            self.say(f"{event.diagnostic_event.severity}: {event.diagnostic_event.message.strip()}")


def _op(step: auto.StepEventMetadata) -> str:
    """The step's operation as the CLI prints it (the SDK gives an enum)."""
    return getattr(step.op, "value", step.op)


def _stack(name: str) -> auto.Stack:
    """The stack, once the Pulumi CLI that serves it is here (checks.MissingTools if not)."""
    missing = checks.pulumi_problems()
    if missing:
        raise checks.MissingTools(missing)
    return locks.opened(name, lambda: auto.select_stack(stack_name=name, work_dir=str(PROJECT)))  # a store refusing the credential: Refused


def _config(stack: auto.Stack) -> ClusterConfig:
    with keyservice.decrypting("pulumi config", Stop, _errors):  # the first command that decrypts
        values = stack.get_all_config()
    return load_config({key: value.value for key, value in values.items()})


def policy_pack(say: Callable[[str], None]) -> list[str]:
    """The pack as the engine runs it (`policy/run`, in its own virtualenv policy/venv), made here
    on the first run when `.ci/setup` has not; a pack that cannot run stops the driver."""
    python = POLICY / "venv" / "bin" / "python"
    if not _pack_runs(python):
        say(f"making the policy pack's virtualenv {POLICY / 'venv'} (once; `bash .ci/setup` makes it too)")
        steps = ([sys.executable, "-m", "venv", "--clear", str(POLICY / "venv")], [str(python), "-m", "pip", "install", "-q", "-r", str(POLICY / "requirements.txt")])
        for command in steps:
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise Stop(
                    f"the policy pack cannot run ({' '.join(command[:4])}: {(done.stderr or done.stdout).strip()[-400:]}): "
                    f"make {POLICY / 'venv'} with `bash .ci/setup`, then run again (install and destroy run only with the guard rails)"
                )
        if not _pack_runs(python):
            raise Stop(f"the policy pack cannot run: {python} does not load policy/guard.py; `bash .ci/setup`, then run again")
    return [str(POLICY / "run")]


def _pack_runs(python: Path) -> bool:
    """Whether the pack's interpreter loads the pack's rules and their SDK."""
    if not python.exists():
        return False
    return subprocess.run([str(python), "-c", "import guard, pulumi_policy"], cwd=POLICY, capture_output=True).returncode == 0


def _violations(events: list[auto.EngineEvent]) -> list[str]:
    """The pack's mandatory violations among the engine's events, one line each."""
    found = []
    for event in events:
        policy = event.policy_event
        if policy and policy.enforcement_level == "mandatory":
            name = (policy.resource_urn or "").rsplit("::", 1)[-1]
            # The engine's message is the policy's description, a newline, then what the rule reported.
            found.append(f"{policy.policy_name} ({name}): {policy.message.strip().split(chr(10), 1)[-1].strip()}")
    return found


def preview(stack: auto.Stack, say: Callable[[str], None], go_on: bool, replace: tuple[str, ...] = ()) -> int:
    """The steps `up` will take, judged by the policy pack; stops on a violation, or on a
    disruption of running machines unless `go_on`. `replace`: URNs to replace (pulumi's --replace)."""
    steps: list[auto.StepEventMetadata] = []
    policy: list[auto.EngineEvent] = []

    def seen(event: auto.EngineEvent) -> None:
        if event.resource_pre_event:
            steps.append(event.resource_pre_event.metadata)
        elif event.policy_event:
            policy.append(event)

    try:
        stack.preview(on_event=seen, policy_packs=policy_pack(say), **({"replace": list(replace)} if replace else {}))
    except auto.CommandError as error:
        raise Stop(_refusal("pulumi preview", policy, str(error))) from error
    if _violations(policy):  # a pack the engine ran but whose mandatory violation did not fail the command
        raise Stop(_refusal("pulumi preview", policy, ""))
    changing = [step for step in steps if _op(step) != "same"]
    counts: dict[str, int] = {}
    for step in changing:
        counts[_op(step)] = counts.get(_op(step), 0) + 1
    say("preview: " + (", ".join(f"{n} to {op}" for op, n in sorted(counts.items())) or "nothing to change"))
    parents = {step.urn: _parent(step) for step in steps}
    disruptive = [s for s in changing if _op(s) in DISRUPTIVE_OPS and s.type in MACHINE_TYPES and not _in_bootstrap(s.urn, parents)]
    if disruptive:
        names = ", ".join(f"{_op(s)} {s.urn.rsplit('::', 1)[1]}" for s in disruptive)
        if not go_on:
            raise Stop(f"the preview would disrupt running machines ({names}): review it with `pulumi preview --diff`, then run again with --yes")
        say(f"going on despite: {names}")
    return len(changing)


def _parent(step: auto.StepEventMetadata) -> str:
    state = step.new or step.old
    return (state.parent if state else "") or ""


def _in_bootstrap(urn: str, parents: dict[str, str]) -> bool:
    """Whether the resource is the bootstrap's: a component of a BOOTSTRAP_TYPES type among its
    ancestors, read from the types in each URN (its own and its parent's) up the parent chain.
    Not its name: a stack or cluster may be called `bootstrap-lab`."""
    seen: set[str] = set()
    while urn and urn not in seen:
        seen.add(urn)
        qualified = urn.split("::")[2] if urn.count("::") >= 3 else ""
        if any(kind in BOOTSTRAP_TYPES for kind in qualified.split("$")):
            return True
        urn = parents.get(urn, "")
    return False


def _refusal(command: str, policy: list[auto.EngineEvent], text: str) -> str:
    violations = _violations(policy)
    if violations:
        return f"{command}: the guard rails (policy/README.md) refuse it: " + "; ".join(violations)
    return keyservice.problem(text) or f"{command} failed: {_errors(text)}"


def up(stack: auto.Stack, say: Callable[[str], None], total: int, replace: tuple[str, ...] = ()) -> auto.UpResult:
    progress = Progress(say, total)
    policy: list[auto.EngineEvent] = []

    def seen(event: auto.EngineEvent) -> None:
        if event.policy_event:
            policy.append(event)
        progress.event(event)

    try:
        result = stack.up(on_event=seen, policy_packs=policy_pack(say), message=run_message("up"), **({"replace": list(replace)} if replace else {}))
    except auto.ConcurrentUpdateError as error:
        raise locks.Locked(locks.refused(stack, error)) from error  # locked after the check: the engine's lock is the guard
    except auto.CommandError as error:
        text = str(error)
        if "pending operations" in text or "interrupted" in text:
            raise Stop(f"an earlier run was interrupted: `python -m tools.recover --stack {stack.name}`, then run again") from error
        raise Stop(_refusal("pulumi up", policy, text)) from error
    say(f"up: {progress.done} changed in {progress.elapsed()}")
    return result


def _errors(text: str, most: int = 5) -> str:
    """The engine's own error lines of a failed command (its text also holds whole inputs, such
    as the installer's script: those are no help to read)."""
    # CommandResult's text: " code: N\n stdout: ...\n stderr: ...", with escaped newlines inside quoted inputs.
    lines = [re.sub(r"^(stdout|stderr): ", "", line.strip()) for line in text.replace("\\n", "\n").splitlines()]
    lines = [line for line in lines if line.startswith("error:")]
    return "; ".join(line[:400] for line in lines[-most:]) or text[-1000:]


def _stream(command: list[str], say: Callable[[str], None], timeout: float, cwd: Path, hidden: tuple[str, ...] = ()) -> bool:
    """Runs `command`, its lines told as they come (every `hidden` text masked), within `timeout`
    seconds: True when it succeeded."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    try:
        for line in process.stdout:
            for text in filter(None, hidden):
                line = line.replace(text, "[secret]")
            say("  " + line.rstrip())
            if time.monotonic() > deadline:
                break
        return process.wait(timeout=max(1, deadline - time.monotonic())) == 0
    except subprocess.TimeoutExpired:
        return False
    finally:  # the deadline, or Ctrl-C: nothing of ours keeps running
        if process.poll() is None:
            process.kill()
            process.wait()


def install(
    name: str, say: Callable[[str], None], go_on: bool = False, bootstrap_timeout: float = 3600, nodes_timeout: float | None = None, install_timeout: float = 3600,
    settle: timedelta = SETTLE, clear_dead: bool = False,
) -> dict:
    began = time.monotonic()
    stack = _stack(name)
    locks.check(stack, say, clear_dead)  # before anything is made (ocp/locks.py)
    config = _config(stack)
    checks.check("install", config)
    binary = config.installer.binary or "openshift-install"
    directory = PROJECT / (config.installer.assets_dir or installer_dir(config, name))
    private_files.check(directory, _directory_key(config))  # before anything is made: where the credentials go
    state_guard.check(stack, name, config, Stop, _errors)  # the state's commands: this program's, or nothing runs
    say(f"1/6 preview of stack {name}")
    total = preview(stack, say, go_on)
    say("2/6 pulumi up")
    up(stack, say, total)
    # What `wait-for` reads, from the state: the installer's directory may be another machine's.
    outputs = {key: value.value for key, value in stack.outputs().items()}
    # A network the program made: its MTU is known only now (a given one's, the preflight read).
    too_small = checks.mtu_problem(outputs)
    if too_small:
        raise Stop(too_small)
    # Now the API's address is known: a name that does not resolve here would burn every wait below.
    unresolved = checks.name_problem(config.cluster_domain, outputs, name, config.platform == "openstack")
    if unresolved:
        raise Stop(unresolved)
    elsewhere = checks.name_elsewhere(config.cluster_domain, outputs)
    if elsewhere:
        say(elsewhere)
    kubeconfig = _write_credentials(directory, outputs, _directory_key(config))
    # `wait-for install-complete` prints the kubeadmin password (it has no flag not to): masked.
    hidden = (outputs["kubeadminPassword"],)
    # nodeCreated: when each server was made, OpenStack's; libvirt's requests go without it in the install's own waits only.
    kube, created, why = Kube(config.installer.oc, kubeconfig), outputs.get("nodeCreated"), None if config.platform == "libvirt" else untimed(config.platform, name)
    if config.bootstrap.enabled:
        say("3/6 waiting for the bootstrap to hand over (openshift-install wait-for bootstrap-complete), approving the masters' certificates beside it")
        nodes: dict = outputs.get("nodes") or {}  # the installer's approve-csr.service is masked (ignition/nodes.py)
        with approving_beside(kube, nodes, {n for n in nodes if role(n) != "bootstrap"}, config.cluster_domain, time.monotonic() + bootstrap_timeout, say, created=created, stack=name, settle=settle, untimed=why, bootstrap=True):
            handed_over = _stream([binary, "wait-for", "bootstrap-complete", "--dir", str(directory)], say, bootstrap_timeout, PROJECT, hidden)
        if not handed_over:
            gather = gather_argv(config, name, outputs.get("bootstrapGather"))  # from the stack file, no shell: the output never runs
            if gather is not None:
                say(gathering(gather))
                _stream(gather, say, 900, PROJECT)
                raise Stop(f"the bootstrap did not complete: the log bundle is in {directory} (log-bundle-*.tar.gz); run again once fixed")
            raise Stop("the bootstrap did not complete")
        state_guard.check(stack, name, config, Stop, _errors)  # the teardown runs the bootstrap's deletes from the state
        say("4/6 removing the bootstrap (ocp:bootstrap.enabled: false)")
        stack.set_config("ocp:bootstrap.enabled", auto.ConfigValue("false"), path=True)
        # Previewed first, for the progress's total (and the same guard as step 1).
        up(stack, say, preview(stack, say, go_on))
    else:
        say("3/6 and 4/6: the bootstrap is gone already")
    outputs = {key: value.value for key, value in stack.outputs().items()}
    nodes = outputs.get("nodes") or {}
    workers = {node for node in nodes if role(node) == "worker"}
    say(f"5/6 approving this stack's nodes' certificates until {len(workers)} workers are Ready")
    waited = nodes_timeout if nodes_timeout is not None else config.workers.ready_timeout * 60  # ocp:workers.readyTimeout (bare metal)
    if not approve_until_ready(kube, nodes, workers, config.cluster_domain, time.monotonic() + waited, say, created=created, stack=name, settle=settle, untimed=why):
        raise Stop("not every worker became Ready: see the pending requests above; run again, or `python -m ocp approve-csrs`")
    say("6/6 waiting for the cluster (openshift-install wait-for install-complete)")
    if not _stream([binary, "wait-for", "install-complete", "--dir", str(directory)], say, install_timeout, PROJECT, hidden):
        raise Stop("the install did not complete in time: run again to keep waiting")
    minutes = (time.monotonic() - began) / 60
    say(f"installed in {minutes:.0f} min")
    say(f"console: {outputs.get('consoleUrl')}")
    say(f"API: {outputs.get('apiUrl')}")
    say(f"kubeconfig: {kubeconfig} (mode 0600)")
    say(f"kubeadmin password: {directory / 'auth' / 'kubeadmin-password'}, or `pulumi stack output --show-secrets kubeadminPassword --stack {name}`")
    return outputs


def approve(name: str, say: Callable[[str], None], timeout: float, named: tuple[str, ...] = (), settle: timedelta = SETTLE) -> bool:
    """Day 2: the new workers' certificates until every worker is Ready (while the bootstrap is there, a `pulumi up`
    without `ocp install`, the masters' too); with `named`, exactly those CSRs, then passes until their nodes are Ready."""
    stack = _stack(name)
    config = _config(stack)
    checks.check("approve-csrs", config)
    outputs = {key: value.value for key, value in stack.outputs().items()}
    nodes = outputs.get("nodes") or {}
    directory = PROJECT / (config.installer.assets_dir or installer_dir(config, name))
    kubeconfig = _write_credentials(directory, outputs, _directory_key(config))
    kube = Kube(config.installer.oc, kubeconfig)
    created = outputs.get("nodeCreated")
    bootstrap = any(role(node) == "bootstrap" for node in nodes)  # then the masters' too, by the workers' rules
    wanted = {node for node in nodes if role(node) == "worker" or (bootstrap and role(node) == "master")}
    if named:
        approved = approve_named(kube, nodes, config.cluster_domain, named, say, created, name)
        if len(approved) < len(set(named)):
            return False
        # A client certificate approved: the passes go on until its node is Ready (its serving request).
        wanted = {verdict.node for verdict in approved if verdict.kind == "client" and verdict.node}
        if not wanted:
            return True
    why = untimed(config.platform, name)
    return approve_until_ready(kube, nodes, wanted, config.cluster_domain, time.monotonic() + timeout, say, created=created, stack=name, settle=settle, untimed=why, bootstrap=bootstrap)


def destroy(name: str, say: Callable[[str], None], confirmed: Callable[[str], bool], clear_dead: bool = False) -> bool:
    """Everything of the stack, the cluster's own cloud resources too (the program's cleanup).
    Protected resources (ocp:protect) stop it until the key is lowered; then their protection is
    lifted with an `up` that changes nothing else (previewed and run with the policy pack), and the
    stack is destroyed: the engine's destroy takes no policy pack, and a deletion gives a pack no
    inputs to judge. False when the user did not confirm."""
    stack = _stack(name)
    locks.check(stack, say, clear_dead)
    with keyservice.decrypting("pulumi stack export", Stop, _errors):  # --show-secrets: the stack's key first
        resources = (deployment := stack.export_stack().deployment or {}).get("resources") or []
    if not resources:
        say(f"stack {name} has nothing to destroy")
        return True
    config = state_guard.config_or_none(lambda: _config(stack))  # a config broken since: the destroy goes on, unchecked
    checks.check("destroy", config)
    state_guard.check(stack, name, config, Stop, _errors, deployment)  # every delete runs from the state
    protected = [r["urn"].rsplit("::", 1)[1] for r in resources if r.get("protect")]
    lowered = (stack.get_all_config().get("ocp:protect") or auto.ConfigValue("true")).value.strip().lower() == "false"
    if protected and not lowered:
        raise Stop(
            f"stack {name} protects {len(protected)} resources ({', '.join(protected[:4])}{', ...' if len(protected) > 4 else ''}): "
            f"a destroy of them is the cluster's end. If that is what you want: `pulumi config set ocp:protect false --stack {name}`, then run again"
        )
    if not confirmed(f"destroy stack {name}: {len(resources)} resources, the cluster with them"):
        say("nothing destroyed")
        return False
    if protected:
        say(f"lifting the protection of {len(protected)} resources (pulumi up, nothing else changes)")
        changing = preview(stack, say, go_on=False)
        up(stack, say, changing)
    progress = Progress(say, len(resources))
    stack.destroy(on_event=progress.event, message=run_message("destroy"))
    say(f"destroyed in {progress.elapsed()}")
    return True


def _write_credentials(directory: Path, outputs: dict, key: str) -> Path:
    """auth/kubeconfig and auth/kubeadmin-password from the stack's outputs, as the installer
    lays them out (its `wait-for install-complete` reads both), only the owner may read them:
    the state has them wherever the installer's directory is not (another machine). The directory
    and auth/ must be the user's alone (ocp/private_files.py; `key`: the setting that names it)."""
    kubeconfig = state_guard.checked_kubeconfig(outputs["kubeconfig"], Stop)  # oc would run its exec or auth-provider
    for name, text in (("kubeadmin-password", outputs["kubeadminPassword"]), ("kubeconfig", kubeconfig)):
        private_files.write(directory / "auth" / name, text, key, top=directory)
    return directory / "auth" / "kubeconfig"


def _directory_key(config: ClusterConfig) -> str:
    return "ocp:installer.assetsDir" if config.installer.assets_dir else "ocp:installer.dir"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")  # one write: step 3's approver says its lines beside the installer's
    sys.stdout.flush()
