"""`python -m ocp status --all` (ocp/status_all.py) through its CLI, on the real engine and the real OpenStack plugin
against the cloud of ports (tests/e2e/neutron.py), a file backend holding three stacks of one project: `clean`
(deployed, untouched), `drifted` (deployed, its port renamed by hand) and `nokey` (its secrets under a passphrase
this run does not have). Each is reported, side by side, the one that cannot be read saying why; the exit code is
the worst told; stderr has one line per stack and stdout the report alone; reading changes no byte of the backend
or the project. Then a fourth stack whose state does not parse, which makes `pulumi stack ls` fail for the whole
backend: the stacks are listed from the backend's files and the three others still reported.

The project here is the test's own (driver.PROJECT pointed at it), so no stack file of this checkout is read."""

from __future__ import annotations

import json
import subprocess

import pytest
from pulumi import automation as auto

from ocp import driver
from ocp.__main__ import main
from tests.conftest import ROOT
from tests.e2e.test_node_ports import _needs
from tests.e2e.test_status import files, project_on_the_cloud_of_ports
from tools import toolchain

pytestmark = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))
PASSPHRASE = "e2e-only-passphrase"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The project, its backend with the three stacks, the cloud; the engine's environment set."""
    work = tmp_path_factory.mktemp("status-all")
    with project_on_the_cloud_of_ports(work, PASSPHRASE) as (project, cloud, _), pytest.MonkeyPatch.context() as patch:
        ports = {name: auto.create_stack(name, work_dir=str(project)).up().outputs["portId"].value for name in ("clean", "drifted")}
        patch.setenv("PULUMI_CONFIG_PASSPHRASE", "a key this run does not have")
        auto.create_stack("nokey", work_dir=str(project))
        patch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
        patch.setattr(driver, "PROJECT", project)
        yield cloud, ports, work


def status_all(capsys, *args: str) -> tuple[int, str, list[str]]:
    code = main(["status", "--all", *args])
    said = capsys.readouterr()
    return code, said.out, said.err.splitlines()


def progress_of(err: list[str]) -> dict[str, str]:
    """The stack -> its progress line (`[i/n XmYYs] stack: verdict (exit n): ...`)."""
    return {line.split("] ", 1)[1].split(":", 1)[0]: line for line in err if line.startswith("[")}


def test_each_stack_is_told_side_by_side_the_worst_decides_and_nothing_changes(fleet, capsys):
    cloud, ports, work = fleet

    def renamed(state):
        state["ports"][ports["drifted"]]["name"] = "renamed by hand"

    cloud.edit(renamed)
    before = files(work / "state", work / "project")
    code, out, err = status_all(capsys, "--json")
    report = json.loads(out)  # stdout: the report alone
    assert code == 1 == report["exitCode"], err
    assert report["schema"] == "ocp-status-all/1" and report["project"] == "nodeports"
    assert report["listing"] == {"by": "pulumi stack ls", "why": None}
    stacks = {entry["stack"]: entry for entry in report["stacks"]}
    assert [entry["stack"] for entry in report["stacks"]] == ["clean", "drifted", "nokey"]
    # clean: no drift (its cluster and quotas cannot be told in a test project without ocp: config: exit 2).
    assert stacks["clean"]["drift"] == {"read": True, "why": None, "changes": []}
    assert stacks["clean"]["lastUpdate"]["result"] == "succeeded" and stacks["clean"]["exitCode"] == 2
    (change,) = stacks["drifted"]["drift"]["changes"]
    assert (change["id"], change["keys"], change["expected"]) == (ports["drifted"], ["name"], False)
    assert (stacks["drifted"]["verdict"], stacks["drifted"]["exitCode"]) == ("drift", 1)
    # nokey: could not be read, and says why; the others were read all the same.
    assert (stacks["nokey"]["verdict"], stacks["nokey"]["exitCode"], stacks["nokey"]["drift"]["read"]) == ("unknown", 2, False)
    assert "incorrect passphrase" in stacks["nokey"]["drift"]["why"], stacks["nokey"]["drift"]
    assert report["counts"] == {"healthy": 0, "drift": 1, "unhealthy": 0, "unknown": 2}
    # stderr: one line per stack as each finished.
    lines = progress_of(err)
    assert set(lines) == {"clean", "drifted", "nokey"} and all(line.startswith(("[1/3 ", "[2/3 ", "[3/3 ")) for line in lines.values()), err
    assert "drifted: drift (exit 1): drift: ocp4-workers-worker-0-port" in lines["drifted"]
    assert "nokey: unknown (exit 2): drift: " in lines["nokey"] and "incorrect passphrase" in lines["nokey"]
    # Read only: not a byte of the backend (state, history, locks) or of the project (its stack files) changed.
    assert files(work / "state", work / "project") == before

    # The drift taken back: nothing says 1, two stacks could not be told: exit 2. The table, one row per stack.
    cloud.edit(lambda state: state["ports"][ports["drifted"]].update(name="ocp4-x7k2p-worker-0"))
    code, out, err = status_all(capsys, "--jobs", "1")
    assert code == 2, out + "\n".join(err)
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:4]}
    assert out.splitlines()[0].split()[:3] == ["STACK", "VERDICT", "EXIT"]
    assert rows["drifted"][1:3] == ["unknown", "2"] and rows["drifted"][7] == "none"  # DRIFT: none
    assert rows["nokey"][1:3] == ["unknown", "2"] and "not read" in " ".join(rows["nokey"])
    assert out.splitlines()[4] == "3 stacks of project nodeports: 0 healthy, 0 drift, 0 unhealthy, 3 could not tell; exit 2"
    assert len(progress_of(err)) == 3


