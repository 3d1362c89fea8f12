"""The stack's lock as `python -m ocp up|install|destroy` reads it before anything is made (issue 44,
item 3), on a file backend laid out as the real CLI lays it (its lock file's fields and path checked
against the real CLI in tests/e2e/test_locks.py, which also runs two drivers at once): who holds it,
from where and since when; a live holder told from a dead one (its pid gone, or reused, on this host;
another host's lock older than STALE); how to clear a dead one, the --clear-dead-lock flag that removes
only that; a lock taken between the check and the engine's own worded the same; a backend it cannot
read said so. s3:// URLs read as Pulumi reads them (its legacy parameters too), and a store refusing the
credential stopped in words naming the variables (the real Swift: tests/localcloud/test_swift_state.py)."""

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

from ocp import driver, locks
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
    stack = FakeStack([step("create", RULE, "r")], OUTPUTS, backend="gs://team-state/clusters")
    monkeypatch.setattr(driver, "_stack", lambda name: stack)
    assert main(["up", "--stack", "kvm"]) == 0 and ran(stack) == ["preview", "up"]
    assert capsys.readouterr().out.splitlines()[0] == (
        "the stack's lock is not read before the run: the driver reads the locks of file:// and s3:// backends, this stack's is gs://; "
        "the engine's own lock still refuses a second run"
    )


def test_an_s3_store_that_does_not_answer_the_driver_is_said_and_the_engines_lock_guards_alone(monkeypatch, capsys):
    # Nothing listens on port 9 of loopback: Pulumi would fail there too, but the driver's read must not stop the run itself.
    stack = FakeStack([step("create", RULE, "r")], OUTPUTS, backend="s3://team-state?endpoint=http://127.0.0.1:9&region=RegionOne&use_path_style=true")
    monkeypatch.setattr(driver, "_stack", lambda name: stack)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "b")
    assert main(["up", "--stack", "kvm"]) == 0 and ran(stack) == ["preview", "up"]
    said = capsys.readouterr().out.splitlines()[0]
    assert said.startswith("the stack's lock is not read before the run: its store did not answer the driver (Could not connect to the endpoint URL"), said


def s3(url: str) -> locks.S3Store:
    return locks.S3Store.at(url, Path("/nowhere"))


def options(store: locks.S3Store) -> dict:
    return dict(store.options)


def test_an_s3_url_is_read_as_pulumi_reads_it():
    store = s3("s3://team-state?endpoint=http://127.0.0.1:8080&region=RegionOne&use_path_style=true")
    assert (store.bucket, store.prefix, store.endpoint, store.region, store.path_style) == ("team-state", "", "http://127.0.0.1:8080", "RegionOne", True)
    # Pulumi's default with an endpoint of its own (a store that is not AWS): checksums only where S3 requires them.
    assert options(store) == {"s3": {"addressing_style": "path"}, "request_checksum_calculation": "when_required"}
    assert store.where(".pulumi/locks/organization/ocp/kvm/u.json") == "s3://team-state/.pulumi/locks/organization/ocp/kvm/u.json"
    # A prefix: Pulumi keeps .pulumi/ under it.
    store = s3("s3://team-state/clusters/prod/?endpoint=https://swift.example.com&region=regionTwo&profile=team")
    assert (store.bucket, store.prefix, store.profile, store.path_style) == ("team-state", "clusters/prod/", "team", False)
    assert options(store)["s3"] == {"addressing_style": "virtual"}
    assert store.where(".pulumi/meta.yaml") == "s3://team-state/clusters/prod/.pulumi/meta.yaml"
    assert store.removal(".pulumi/locks/organization/ocp/kvm/u.json") == "openstack object delete team-state clusters/prod/.pulumi/locks/organization/ocp/kvm/u.json"
    # AWS itself: no endpoint, the SDK's own defaults.
    store = s3("s3://team-state?region=eu-west-1")
    assert (store.endpoint, options(store)) == (None, {"s3": {"addressing_style": "virtual"}})


