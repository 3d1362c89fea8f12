"""Pulumi state in the local cloud's Swift through s3api (issue 44, items 1 and 3), with the real Pulumi CLI and
language host, the real Swift (proxy with s3api and s3token against the cloud's Keystone, one replica) and the real
install driver: `pulumi login` to the s3:// URL with the project's EC2 credential, runs of a small stand-in program
(the e2e lock tests' kind: three components, a gate to hold a run) whose state objects are read back through
Swift's own API, not s3api; a held lock named by `python -m ocp` with user, host, pid and age; a killed run's lock
named as gone and cleared as the message says (Swift's API) and with --clear-dead-lock, which leaves a live one; a
wrong EC2 secret stopped, in words naming the variables, before anything is made.

The URL has a prefix of the tests' own in the project's state bucket (`tidy` empties the bucket): the driver reads
the lock under it as Pulumi writes it there."""

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

from harness.localcloud.layout import STATE_BUCKET
from tests.conftest import ROOT
from tests.e2e.stand_in import GATED, Run, Runs, copy_project, named_gone, needs, since, waiting
from tests.e2e.stand_in import GATED_PARTS as PARTS
from tests.localcloud.conftest import sdk, state_url
from tools import toolchain

PREFIX = "tests/swift-state"


pytestmark = pytest.mark.skipif(needs() is not None, reason=str(needs()))


