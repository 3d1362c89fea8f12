"""`python -m ocp status --all` on a state kept in the local cloud's Swift through s3api (issue 52, item 2), as a user
runs it in a project copy logged in to the s3:// URL with its project's EC2 credential: four stacks of a small
stand-in program (tests/e2e/stand_in.py), two deployed, one under a key this run does not have, one whose state
object is then damaged through s3api. Each is reported; the damaged state makes `pulumi stack ls` fail for the
whole backend, and the stacks are then listed from the bucket's objects, the others still read. The drift of a
real cloud's resources: tests/e2e/test_status_all.py (the cloud of ports) and tests/localcloud/test_status.py."""

from __future__ import annotations

import json
import subprocess

import boto3
import pytest
from botocore.config import Config

from harness.localcloud.layout import STATE_BUCKET
from tests.conftest import ROOT
from tests.e2e.stand_in import GATED, copy_project, needs
from tests.localcloud.conftest import state_url
from tools import toolchain

PREFIX = "tests/status-all"

pytestmark = pytest.mark.skipif(needs() is not None, reason=str(needs()))


@pytest.fixture(scope="module")
def project(cloud, cloud_env, tmp_path_factory):
    work = tmp_path_factory.mktemp("status-all-swift")
    copy = copy_project(work, GATED)
    url = state_url(cloud_env, PREFIX)
    env = {**cloud_env, **toolchain.pulumi_env(work / "home", work / "unused", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": "status-all-only"}
    env = {key: value for key, value in env.items() if key != "PULUMI_BACKEND_URL"}  # the login's backend, as a user has it
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED"):
        env[key] = cloud_env[key]

    def run(*args: str, **more: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=copy, env={**env, **more}, capture_output=True, text=True, timeout=300)

    assert run("pulumi", "login", url).returncode == 0
    for stack in ("a", "b"):
        assert run("pulumi", "stack", "init", stack, "--non-interactive").returncode == 0
        done = run("pulumi", "up", "--yes", "--skip-preview", "--stack", stack, "--non-interactive")
        assert done.returncode == 0, done.stdout + done.stderr
    assert run("pulumi", "stack", "init", "nokey", "--non-interactive", PULUMI_CONFIG_PASSPHRASE="a key this run does not have").returncode == 0
    assert run("pulumi", "stack", "init", "broken", "--non-interactive").returncode == 0
    store = boto3.client(
        "s3", endpoint_url=url.split("endpoint=")[1].split("&")[0], region_name="RegionOne",
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required", response_checksum_validation="when_required"),
    )
    try:
        yield run, store
    finally:  # the tests' prefix emptied (the project's next `tidy` would too)
        for page in store.get_paginator("list_objects_v2").paginate(Bucket=STATE_BUCKET, Prefix=f"{PREFIX}/"):
            for item in page.get("Contents", []):
                store.delete_object(Bucket=STATE_BUCKET, Key=item["Key"])


def status_all(run) -> tuple[int, dict, list[str]]:
    done = run(str(ROOT / "venv" / "bin" / "python"), "-m", "ocp", "status", "--all", "--json")
    assert done.returncode in (0, 1, 2) and done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr.splitlines()


def test_every_stack_in_swift_is_read_and_a_damaged_state_hides_none(project):
    run, store = project
    code, report, err = status_all(run)
    assert (code, report["listing"]) == (2, {"by": "pulumi stack ls", "why": None}), err
    stacks = {entry["stack"]: entry for entry in report["stacks"]}
    assert list(stacks) == ["a", "b", "broken", "nokey"]
    assert all(stacks[name]["drift"]["read"] and stacks[name]["lastUpdate"]["result"] == "succeeded" for name in ("a", "b"))
    assert not stacks["nokey"]["drift"]["read"] and "incorrect passphrase" in stacks["nokey"]["drift"]["why"]
    assert len([line for line in err if line.startswith("[")]) == 4
    # The state object damaged through s3api: `pulumi stack ls` fails for every stack.
    store.put_object(Bucket=STATE_BUCKET, Key=f"{PREFIX}/.pulumi/stacks/ocp/broken.json", Body=b"{not json")
    listed = run("pulumi", "stack", "ls", "--non-interactive")
    assert listed.returncode != 0 and "invalid character" in listed.stderr, listed.stdout + listed.stderr
    code, report, err = status_all(run)
    assert code == 2 and report["listing"]["by"] == "backend files", err
    stacks = {entry["stack"]: entry for entry in report["stacks"]}
    assert list(stacks) == ["a", "b", "broken", "nokey"]
    assert not stacks["broken"]["drift"]["read"] and "failed to load checkpoint" in stacks["broken"]["drift"]["why"]
    assert stacks["a"]["drift"]["read"] and stacks["b"]["drift"]["read"]
    assert err[0].startswith("`pulumi stack ls` failed") and len([line for line in err if line.startswith("[")]) == 4
