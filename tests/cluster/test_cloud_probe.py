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

from cluster.cloud_facts import Network, Subnet
from cluster.cloud_probe import NETWORKS_VARIABLE, answer, failed, probe
from cluster.preflight import PROBE_COMMAND, Probe, parse_probe
from tests.conftest import ROOT

PASSWORD = "s3cret-probe-password"


def _connection(hypervisors, zones=None) -> Of:
    """`zones`: Nova's zone details (None: refused, as to anyone but an admin by default)."""
    extensions = [Of(alias="standard-attr-tag"), Of(alias="router"), Of(alias="external-net")]
    details = (lambda details: iter(zones)) if zones is not None else (lambda details: _forbidden())
    return Of(network=Of(extensions=lambda: iter(extensions)), compute=Of(hypervisors=hypervisors, availability_zones=details))


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


def test_an_admins_view_counts_each_zones_compute_hosts_that_are_up():
    up, down = {"available": True, "active": True}, {"available": False, "active": True}
    zones = [
        Of(name="az1", hosts={"compute-a": {"nova-compute": up}, "compute-b": {"nova-compute": down}}),
        Of(name="nova", hosts={"compute-c": {"nova-compute": up}}),
        Of(name="internal", hosts={"controller": {"nova-conductor": up, "nova-scheduler": up}}),
    ]
    line = probe(_connection(lambda: [Of(state="up")] * 3, zones))
    assert json.loads(line)["zoneHosts"] == {"az1": 1, "nova": 1}
    assert parse_probe(line).zone_hosts == {"az1": 1, "nova": 1}
    # A member sees neither.
    assert parse_probe(probe(_connection(_forbidden, zones))).zone_hosts is None


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


def test_networks_and_subnets_by_id_or_name_with_every_match():
    net_id, twin_a, twin_b = "a1111111-2222-4333-8444-555555555555", "b1111111-2222-4333-8444-555555555555", "c1111111-2222-4333-8444-555555555555"
    networks = {
        net_id: Of(id=net_id, name="nodes", is_port_security_enabled=True, subnet_ids=["s-2", "s-1"], mtu=1450, project_id="p-1"),
        twin_b: Of(id=twin_b, name="vlan", is_port_security_enabled=False, subnet_ids=[], mtu=1500, project_id="p-admin"),
        twin_a: Of(id=twin_a, name="vlan", is_port_security_enabled=None, subnet_ids=None, mtu=None, project_id=None),
    }

    def get_network(ref):
        if ref not in networks:
            raise exceptions.NotFoundException("no such network")
        return networks[ref]

    subnet = Of(id="s-1", name="nodes-v4", network_id=net_id, cidr="10.0.0.0/16", allocation_pools=[{"start": "10.0.200.0", "end": "10.0.200.9"}])
    connection = _connection(lambda: [])
    connection.network.get_network = get_network
    connection.network.networks = lambda name: [n for n in networks.values() if n.name == name]
    connection.network.get_subnet = lambda ref: subnet
    other = Of(id="s-2", name="nodes-v6", network_id=net_id, cidr="fd00:10::/64", allocation_pools=[])
    connection.network.subnets = lambda name=None, network_id=None: (
        [each for each in (subnet, other) if each.network_id == network_id] if network_id else [subnet] if name == subnet.name else []
    )
    line = probe(connection, {"networks": [net_id, "vlan", "nowhere"], "subnets": ["nodes-v4"]})
    read = parse_probe(line)
    assert read.networks == {
        # Its subnets' CIDRs too: the preflight holds the node's groups off an extra network inside the machine network.
        net_id: (Network(net_id, "nodes", True, ("s-1", "s-2"), 1450, "p-1", ("10.0.0.0/16", "fd00:10::/64")),),
        # Two of one name, by ID; a Neutron without the port-security extension: every port may carry groups.
        "vlan": (Network(twin_a, "vlan", True, (), None, ""), Network(twin_b, "vlan", False, (), 1500, "p-admin")),
        "nowhere": (),
    }
    assert read.subnets == {"nodes-v4": (Subnet("s-1", "nodes-v4", net_id, "10.0.0.0/16", (("10.0.200.0", "10.0.200.9"),)),)}
    # Nothing asked: the line the preflight read before.
    assert "networks" not in json.loads(probe(connection))


def test_networks_asked_in_other_than_json_fail_the_probe_in_one_line():
    environment = {**os.environ, "OS_CLOUD": "mine", "OCP_PYTHON": sys.executable, NETWORKS_VARIABLE: "storage, vlan"}
    done = subprocess.run(["bash", "-c", PROBE_COMMAND], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout) == {"error": f"{NETWORKS_VARIABLE} is not JSON"}