def test_an_s3_urls_legacy_and_other_parameters_are_read_as_pulumi_translates_them(monkeypatch):
    # The v1 SDK's names: disableSSL picks the scheme of a bare endpoint, s3ForcePathStyle is use_path_style.
    store = s3("s3://b?endpoint=minio.example:9000&disableSSL=true&s3ForcePathStyle=true")
    assert (store.endpoint, store.path_style) == ("http://minio.example:9000", True)
    assert s3("s3://b?endpoint=minio.example:9000").endpoint == "https://minio.example:9000"
    assert s3("s3://b?endpoint=https://minio.example:9000&disableSSL=true").endpoint == "https://minio.example:9000"  # a scheme given wins
    assert s3("s3://b?endpoint=https://minio.example&disable_https=true").endpoint == "http://minio.example"
    store = s3("s3://b?endpoint=https://s.example&request_checksum_calculation=when_supported&response_checksum_validation=when_required&fips=true&dualstack=true")
    assert options(store) == {
        "s3": {"addressing_style": "virtual", "use_dualstack_endpoint": True},
        "request_checksum_calculation": "when_supported", "response_checksum_validation": "when_required", "use_fips_endpoint": True,
    }
    # Set in the environment, it is the SDK's to read (Pulumi adds no default then).
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    assert "request_checksum_calculation" not in options(s3("s3://b?endpoint=https://s.example"))
    # Parameters that change only writes or rates are accepted and change nothing here.
    assert s3("s3://b?region=r&ssetype=AES256&kmskeyid=k&awssdk=v2&rate_limiter_capacity=5&hostname_immutable=true").region == "r"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("s3://b?endpoint=https://s.example&usePathStyle=true", "unknown parameter usePathStyle in s3://b?endpoint=https://s.example&usePathStyle=true"),
        ("s3://b?use_path_style=yes", "use_path_style=yes is not a boolean"),
        ("s3://b?role=arn:aws:iam::1:role/r", "the URL's role= (an assumed IAM role) is not read by the driver"),
    ],
)
def test_an_s3_url_the_driver_cannot_follow_is_said(url, why):
    with pytest.raises(locks.Unreadable, match=re.escape(why)):
        s3(url)


# What Pulumi 3.274.1 prints when Swift's s3api refuses the secret (the local cloud, a wrong AWS_SECRET_ACCESS_KEY), and when the AWS chain has none.
REFUSED = (
    'error: read ".pulumi/meta.yaml": blob (key ".pulumi/meta.yaml") (code=Unknown): operation error S3: GetObject, https response error '
    "StatusCode: 403, RequestID: tx73a1, HostID: tx73a1, api error SignatureDoesNotMatch: The request signature we calculated does not match "
    "the signature you provided. Check your key and signing method."
)
NONE = (
    'error: read ".pulumi/meta.yaml": blob (key ".pulumi/meta.yaml") (code=Unknown): operation error S3: GetObject, get identity: get credentials: '
    "failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, access disabled to EC2 IMDS via client option, "
    'or "AWS_EC2_METADATA_DISABLED" environment variable'
)


