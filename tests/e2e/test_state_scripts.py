"""A state whose commands were changed in the backend stops the driver before anything runs (issue 49, item 4),
with the real Pulumi CLI, language host, file backend and the command plugin's stand-in (the real engine runs a
command's `delete` from the state's outputs): two workers' drains, made by `python -m ocp up` with this program's
own drain script, then the state file edited as a writer of the bucket would (one drain's `delete`, the other's
environment given BASH_ENV). `python -m ocp up --yes` of an edit that removes both workers, and `python -m ocp destroy
--yes`, each stop naming both resources and the inputs, and neither changed script runs; the state file put back from
the copy taken before (as a bucket's version is restored), `destroy` runs and removes them.

The program is a stand-in (a project copy whose __main__.py makes a NodePool component and its drain commands as
components/drain.py makes them, from cluster/drain.py's script): the check reads the state's commands, whatever else
the program makes."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.command_standin import install as install_command_standin
from tests.conftest import ROOT
from tests.e2e.stand_in import Runs, copy_project, needs
from tools import toolchain

pytestmark = pytest.mark.skipif(needs() is not None, reason=str(needs()))

DRAINS = '''
import os, pulumi, pulumi_command as command
from cluster.drain import drain_script

class NodePool(pulumi.ComponentResource):
    def __init__(self, name, count):
        super().__init__("ocp:openstack:NodePool", name, {})
        runner = command.Provider("command", opts=pulumi.ResourceOptions(parent=self))
        for index in range(count):
            command.local.Command(
                f"{name}-worker-{index}-drain", create="true", delete=drain_script(), interpreter=["/bin/bash", "-c"],
                environment={"NODE": f"t-worker-{index}", "OC": "oc", "KUBECONFIG_DATA": "apiVersion: v1\\n"},
                logging=command.local.Logging.STDOUT_AND_STDERR, opts=pulumi.ResourceOptions(parent=self, provider=runner),
            )
        self.register_outputs({})

NodePool("t-workers", int(os.environ.get("WORKERS", "2")))
'''
STACK = "t"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    work = tmp_path_factory.mktemp("state-scripts")
    copy = copy_project(work, DRAINS)
    (work / "state").mkdir()
    env = {**toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": "state-scripts-only-passphrase"}
    install_command_standin(work / "home", env=env)
    done = subprocess.run(["pulumi", "stack", "init", STACK, "--non-interactive"], cwd=copy, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    runs = Runs(copy, env)
    yield copy, env, work, runs
    runs.close()


def drains(project: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run(["pulumi", "stack", "export", "--stack", STACK], cwd=project, env=env, capture_output=True, text=True, check=True)
    return sorted(r["urn"].rsplit("::", 1)[1] for r in json.loads(done.stdout)["deployment"].get("resources") or [] if r["type"] == "command:local:Command")


def test_a_state_with_changed_commands_stops_up_and_destroy_and_nothing_of_it_runs(project):
    copy, env, work, run = project
    began = time.monotonic()
    code, out, err = run("up", "--stack", STACK).finish()
    assert code == 0, (out, err)
    assert drains(copy, env) == ["t-workers-worker-0-drain", "t-workers-worker-1-drain"]

    # The state file as the backend keeps it, edited as a writer of the bucket would; the copy is the version before.
    state_file = work / "state" / ".pulumi" / "stacks" / "ocp" / f"{STACK}.json"
    kept = work / "kept.json"
    shutil.copy(state_file, kept)
    deleted, sourced = work / "owned-by-delete", work / "owned-by-bash-env"
    (work / "bash-env.sh").write_text(f"touch {sourced}\n")
    checkpoint = json.loads(state_file.read_text())
    for resource in checkpoint["checkpoint"]["latest"]["resources"]:
        for part in ("inputs", "outputs"):
            if resource["urn"].endswith("::t-workers-worker-0-drain"):
                resource[part]["delete"] = f"touch {deleted}"
            elif resource["urn"].endswith("::t-workers-worker-1-drain"):
                resource[part]["environment"]["BASH_ENV"] = str(work / "bash-env.sh")
    state_file.write_text(json.dumps(checkpoint))

    named = [
        "  t-workers-worker-0-drain: delete is not this program's script for the drain of a worker (nor an earlier release's)",
        "  t-workers-worker-1-drain: environment.BASH_ENV is no variable this program sets for the drain of a worker",
    ]
    # An edit that removes both workers (their drains' deletes would run), and the destroy: --yes skips nothing.
    for args, extra in ((("up", "--yes"), {"WORKERS": "0"}), (("destroy", "--yes"), {})):
        code, out, err = run(*args, "--stack", STACK, **extra).finish()
        said = err.splitlines()
        assert code == 1 and said[0].startswith(f"stopped: the state of stack {STACK} holds commands this program would not run"), (args, out, err)
        assert said[1:3] == named, err
        assert "restore its last good version from the bucket's object versioning" in said[3]
        assert not deleted.exists() and not sourced.exists(), args
    assert drains(copy, env) == ["t-workers-worker-0-drain", "t-workers-worker-1-drain"]

    # The version before put back: the destroy runs this program's drains, and nothing of the edit.
    shutil.copy(kept, state_file)
    code, out, err = run("destroy", "--yes", "--stack", STACK).finish()
    assert code == 0, (out, err)
    assert drains(copy, env) == [] and not deleted.exists() and not sourced.exists()
    print(f"made, edited, refused twice, restored and destroyed: {time.monotonic() - began:.1f} s")
