"""The stack's lock as `python -m ocp up|install|destroy` reads it before anything is made (issue 44,
item 3), on a file backend laid out as the real CLI lays it (its lock file's fields and path checked
against the real CLI in tests/e2e/test_locks.py, which also runs two drivers at once): who holds it,
from where and since when; a live holder told from a dead one (its pid gone, or reused, on this host;
another host's lock older than STALE); how to clear a dead one, the --clear-dead-lock flag that removes
only that; a lock taken between the check and the engine's own worded the same; a backend it cannot
read said so."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pulumi import automation as auto

from ocp import driver
from ocp.__main__ import main
from tests.ocp.test_driver import OUTPUTS, FakeStack, step

RULE = "openstack:networking/secGroupRule:SecGroupRule"
HOST = socket.gethostname()


def write_lock(backend: Path, pid: int, since: datetime, host: str = HOST, stack: str = "kvm", layout: int = 1) -> Path:
    """A lock as Pulumi 3.274.1's DIY backend writes it: meta.yaml's layout, the stack's lock directory, `<uuid>.json` and fileblob's `.attrs`."""
    (backend / ".pulumi").mkdir(parents=True, exist_ok=True)
    if layout:
        (backend / ".pulumi" / "meta.yaml").write_text(f"version: {layout}\n")
    directory = backend / ".pulumi" / "locks" / (f"organization/ocp/{stack}" if layout else stack)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "b9d07f42-32f2-4cf7-9046-3bdafdc1b1fd.json"
    stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "789Z"  # Go's RFC 3339 with nanoseconds
    path.write_text(json.dumps({"pid": pid, "username": "alice", "hostname": host, "timestamp": stamp}, separators=(",", ":")))
    (directory / f"{path.name}.attrs").write_text('{"user.content_type":"text/plain; charset=utf-8"}')
    return path


def a_dead_pid() -> int:
    """The pid of a process of this host that ran and is gone."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


@pytest.fixture
def stack(monkeypatch, tmp_path):
    """A stack whose up would create one rule, on a file backend in tmp_path/state."""
    made = FakeStack([step("create", RULE, "r")], OUTPUTS, backend=f"file://{tmp_path / 'state'}")
    monkeypatch.setattr(driver, "_stack", lambda name: made)
    return made


def ran(stack: FakeStack) -> list[str]:
    return [what for what, _ in stack.asked]


@pytest.fixture
def holder():
    """A process of this host that runs on, as a run holding the lock does."""
    running = subprocess.Popen(["sleep", "300"])
    time.sleep(0.05)
    yield running.pid
    running.kill()
    running.wait()


def test_a_live_run_holding_the_lock_stops_up_before_anything_with_who_where_and_since(stack, tmp_path, capsys, holder):
    since = datetime.now(UTC)
    lock = write_lock(tmp_path / "state", holder, since)
    assert main(["up", "--stack", "kvm"]) == 1
    assert ran(stack) == []  # no preview, no up: nothing of the other run is touched
    assert capsys.readouterr().err.splitlines() == [
        "stopped: stack kvm is locked by a run in progress, so nothing was done here:",
        f"  alice@{HOST}, pid {holder}, since {since:%Y-%m-%d %H:%M:%S} UTC (0 min ago): its process runs on this host (lock {lock})",
        "Wait for it to end, then run the same command again.",
    ]
    # The flag removes no live run's lock.
    assert main(["up", "--stack", "kvm", "--clear-dead-lock"]) == 1 and lock.exists() and ran(stack) == []
    assert "(--clear-dead-lock removes only a lock whose process is gone from this host)" in capsys.readouterr().err


def test_a_killed_runs_lock_is_named_with_its_age_and_cleared_as_the_message_says(stack, tmp_path, capsys):
    pid = a_dead_pid()
    lock = write_lock(tmp_path / "state", pid, datetime.now(UTC) - timedelta(hours=2, minutes=7))
    assert main(["up", "--stack", "kvm"]) == 1 and ran(stack) == []
    said = capsys.readouterr().err
    assert said.startswith("stopped: stack kvm is locked by a run that is gone, so nothing was done here:\n"), said
    assert f"  alice@{HOST}, pid {pid}, since " in said
    assert f"UTC (2 h 7 min ago): no such process on this host: the run was killed before it could unlock (lock {lock})" in said
    assert "or run again with --clear-dead-lock (it removes only a lock whose process is gone from this host)" in said
    assert "`pulumi cancel --stack kvm --yes`, which deletes every lock of the stack, a live run's too, and stops nothing" in said
    # What it says to run, run as written: that lock alone goes, and the next run goes on.
    removal = re.search(r"^  (rm .*)   \(that lock alone\)$", said, re.M)
    assert removal, said
    subprocess.run(removal.group(1), shell=True, check=True)
    assert main(["up", "--stack", "kvm"]) == 0 and ran(stack) == ["preview", "up"]