@pytest.mark.parametrize(("stderr", "said"), [(REFUSED, "refused the credential (SignatureDoesNotMatch)"), (NONE, "was given no credential")])
def test_a_store_that_refuses_the_credential_stops_the_run_naming_the_variables(monkeypatch, capsys, stderr, said):
    def select_stack(**_):
        raise auto.CommandError(auto.CommandResult(stdout="", stderr=stderr, code=255))

    monkeypatch.setattr(driver.auto, "select_stack", select_stack)
    monkeypatch.setattr(driver.checks, "pulumi_problems", lambda: [])
    assert main(["install", "--stack", "kvm"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"stopped: stack kvm: its state store (the s3:// backend) {said}, so nothing was done here. Set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY to an EC2 credential of the project that holds the bucket (`openstack ec2 credentials list` shows yours; "
        "`openstack ec2 credentials create` makes one), and AWS_EC2_METADATA_DISABLED=true off AWS; then run the same command again."
    ]


def test_another_failure_to_select_the_stack_is_not_called_a_credential(monkeypatch):
    def select_stack(**_):
        raise auto.CommandError(auto.CommandResult(stdout="", stderr="error: no stack named 'kvm' found", code=255))

    monkeypatch.setattr(driver.auto, "select_stack", select_stack)
    monkeypatch.setattr(driver.checks, "pulumi_problems", lambda: [])
    with pytest.raises(auto.CommandError, match="no stack named"):
        main(["up", "--stack", "kvm"])


def test_a_lock_file_that_does_not_read_as_one_still_stops_the_run(stack, tmp_path, capsys):
    lock = write_lock(tmp_path / "state", 1, datetime.now(UTC))
    lock.write_text("{")
    assert main(["up", "--stack", "kvm"]) == 1 and ran(stack) == []
    assert f"  a lock that does not read as one (being written, or damaged): {lock}" in capsys.readouterr().err


# Lock files no Pulumi wrote: whoever can write the backend's store can leave any bytes there.
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "content",
    [
        {"pid": 2**64, "username": "alice", "hostname": HOST, "timestamp": "2026-11-29T10:00:00Z"},
        {"pid": 0, "username": "alice", "hostname": HOST, "timestamp": "2026-11-29T10:00:00Z"},  # would signal the process group
        {"pid": -1, "username": "alice", "hostname": HOST, "timestamp": "2026-11-29T10:00:00Z"},  # would signal every process
        {"pid": True, "username": "alice", "hostname": HOST, "timestamp": "2026-11-29T10:00:00Z"},
        {"pid": "1", "username": "alice", "hostname": HOST, "timestamp": "2026-11-29T10:00:00Z"},
        {"pid": 4242, "username": {"name": "alice"}, "hostname": HOST, "timestamp": "2026-11-29T10:00:00Z"},
        {"pid": 4242, "username": "alice", "hostname": HOST, "timestamp": "9999-12-31T23:59:59-01:00"},
        {"pid": 4242, "username": "alice", "hostname": HOST, "timestamp": 1},
        [4242],
        DEEP,
    ],
    ids=["pid 2**64", "pid 0", "pid -1", "pid true", "pid a string", "user an object", "a time past year 9999", "a time a number", "a list", "nested 100000 deep"],
)
def test_a_lock_file_of_any_other_shape_reads_as_no_lock_and_stops_the_run_in_words(stack, tmp_path, capsys, content):
    lock = write_lock(tmp_path / "state", 1, datetime.now(UTC))
    lock.write_text(content if isinstance(content, str) else json.dumps(content))
    assert main(["up", "--stack", "kvm", "--clear-dead-lock"]) == 1 and ran(stack) == [] and lock.exists()
    assert capsys.readouterr().err.splitlines() == [
        "stopped: stack kvm is locked by a run in progress, so nothing was done here:",
        f"  a lock that does not read as one (being written, or damaged): {lock}",
        "Wait for it to end, then run the same command again (--clear-dead-lock removes only a lock whose process is gone from this host).",
    ]


def test_a_backend_whose_meta_yaml_is_not_pulumis_is_said_and_the_engines_lock_guards_alone(stack, tmp_path, capsys):
    write_lock(tmp_path / "state", a_dead_pid(), datetime.now(UTC))
    (tmp_path / "state" / ".pulumi" / "meta.yaml").write_text("- version\n- 1\n")
    assert main(["up", "--stack", "kvm"]) == 0 and ran(stack) == ["preview", "up"]
    assert capsys.readouterr().out.splitlines()[0] == (
        "the stack's lock is not read before the run: its store did not answer the driver (.pulumi/meta.yaml is not Pulumi's (AttributeError)); "
        "the engine's own lock still refuses a second run"
    )


def test_what_a_lock_names_is_printed_with_its_control_characters_escaped(stack, tmp_path, capsys):
    """The user and host are whatever the lock's writer put there: a terminal's escape sequences are shown, not run."""
    lock = write_lock(tmp_path / "state", 4242, datetime.now(UTC) - timedelta(hours=7), host="ci\x1b]0;owned\x07")
    content = json.loads(lock.read_text())
    lock.write_text(json.dumps({**content, "username": "alice\x1b[2J\r\nstopped: nothing"}))
    assert main(["up", "--stack", "kvm"]) == 1 and ran(stack) == []
    said = capsys.readouterr().err
    assert not [c for c in said if not c.isprintable() and c != "\n"], repr(said)
    assert "  alice\\x1b[2J\\r\\nstopped: nothing@ci\\x1b]0;owned\\x07, pid 4242, since " in said
    assert "(on ci\\x1b]0;owned\\x07: `ps -p 4242`, or its CI job ended)" in said


def test_a_live_run_is_no_dead_one_after_the_clock_stepped_forward(stack, tmp_path, capsys, holder):
    """Its process seems to have started 3 h after its lock was written: the wall clock was stepped forward in between
    (an NTP sync on a VM booted behind). It runs, so --clear-dead-lock leaves its lock and the run stops."""
    lock = write_lock(tmp_path / "state", holder, datetime.now(UTC) - timedelta(hours=3))
    assert main(["up", "--stack", "kvm", "--clear-dead-lock"]) == 1 and lock.exists() and ran(stack) == []
    said = capsys.readouterr().err
    assert f"  alice@{HOST}, pid {holder}, since " in said and "(3 h 0 min ago): its process runs on this host" in said
