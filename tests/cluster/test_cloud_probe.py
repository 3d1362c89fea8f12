"""`python -m cluster.cloud_probe` and its parse (cluster/cloud_facts.py parse_probe): what the
preflight reads of Neutron's extensions and Nova's hosts. Here openstacksdk-shaped answers and
the failures a user meets before any cloud answers; tests/localcloud/test_cloud.py runs the
command against the local cloud as a member and as an admin."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from types import SimpleNamespace as Of

import pytest
import yaml
from openstack import exceptions

from cluster.cloud_probe import answer, failed, probe
from cluster.preflight import PROBE_COMMAND, Probe, parse_probe
from tests.conftest import ROOT

PASSWORD = "s3cret-probe-password"


def _connection(hypervisors) -> Of:
    extensions = [Of(alias="standard-attr-tag"), Of(alias="router"), Of(alias="external-net")]
    return Of(network=Of(extensions=lambda: iter(extensions)), compute=Of(hypervisors=hypervisors))


def _forbidden():
    raise exceptions.ForbiddenException("Policy doesn't allow os_compute_api:os-hypervisors:list to be performed.")


def test_a_members_view_lists_the_extensions_sorted_and_no_hosts():
    line = probe(_connection(_forbidden))
    assert json.loads(line) == {"extensions": ["external-net", "router", "standard-attr-tag"], "hosts": None}
    assert parse_probe(line) == Probe(("external-net", "router", "standard-attr-tag"), None)


def test_an_admins_view_counts_the_hosts_that_are_up():
    line = probe(_connection(lambda: [Of(state="up"), Of(state="down"), Of(state="up")]))
    assert json.loads(line)["hosts"] == ["down", "up", "up"]
    assert parse_probe(line) == Probe(("external-net", "router", "standard-attr-tag"), 2)
    # The same cloud gives the same line, whatever order the APIs list in.
    assert line == answer(["router", "external-net", "standard-attr-tag"], ["up", "up", "down"])


def test_other_failures_of_the_hypervisors_fail_the_probe():
    def broken():
        raise exceptions.HttpException("500: Server Error")

    with pytest.raises(exceptions.HttpException):
        probe(_connection(broken))


@pytest.mark.parametrize(
    ("stdout", "failure", "why"),
    [
        (None, "exit status 127: bash: venv/bin/python: No such file or directory", "exit status 127: bash: venv/bin/python: No such file"),
        (None, "", "it did not run"),
        ("", "", "it printed nothing"),
        ("Traceback (most recent call last):", "", "it printed 'Traceback (most recent call last):', not its JSON line"),
        ('["router"]', "", "not its JSON line"),
        ('{"extensions": "router", "hosts": null}', "", "without the extensions and hosts it lists"),
        ('{"extensions": ["router"], "hosts": [1]}', "", "without the extensions and hosts it lists"),
        (failed("no openstacksdk in /venv/bin/python: install the program's requirements.txt into its venv"), "", "no openstacksdk in /venv/bin/python"),
    ],
)
def test_a_bad_or_missing_answer_is_unknown_with_the_reason(stdout, failure, why):
    parsed = parse_probe(stdout, failure)
    assert parsed.extensions is None and parsed.hosts is None
    assert why in parsed.failure, parsed.failure


def _closed_port() -> int:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        return spare.getsockname()[1]


def _run_as_the_program_does(cloud: str, clouds: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OS_CLIENT_CONFIG_FILE": clouds, "OS_CLOUD": cloud, "OCP_PYTHON": sys.executable}
    return subprocess.run(["bash", "-c", PROBE_COMMAND], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)


def test_an_unknown_entry_or_an_unreachable_cloud_is_one_json_line_without_secrets(tmp_path):
    clouds = tmp_path / "clouds.yaml"
    auth = {"auth_url": f"http://127.0.0.1:{_closed_port()}/v3", "username": "u", "password": PASSWORD, "project_name": "x",
            "user_domain_name": "Default", "project_domain_name": "Default"}
    clouds.write_text(yaml.safe_dump({"clouds": {"mine": {"auth": auth, "region_name": "RegionOne"}}}))
    for cloud, says in (
        ("nosuch", f"no entry 'nosuch' in {clouds} (its entries: mine)"),
        ("mine", f"cannot reach Keystone at {auth['auth_url']} (ConnectFailure"),
    ):
        done = _run_as_the_program_does(cloud, str(clouds))
        assert done.returncode == 0 and len(done.stdout.splitlines()) == 1, done.stdout + done.stderr
        assert json.loads(done.stdout)["error"].startswith(says), done.stdout
        assert parse_probe(done.stdout).failure.startswith(says)
        assert PASSWORD not in done.stdout + done.stderr and "Traceback" not in done.stdout + done.stderr