def test_clear_dead_lock_removes_only_a_lock_whose_process_is_gone_from_this_host(stack, tmp_path, capsys):
    pid = a_dead_pid()
    lock = write_lock(tmp_path / "state", pid, datetime.now(UTC) - timedelta(minutes=1))
    assert main(["up", "--stack", "kvm", "--clear-dead-lock"]) == 0 and ran(stack) == ["preview", "up"]
    assert capsys.readouterr().out.splitlines()[0] == f"removed the dead lock of alice@{HOST} (pid {pid} no longer runs here): {lock}"
    assert list(lock.parent.iterdir()) == []  # its .attrs too


def test_a_pid_now_another_process_started_after_the_lock_is_no_holder(stack, tmp_path, capsys):
    """The pid exists (this test's own) but its process began after the lock was written: reused, so the run is gone."""
    write_lock(tmp_path / "state", os.getpid(), datetime(2020, 1, 1, tzinfo=UTC))
    assert main(["install", "--stack", "kvm"]) == 1 and ran(stack) == []
    assert "no such process on this host: the run was killed before it could unlock" in capsys.readouterr().err


def test_another_hosts_lock_stops_the_run_and_only_an_old_one_is_called_likely_dead(stack, tmp_path, capsys):
    lock = write_lock(tmp_path / "state", 4242, datetime.now(UTC) - timedelta(minutes=20), host="ci-runner-7")
    assert main(["destroy", "--stack", "kvm", "--yes", "--clear-dead-lock"]) == 1 and lock.exists()
    said = capsys.readouterr().err
    assert said.startswith("stopped: stack kvm is locked by a run in progress"), said
    assert "alice@ci-runner-7, pid 4242, since " in said and "(20 min ago): on another host, which this machine cannot ask" in said
    write_lock(tmp_path / "state", 4242, datetime.now(UTC) - timedelta(hours=7), host="ci-runner-7")
    assert main(["up", "--stack", "kvm", "--clear-dead-lock"]) == 1 and lock.exists() and ran(stack) == []
    said = capsys.readouterr().err
    assert said.startswith("stopped: stack kvm is locked by a run that is most likely gone"), said
    assert "(7 h 0 min ago): on another host, and older than any run takes (6 h): most likely left by a killed run" in said
    assert "once you know no run of this stack is alive anywhere (on ci-runner-7: `ps -p 4242`, or its CI job ended):" in said
    assert f"  rm {lock}   (that lock alone)" in said and "--clear-dead-lock (" not in said


def test_a_lock_taken_after_the_check_is_refused_by_the_engine_and_worded_the_same(stack, tmp_path, capsys):
    """The check read no lock; another run locked before this one's `pulumi up`: the engine refuses, the driver names the holder."""
    state = tmp_path / "state"
    since = datetime.now(UTC)
    previewed = stack.preview
    stack.preview = lambda on_event, **options: (previewed(on_event, **options), write_lock(state, os.getpid(), since))
    engine = "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`."
    stack.up_error = auto.ConcurrentUpdateError(auto.CommandResult(stdout="", stderr=engine, code=255))
    assert main(["up", "--stack", "kvm"]) == 1 and ran(stack) == ["preview", "up"]
    assert capsys.readouterr().err.splitlines()[:2] == [
        "stopped: stack kvm is locked by a run in progress, so nothing was done here:",
        f"  alice@{HOST}, pid {os.getpid()}, since {since:%Y-%m-%d %H:%M:%S} UTC (0 min ago): its process runs on this host (lock {state}/.pulumi/locks/organization/ocp/kvm/b9d07f42-32f2-4cf7-9046-3bdafdc1b1fd.json)",
    ]


def test_a_backend_of_the_old_layout_keeps_its_locks_by_stack_name(stack, tmp_path, capsys):
    write_lock(tmp_path / "state", os.getpid(), datetime.now(UTC), layout=0)
    assert main(["up", "--stack", "kvm"]) == 1 and ran(stack) == []
    assert "/.pulumi/locks/kvm/b9d07f42-32f2-4cf7-9046-3bdafdc1b1fd.json)" in capsys.readouterr().err


def test_a_backend_the_driver_cannot_read_is_said_and_the_engines_lock_guards_alone(monkeypatch, capsys):
    stack = FakeStack([step("create", RULE, "r")], OUTPUTS, backend="s3://team-state?endpoint=https://swift.example.com&region=RegionOne")
    monkeypatch.setattr(driver, "_stack", lambda name: stack)
    assert main(["up", "--stack", "kvm"]) == 0 and ran(stack) == ["preview", "up"]
    assert capsys.readouterr().out.splitlines()[0] == (
        "the stack's lock is not read before the run: the driver reads the locks of file:// backends only, this stack's is s3:// "
        "(s3:// comes with the state in the cloud's object store); the engine's own lock still refuses a second run"
    )


def test_a_lock_file_that_does_not_read_as_one_still_stops_the_run(stack, tmp_path, capsys):
    lock = write_lock(tmp_path / "state", 1, datetime.now(UTC))
    lock.write_text("{")
    assert main(["up", "--stack", "kvm"]) == 1 and ran(stack) == []
    assert f"  a lock that does not read as one (being written, or damaged): {lock}" in capsys.readouterr().err
