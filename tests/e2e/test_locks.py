"""Runs of one stack at once (issue 44, item 3), with the real Pulumi CLI, language host and file
backend, and the real install driver (`python -m ocp up`, its check of the stack's lock, then the
engine's): the second run stops before anything and names the first's user, host, pid and start; a
run that passed the check before the first locked is refused by the engine and worded the same; the
first completes; another stack of the project completes beside it; a run killed with SIGKILL leaves
its lock, which the next run names as gone, --clear-dead-lock removes, and the run after converges.

The program is this project's driver and policy pack on a small stand-in program (a project copy
whose __main__.py registers three components and waits, during a preview or an up as the test says,
for a gate file): the lock is the engine's and the backend's, whatever the program makes; a cluster
stack would hold the lock for minutes of cloud calls instead of a gate."""

from __future__ import annotations

import getpass
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.stand_in import GATED, Runs, copy_project, named_gone, needs, since, waiting
from tests.e2e.stand_in import GATED_PARTS as PARTS
from tools import toolchain

pytestmark = pytest.mark.skipif(needs() is not None, reason=str(needs()))


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project copy with the stand-in program, stacks a to d on a file backend of its own, and
    the runs the tests start (any left running is killed at the end)."""
    work = tmp_path_factory.mktemp("locks")
    copy = copy_project(work, GATED)
    (work / "state").mkdir()
    env = {**toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": "locks-only-passphrase"}
    for stack in ("a", "b", "c", "d"):
        done = subprocess.run(["pulumi", "stack", "init", stack, "--non-interactive"], cwd=copy, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    runs = Runs(copy, env)
    yield copy, env, work, runs
    runs.close()


def lock_of(work: Path, stack: str) -> tuple[Path, dict]:
    """The stack's one lock file, where the real CLI writes it, and its fields."""
    found = list((work / "state" / ".pulumi" / "locks" / "organization" / "ocp" / stack).glob("*.json"))
    assert len(found) == 1, found
    assert re.fullmatch(r"[0-9a-f-]{36}\.json", found[0].name), found[0].name
    return found[0], json.loads(found[0].read_text())


def resources(project: Path, env: dict[str, str], stack: str) -> list[str]:
    """The state's resources by name (each once, if the state holds exactly one of each), and no pending operation."""
    done = subprocess.run(["pulumi", "stack", "export", "--stack", stack], cwd=project, env=env, capture_output=True, text=True, check=True)
    deployment = json.loads(done.stdout)["deployment"]
    assert not deployment.get("pending_operations"), deployment["pending_operations"]
    return sorted(resource["urn"].rsplit("::", 1)[1] for resource in deployment["resources"])


def held_by(stack: str, lock: Path, fields: dict) -> list[str]:
    return [
        f"stopped: stack {stack} is locked by a run in progress, so nothing was done here:",
        f"  {fields['username']}@{fields['hostname']}, pid {fields['pid']}, since {since(fields)} UTC (0 min ago): its process runs on this host (lock {lock})",
        "Wait for it to end, then run the same command again.",
    ]


def test_a_second_run_of_a_stack_stops_naming_the_first_which_completes_and_another_stack_runs_beside(project):
    copy, env, work, run = project
    began = time.monotonic()
    # Passes the driver's check before anyone locks, then waits in its preview (which takes no lock).
    late = run("up", "--stack", "a", GATE_PREVIEW=work / "gate-late")
    waiting(work / "gate-late", late)
    first = run("up", "--stack", "a", GATE_UP=work / "gate-first")
    waiting(work / "gate-first", first)
    lock, fields = lock_of(work, "a")
    # The real CLI's lock: who, from where, since when.
    assert sorted(fields) == ["hostname", "pid", "timestamp", "username"]
    assert (fields["username"], fields["hostname"]) == (getpass.getuser(), socket.gethostname())
    assert Path(f"/proc/{fields['pid']}/comm").read_text().strip() == "pulumi"  # the first run's CLI
    before = lock.read_bytes()

    second, beside = run("up", "--stack", "a"), run("up", "--stack", "b")
    code, out, err = second.finish()
    assert code == 1 and out == "", (out, err)
    assert err.splitlines() == held_by("a", lock, fields)
    code, out, err = beside.finish()
    assert code == 0, (out, err)
    assert out.splitlines()[-1].startswith("up: 4 changed in "), out

    # The late run's `pulumi up` meets the engine's lock: refused, in the same words.
    Path(work / "gate-late").touch()
    code, out, err = late.finish()
    assert code == 1 and "2/2 pulumi up" in out, (out, err)
    assert err.splitlines() == held_by("a", lock, fields)

    assert lock.read_bytes() == before and first.process.poll() is None  # nothing of the first run disturbed
    Path(work / "gate-first").touch()
    code, out, err = first.finish()
    assert code == 0, (out, err)
    assert out.splitlines()[-1].startswith("up: 4 changed in "), out
    for stack in ("a", "b"):
        assert resources(copy, env, stack) == sorted(name.format(stack=stack) for name in PARTS)
        assert list(lock.parent.parent.joinpath(stack).glob("*")) == []
    print(f"two runs of a stack, a third beside: {time.monotonic() - began:.1f} s")