def test_a_stack_whose_state_does_not_parse_hides_none_of_the_others(fleet, capsys):
    cloud, ports, work = fleet
    project = driver.PROJECT
    auto.create_stack("broken", work_dir=str(project))
    broken = work / "state" / ".pulumi" / "stacks" / "nodeports" / "broken.json"
    broken.write_text("{not json")  # a state damaged by hand: `pulumi stack ls` fails for every stack
    try:
        listed = subprocess.run(["pulumi", "stack", "ls", "--non-interactive"], cwd=project, capture_output=True, text=True)
        assert listed.returncode != 0 and "invalid character" in listed.stderr, listed.stdout + listed.stderr
        code, out, err = status_all(capsys, "--json", "--jobs", "2")
        report = json.loads(out)
        assert code == 2 == report["exitCode"], err
        assert report["listing"]["by"] == "backend files" and "`pulumi stack ls` failed" in report["listing"]["why"]
        stacks = {entry["stack"]: entry for entry in report["stacks"]}
        assert list(stacks) == ["broken", "clean", "drifted", "nokey"]
        assert not stacks["broken"]["drift"]["read"] and "failed to load checkpoint" in stacks["broken"]["drift"]["why"]
        assert stacks["clean"]["drift"]["read"] and stacks["drifted"]["drift"] == {"read": True, "why": None, "changes": []}
        assert err[0].startswith("`pulumi stack ls` failed") and len(progress_of(err)) == 4
        # The drift back on the stack beside the broken one: still told, exit 1.
        cloud.edit(lambda state: state["ports"][ports["drifted"]].update(admin_state_up=False))
        code, out, _ = status_all(capsys, "--json")
        assert code == 1 and [entry["verdict"] for entry in json.loads(out)["stacks"]] == ["unknown", "unknown", "drift", "unknown"]
    finally:
        cloud.edit(lambda state: state["ports"][ports["drifted"]].update(admin_state_up=True))
        for path in broken.parent.glob("broken.json*"):
            path.unlink()
        (project / "Pulumi.broken.yaml").unlink(missing_ok=True)


def test_a_backend_that_cannot_be_listed_is_said_on_stderr_and_nothing_on_stdout(tmp_path, monkeypatch, capsys):
    """A project directory without a Pulumi.yaml: no stack can be listed; exit 2, stdout empty."""
    for key, value in toolchain.pulumi_env(tmp_path / "home", tmp_path / "state", ROOT / "venv").items():
        monkeypatch.setenv(key, value)
    (tmp_path / "state").mkdir()
    monkeypatch.setattr(driver, "PROJECT", tmp_path / "state")
    code, out, err = status_all(capsys, "--json")
    assert (code, out) == (2, ""), err
    assert err[0].startswith("could not tell: the project's Pulumi.yaml could not be read"), err
