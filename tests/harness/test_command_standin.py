"""The stand-in pulumi-resource-command 1.2.1 (harness/command_standin) through the real engine:
the Pulumi CLI and Python language host built here (.toolchain), a tiny Python program using
the pulumi_command 1.2.1 SDK, a file backend, the plugin installed with the CLI's own
`plugin install --file` into a private PULUMI_HOME. What pulumi-command v1.2.1 does, read in
its source (the stand-in's docstring names the files), is what each test asks of it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from harness.command_standin import VERSION, install
from harness.command_standin.values import SECRET_SIG, SIG_KEY, Secret, detailed_diff, object_diff, path_head
from tests.conftest import ROOT
from tools import toolchain

PASSPHRASE = "standin-test-passphrase"
STACK = "test"


def _needs() -> str | None:
    for name in ("pulumi", "pulumi-language-python"):
        if toolchain.binary(name) is None:
            return toolchain.missing(name)
    return None


def needs_engine(test):
    """Runs the real toolchain: marked e2e (pytest.ini), skipped with the reason when it is not built."""
    return pytest.mark.e2e(pytest.mark.skipif(_needs() is not None, reason=str(_needs()))(test))

# Resources from spec.json: each test writes the spec, the engine runs the program.
PROGRAM = '''\
import json

import pulumi
import pulumi_command as command

spec = json.load(open("spec.json"))
explicit = command.Provider("explicit")
made = {}
for name, args in spec.get("commands", {}).items():
    args = dict(args)
    options = pulumi.ResourceOptions(
        additional_secret_outputs=args.pop("secretOutputs", []),
        provider=explicit if args.pop("explicitProvider", False) else None,
    )
    environment = dict(args.pop("environment", {}))
    environment.update({key: pulumi.Output.secret(value) for key, value in args.pop("secretEnvironment", {}).items()})
    source = args.pop("createFrom", None)
    if source:
        args["create"] = made[source].stdout.apply(lambda out, text=args["create"]: text.replace("{stdout}", out))
    made[name] = command.local.Command(name, environment=environment or None, opts=options, **args)
    pulumi.export(f"{name}.stdout", made[name].stdout)
    pulumi.export(f"{name}.stderr", made[name].stderr)
for name, args in spec.get("runs", {}).items():
    pulumi.export(f"{name}.run", command.local.run_output(**args).stdout)
for name, args in spec.get("remote", {}).items():
    command.remote.Command(name, connection=command.remote.ConnectionArgs(host="127.0.0.1"), **args)
'''


@pytest.fixture(scope="module")
def plugin_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("pulumi-home")
    install(home, toolchain.BIN / "pulumi")
    return home


class Project:
    def __init__(self, directory: Path, home: Path):
        self.directory = directory
        self.environment = toolchain.pulumi_env(home, directory.parent / "state", ROOT / "venv")
        self.environment["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE

    def write(self, spec: dict) -> None:
        (self.directory / "spec.json").write_text(json.dumps(spec))

    def pulumi(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(toolchain.BIN / "pulumi"), *args, "--non-interactive"],
            cwd=self.directory,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def ok(self, *args: str) -> str:
        done = self.pulumi(*args)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    def up(self) -> str:
        return self.ok("up", "--yes", "--skip-preview")

    def preview_steps(self) -> dict[str, dict]:
        """URN name -> the step of `pulumi preview --json` for each command resource."""
        done = self.pulumi("preview", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        steps = json.loads(done.stdout)["steps"]
        return {step["urn"].rsplit("::", 1)[1]: step for step in steps if "command:local:Command" in step["urn"]}

    def outputs(self) -> dict:
        return json.loads(self.ok("stack", "output", "--json"))

    def resources(self) -> dict[str, dict]:
        exported = json.loads(self.ok("stack", "export"))
        return {
            resource["urn"].rsplit("::", 1)[1]: resource
            for resource in exported["deployment"].get("resources", [])
            if resource["type"] == "command:local:Command"
        }

    def log(self) -> list[str]:
        path = self.directory / "log"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def project(tmp_path: Path, plugin_home: Path) -> Project:
    directory = tmp_path / "project"
    directory.mkdir()
    (tmp_path / "state").mkdir()
    (directory / "Pulumi.yaml").write_text("name: standin\nruntime:\n  name: python\n")
    (directory / "__main__.py").write_text(PROGRAM)
    made = Project(directory, plugin_home)
    made.write({})
    made.ok("stack", "init", STACK)
    return made


@needs_engine
def test_the_plugin_is_installed_as_command_1_2_1(plugin_home):
    installed = plugin_home / "plugins" / f"resource-command-v{VERSION}" / "pulumi-resource-command"
    assert installed.is_file()
    text = installed.read_text()
    # The CLI copies one file: the copy names this checkout's venv and module by absolute path.
    assert f"'{ROOT}/venv/bin/python' '{ROOT}/harness/command_standin/__main__.py' serve" in text


@needs_engine
def test_preview_runs_nothing_up_runs_create_and_destroy_runs_delete(project):
    project.write(
        {
            "commands": {
                "hello": {
                    "create": "echo hello-$NAME; echo warn >&2; echo create hello >> log",
                    "delete": 'echo "delete hello saw $PULUMI_COMMAND_STDOUT/$PULUMI_COMMAND_STDERR in $PWD" >> log',
                    "environment": {"NAME": "x"},
                },
                # Its create is unknown in the first preview; it has a provider resource of its own.
                "chained": {"create": "echo got-{stdout}", "createFrom": "hello", "explicitProvider": True},
                "silent": {"create": "echo silent-marker", "logging": "none"},
            },
            "runs": {"probe": {"command": "echo run >> log; echo invoked"}},
        }
    )
    project.ok("preview")
    assert project.log() == ["run"]  # the invoke runs in preview; no create does

    output = project.up()
    assert project.log() == ["run", "run", "create hello"]
    outputs = project.outputs()
    assert outputs["hello.stdout"] == "hello-x" and outputs["hello.stderr"] == "warn"  # one trailing newline trimmed
    assert outputs["chained.stdout"] == "got-hello-x"
    assert outputs["probe.run"] == "invoked"
    # Each line of a logged stream is a status message of the step; logging "none" sends none.
    assert re.search(r"hello creating \(\d+s\) hello-x", output), output
    assert not re.search(r"silent creating \(\d+s\) silent-marker", output), output
    resources = project.resources()
    assert re.fullmatch(r"hello[0-9a-f]{8}", resources["hello"]["id"])
    assert resources["hello"]["outputs"]["create"] == resources["hello"]["inputs"]["create"]

    project.up()  # nothing changed: nothing runs but the invoke
    assert project.log() == ["run", "run", "create hello", "run"]

    project.ok("refresh", "--yes")  # Read returns the state as it is
    assert project.resources()["hello"]["outputs"] == resources["hello"]["outputs"]

    project.ok("destroy", "--yes")
    assert project.log()[-1] == f"delete hello saw hello-x/warn in {project.directory}"
    assert project.resources() == {}


@needs_engine
def test_create_change_updates_and_runs_update_with_the_previous_stdout_a_trigger_change_replaces(project):
    spec = {
        "commands": {
            "step": {
                "create": "echo first",
                "update": 'echo "update saw $PULUMI_COMMAND_STDOUT"',
                "delete": 'echo "delete step saw $PULUMI_COMMAND_STDOUT" >> log',
                "triggers": ["one"],
            },
            "quiet": {
                "create": "echo first",
                "update": 'echo "saw [${PULUMI_COMMAND_STDOUT-unset}]"',
                "add_previous_output_in_env": False,
            },
            "plain": {"create": "echo first"},  # no update: create runs again
        }
    }
    project.write(spec)
    project.up()

    for args in spec["commands"].values():
        args["create"] = "echo second"
    project.write(spec)
    steps = project.preview_steps()
    for name in ("step", "quiet", "plain"):
        assert steps[name]["op"] == "update", steps[name]
        assert steps[name]["detailedDiff"] == {"create": {"kind": "update", "inputDiff": False}}
    project.up()
    outputs = project.outputs()
    assert outputs["step.stdout"] == "update saw first"
    assert outputs["quiet.stdout"] == "saw [unset]"
    assert outputs["plain.stdout"] == "second"
    assert project.log() == []  # an update runs no delete

    spec["commands"]["step"]["triggers"] = ["two"]
    spec["commands"]["plain"]["triggers"] = ["new"]
    project.write(spec)
    steps = project.preview_steps()
    assert steps["step"]["op"] == "replace", steps["step"]
    # A changed element: the provider reports an update of triggers[0], the SDK's
    # replace_on_changes=["triggers[*]"] makes the engine replace.
    assert steps["step"]["detailedDiff"]["triggers[0]"]["kind"] == "update-replace"
    # triggers added: the provider itself answers a replace (the schema's replaceOnChanges).
    assert steps["plain"]["op"] == "replace", steps["plain"]
    assert steps["plain"]["detailedDiff"] == {"triggers": {"kind": "add-replace", "inputDiff": False}}
    assert steps.get("quiet", {"op": "same"})["op"] == "same", steps  # the JSON may leave sames out
    project.up()
    # The replacement ran create; the old resource's delete ran with its last stdout.
    assert project.outputs()["step.stdout"] == "second"
    assert project.log() == ["delete step saw update saw first"]


@needs_engine
def test_a_failing_command_fails_the_step_with_its_output(project):
    project.write({"commands": {"bad": {"create": "echo visible-out; echo visible-err >&2; exit 3"}}})
    done = project.pulumi("up", "--yes", "--skip-preview")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert 'error: exit status 3: running "echo visible-out; echo visible-err >&2; exit 3":' in output
    assert "visible-out" in output and "visible-err" in output
    assert "bad" not in project.resources()  # a failed create leaves nothing in the state

    project.write({"commands": {"bad": {"create": "true", "update": "echo broken >&2; exit 1"}}})
    project.up()
    before = project.resources()["bad"]["outputs"]
    project.write({"commands": {"bad": {"create": "true ", "update": "echo broken >&2; exit 1"}}})
    done = project.pulumi("up", "--yes", "--skip-preview")
    assert done.returncode != 0
    assert re.search(r'error: exit status 1: running "echo broken >&2; exit 1":\n\s*broken\n', done.stdout + done.stderr)
    assert project.resources()["bad"]["outputs"] == before  # a failed update keeps the old state


@needs_engine
def test_secret_inputs_stay_secret_and_stdout_is_secret_only_when_asked(project):
    project.write(
        {
            "commands": {
                # pulumi-go-provider v1.3.0: an output is secret only when the input of the same name is.
                "plain": {"create": "echo token=$TOKEN", "secretEnvironment": {"TOKEN": "s3cr3t"}},
                "marked": {"create": "echo token=$TOKEN", "secretEnvironment": {"TOKEN": "s3cr3t"}, "secretOutputs": ["stdout"]},
            }
        }
    )
    project.up()
    outputs = project.outputs()
    assert outputs["plain.stdout"] == "token=s3cr3t"
    assert outputs["marked.stdout"] == "[secret]"
    for resource in project.resources().values():
        for side in ("inputs", "outputs"):
            token = resource[side]["environment"]["TOKEN"]
            assert token[SIG_KEY] == SECRET_SIG and "ciphertext" in token and "s3cr3t" not in json.dumps(token)


@needs_engine
def test_what_the_stand_in_does_not_implement_is_refused_by_name(project):
    project.write({"remote": {"copy": {"create": "true"}}})
    done = project.pulumi("preview")
    assert done.returncode != 0
    assert "command:remote:Command is not supported by the stand-in pulumi-resource-command 1.2.1" in done.stdout + done.stderr

    project.write({"commands": {"globbed": {"create": "true", "asset_paths": ["*.txt"]}}})
    done = project.pulumi("preview")
    assert done.returncode != 0
    assert "assetPaths is not supported by the stand-in" in done.stdout + done.stderr


def test_the_diff_reports_paths_as_the_sdk_writes_them():
    change = object_diff(
        {"triggers": ["a", "b"], "environment": {"A": "1", "a.b": "x"}, "create": "x"},
        {"triggers": ["a", "c", "d"], "environment": {"a.b": "y"}, "update": "u", "create": "x"},
    )
    assert detailed_diff(change) == {
        "triggers[1]": "update",
        "triggers[2]": "add",
        "environment.A": "delete",
        'environment["a.b"]': "update",
        "update": "add",
    }
    # A secret is a leaf: a changed secret list is a change of the property itself.
    assert detailed_diff(object_diff({"triggers": Secret(["a"])}, {"triggers": Secret(["b"])})) == {"triggers": "update"}
    assert [path_head(path) for path in ('environment["a.b"]', "triggers[1]", '["x.y"].z')] == ["environment", "triggers", "x.y"]


def test_the_plugin_stops_once_its_engine_is_gone_as_the_sdks_providers_do(tmp_path):
    """A CLI killed with SIGKILL never stops its plugins: like the SDK's providers (rpcutil.Healthcheck), the
    stand-in asks the engine's health service and stops once nothing answers (an engine without the service
    answers Unimplemented, which counts as alive)."""
    engine = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    port = engine.add_insecure_port("127.0.0.1:0")
    engine.start()
    plugin = subprocess.Popen(
        [str(ROOT / "venv" / "bin" / "python"), "-m", "harness.command_standin", "serve", f"127.0.0.1:{port}"],
        cwd=ROOT, env={**os.environ, "OCP_STANDIN_HEALTHCHECK_SECONDS": "0.5"}, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert plugin.stdout.readline().strip().isdigit()  # its own port, as the engine reads it
        time.sleep(3)  # several checks, each answered Unimplemented
        assert plugin.poll() is None
        engine.stop(0)
        assert plugin.wait(timeout=30) == 0
    finally:
        if plugin.poll() is None:
            plugin.kill()
            plugin.wait()