def test_a_killed_runs_lock_is_named_as_gone_cleared_by_the_flag_and_the_next_run_converges(project):
    copy, env, work, run = project
    began = time.monotonic()
    killed = run("up", "--stack", "c", GATE_UP=work / "gate-killed")
    waiting(work / "gate-killed", killed)
    lock, fields = lock_of(work, "c")
    os.kill(fields["pid"], signal.SIGKILL)  # the run's pulumi: a crash, no unlock
    code, out, err = killed.finish()
    killed.kill_leftovers()  # its language host and program, still at the gate
    assert code == 1 and "pulumi up failed" in err, (out, err)
    assert lock.exists()

    code, out, err = run("up", "--stack", "c").finish()
    assert code == 1 and out == "", (out, err)
    said = err.splitlines()
    assert said[:2] == named_gone("c", fields, f"{lock}")
    assert f"  rm {lock}   (that lock alone)" in said
    assert "  or run again with --clear-dead-lock (it removes only a lock whose process is gone from this host)" in said

    code, out, err = run("up", "--stack", "c", "--clear-dead-lock").finish()
    assert code == 0, (out, err)
    said = out.splitlines()
    assert said[0] == f"removed the dead lock of {fields['username']}@{fields['hostname']} (pid {fields['pid']} no longer runs here): {lock}"
    assert said[-1].startswith("up: ") and "2/2 pulumi up" in said, out
    assert resources(copy, env, "c") == sorted(name.format(stack="c") for name in PARTS)
    assert list(lock.parent.glob("*")) == []
    print(f"a killed run, its lock named and cleared, the next run: {time.monotonic() - began:.1f} s")


def recover_cancel(copy: Path, env: dict[str, str], stack: str) -> tuple[int, str, str]:
    """`python -m tools.recover --yes --cancel`, as docs/troubleshooting.md has a user run it after a killed run."""
    done = subprocess.run(
        [str(ROOT / "venv" / "bin" / "python"), "-m", "tools.recover", "--stack", stack, "--yes", "--cancel", "--cwd", str(copy)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def test_recover_cancel_removes_a_killed_runs_lock_and_leaves_a_live_runs(project):
    """`pulumi cancel` would delete a live run's lock too; tools.recover --cancel reads the lock first."""
    copy, env, work, run = project
    killed = run("up", "--stack", "d", GATE_UP=work / "gate-dead")
    waiting(work / "gate-dead", killed)
    lock, fields = lock_of(work, "d")
    os.kill(fields["pid"], signal.SIGKILL)
    killed.finish()
    killed.kill_leftovers()
    code, out, err = recover_cancel(copy, env, "d")
    assert code == 0, (out, err)
    assert f"recover: removed the lock of {fields['username']}@{fields['hostname']} (pid {fields['pid']}, no longer running): {lock}" in out.splitlines()
    assert not lock.exists()

    live = run("up", "--stack", "d", GATE_UP=work / "gate-live")
    waiting(work / "gate-live", live)
    lock, fields = lock_of(work, "d")
    before = lock.read_bytes()
    code, out, err = recover_cancel(copy, env, "d")
    assert code == 1, (out, err)
    assert err.splitlines() == [
        "recover: --cancel removes no lock a run may still hold, so nothing was done; stack d is locked:",
        f"  {fields['username']}@{fields['hostname']}, pid {fields['pid']}, since {since(fields)} UTC (0 min ago): its process runs on this host (lock {lock})",
        "Wait for that run to end (or check on its host that it ended), then run this again.",
    ]
    assert lock.read_bytes() == before and live.process.poll() is None
    Path(work / "gate-live").touch()
    code, out, err = live.finish()
    assert code == 0, (out, err)
    assert resources(copy, env, "d") == sorted(name.format(stack="d") for name in PARTS)