@pytest.fixture(scope="module")
def project(cloud, cloud_env, tmp_path_factory):
    """The project copy logged in to the state bucket (its prefix), stacks a to c made there, and a way to start runs."""
    work = tmp_path_factory.mktemp("swift-state")
    copy = copy_project(work, GATED)
    url = state_url(cloud_env, PREFIX)
    env = {**cloud_env, **toolchain.pulumi_env(work / "home", work / "unused", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": "swift-state-only"}
    env = {key: value for key, value in env.items() if key != "PULUMI_BACKEND_URL"}  # the login's backend, as a user has it
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED", "OS_CLIENT_CONFIG_FILE", "OS_CLOUD"):
        env[key] = cloud_env[key]
    began = time.monotonic()
    login = subprocess.run(["pulumi", "login", url], cwd=copy, env=env, capture_output=True, text=True)
    assert login.returncode == 0, login.stdout + login.stderr
    assert login.stdout.strip().endswith(f"({url})"), login.stdout
    for stack in ("a", "b", "c"):
        done = subprocess.run(["pulumi", "stack", "init", stack, "--non-interactive"], cwd=copy, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"Created stack '{stack}'\n", done.stderr  # response_checksum_validation: no SDK warning on each command
    print(f"login and three stacks in Swift: {time.monotonic() - began:.1f} s")
    runs = Runs(copy, env)

    def run(*args: str, gate: Path | None = None) -> Run:
        return runs(*args, **({"GATE_UP": gate} if gate else {}))

    yield copy, env, work, run
    runs.close()


def swift_objects(cloud, prefix: str) -> dict[str, str]:
    """The bucket's objects under `prefix` through Swift's own API (the tenant's token, not s3api): name -> etag."""
    return sdk(cloud, "result = {o.name: o.etag for o in tenant.object_store.objects(bucket, prefix=prefix)}", bucket=STATE_BUCKET, prefix=prefix)


def swift_read(cloud, name: str) -> str:
    return sdk(cloud, "result = tenant.object_store.download_object(name, container=bucket).decode()", bucket=STATE_BUCKET, name=name)


def lock_of(cloud, stack: str) -> tuple[str, dict]:
    """The stack's one lock object, where the real CLI writes it in Swift, and its fields."""
    found = list(swift_objects(cloud, f"{PREFIX}/.pulumi/locks/organization/ocp/{stack}/"))
    assert len(found) == 1, found
    assert re.fullmatch(r"[0-9a-f-]{36}\.json", found[0].rsplit("/", 1)[1]), found
    return found[0], json.loads(swift_read(cloud, found[0]))


def state_resources(cloud, stack: str) -> list[str]:
    """The stack's resources by name, from its state object as Swift serves it; no pending operation."""
    deployment = json.loads(swift_read(cloud, f"{PREFIX}/.pulumi/stacks/ocp/{stack}.json"))["checkpoint"]["latest"]
    assert not deployment.get("pending_operations"), deployment["pending_operations"]
    return sorted(resource["urn"].rsplit("::", 1)[1] for resource in deployment["resources"])


def test_a_run_keeps_its_state_in_swift_where_swifts_own_api_reads_it(cloud, project):
    copy, env, work, run = project
    began = time.monotonic()
    code, out, err = run("up", "--stack", "a").finish()
    assert code == 0, (out, err)
    assert out.splitlines()[-1].startswith("up: 4 changed in "), out
    print(f"an up with its state in Swift: {time.monotonic() - began:.1f} s")
    names = swift_objects(cloud, f"{PREFIX}/")
    assert f"{PREFIX}/.pulumi/meta.yaml" in names and f"{PREFIX}/.pulumi/stacks/ocp/a.json" in names, sorted(names)
    assert any(name.startswith(f"{PREFIX}/.pulumi/history/ocp/a/") for name in names), sorted(names)
    assert state_resources(cloud, "a") == sorted(name.format(stack="a") for name in PARTS)
    assert not any("/.pulumi/locks/" in name for name in names), sorted(names)  # unlocked when done


def test_a_held_lock_in_swift_is_named_with_user_host_pid_and_age_and_the_flag_leaves_it(cloud, project):
    copy, env, work, run = project
    first = run("up", "--stack", "b", gate=work / "gate-b")
    waiting(work / "gate-b", first)
    key, fields = lock_of(cloud, "b")
    assert sorted(fields) == ["hostname", "pid", "timestamp", "username"]
    assert (fields["username"], fields["hostname"]) == (getpass.getuser(), socket.gethostname())
    assert Path(f"/proc/{fields['pid']}/comm").read_text().strip() == "pulumi"
    before = swift_objects(cloud, f"{PREFIX}/")
    for flags in ((), ("--clear-dead-lock",)):
        code, out, err = run("up", "--stack", "b", *flags).finish()
        assert code == 1 and out == "", (out, err)
        assert err.splitlines() == [
            "stopped: stack b is locked by a run in progress, so nothing was done here:",
            f"  {fields['username']}@{fields['hostname']}, pid {fields['pid']}, since {since(fields)} UTC (0 min ago): "
            f"its process runs on this host (lock s3://{STATE_BUCKET}/{key})",
            "Wait for it to end, then run the same command again"
            + (" (--clear-dead-lock removes only a lock whose process is gone from this host)." if flags else "."),
        ]
    assert swift_objects(cloud, f"{PREFIX}/") == before and first.process.poll() is None  # nothing of the first run disturbed
    Path(work / "gate-b").touch()
    code, out, err = first.finish()
    assert code == 0, (out, err)
    assert state_resources(cloud, "b") == sorted(name.format(stack="b") for name in PARTS)
    assert swift_objects(cloud, f"{PREFIX}/.pulumi/locks/") == {}


def killed_run(cloud, work: Path, run, gate: str) -> tuple[str, dict]:
    """An up of stack c killed (its pulumi SIGKILLed, as in a crash) while it holds the lock: the lock stays in Swift."""
    killed = run("up", "--stack", "c", gate=work / gate)
    waiting(work / gate, killed)
    key, fields = lock_of(cloud, "c")
    os.kill(fields["pid"], signal.SIGKILL)
    code, out, err = killed.finish()
    killed.kill_leftovers()
    assert code == 1 and "pulumi up failed" in err, (out, err)
    assert key in swift_objects(cloud, f"{PREFIX}/.pulumi/locks/")
    return key, fields


def test_a_killed_runs_lock_in_swift_is_named_as_gone_and_cleared_as_said_and_by_the_flag(cloud, cloud_env, project):
    copy, env, work, run = project
    key, fields = killed_run(cloud, work, run, "gate-c1")
    code, out, err = run("up", "--stack", "c").finish()
    assert code == 1 and out == "", (out, err)
    said = err.splitlines()
    assert said[:2] == named_gone("c", fields, f"s3://{STATE_BUCKET}/{key}")
    removal = f"  openstack object delete {STATE_BUCKET} {key}   (that lock alone)"
    assert removal in said, said
    # Run as written, as the project's tenant (the `openstack` CLI of `localcloud env`): that lock alone goes.
    subprocess.run(removal.removesuffix("   (that lock alone)"), shell=True, env=cloud_env, check=True, capture_output=True)
    assert swift_objects(cloud, f"{PREFIX}/.pulumi/locks/") == {}

    key, fields = killed_run(cloud, work, run, "gate-c2")
    code, out, err = run("up", "--stack", "c", "--clear-dead-lock").finish()
    assert code == 0, (out, err)
    said = out.splitlines()
    assert said[0] == f"removed the dead lock of {fields['username']}@{fields['hostname']} (pid {fields['pid']} no longer runs here): s3://{STATE_BUCKET}/{key}"
    assert said[-1].startswith("up: "), out
    assert state_resources(cloud, "c") == sorted(name.format(stack="c") for name in PARTS)
    assert swift_objects(cloud, f"{PREFIX}/.pulumi/locks/") == {}


def test_a_wrong_ec2_secret_stops_before_anything_naming_the_variables(cloud, project):
    copy, env, work, run = project
    before = swift_objects(cloud, f"{PREFIX}/")
    for command in (("install", "--stack", "a"), ("up", "--stack", "a"), ("destroy", "--stack", "a", "--yes")):
        wrong = Run(copy, {**env, "AWS_SECRET_ACCESS_KEY": "not-" + env["AWS_SECRET_ACCESS_KEY"]}, *command)
        code, out, err = wrong.finish()
        assert code == 1 and out == "", (out, err)
        assert err.splitlines() == [
            "stopped: stack a: its state store (the s3:// backend) refused the credential (SignatureDoesNotMatch), so nothing was done here. "
            "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to an EC2 credential of the project that holds the bucket "
            "(`openstack ec2 credentials list` shows yours; `openstack ec2 credentials create` makes one), "
            "and AWS_EC2_METADATA_DISABLED=true off AWS; then run the same command again."
        ]
    assert swift_objects(cloud, f"{PREFIX}/") == before  # nothing written, nothing locked
