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

from cluster.cloud_facts import GlanceImage, Network, Subnet
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
    # The routers on s-1: r-ext's gateway on the external network, r-local's none, r-hidden another project's (404 to us);
    # r-v6 has its interface on the other subnet only. A DHCP port is no router.
    ports = [
        Of(device_owner="network:router_interface", device_id="r-ext", fixed_ips=[{"subnet_id": "s-1", "ip_address": "10.0.0.1"}]),
        Of(device_owner="network:ha_router_replicated_interface", device_id="r-local", fixed_ips=[{"subnet_id": "s-1", "ip_address": "10.0.0.2"}]),
        Of(device_owner="network:router_interface_distributed", device_id="r-hidden", fixed_ips=[{"subnet_id": "s-1", "ip_address": "10.0.0.3"}]),
        Of(device_owner="network:router_interface", device_id="r-v6", fixed_ips=[{"subnet_id": "s-2", "ip_address": "fd00:10::1"}]),
        Of(device_owner="network:dhcp", device_id="dhcp-1", fixed_ips=[{"subnet_id": "s-1", "ip_address": "10.0.0.4"}]),
    ]
    routers = {"r-ext": Of(external_gateway_info={"network_id": "n-ext", "enable_snat": True}), "r-local": Of(external_gateway_info=None), "r-v6": Of(external_gateway_info=None)}

    def get_router(ref):
        if ref not in routers:
            raise exceptions.NotFoundException("no such router")
        return routers[ref]

    connection.network.ports = lambda network_id, device_owner: [p for p in ports if p.device_owner == device_owner]
    connection.network.get_router = get_router
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
    routed = (("r-ext", "n-ext"), ("r-hidden", None), ("r-local", ""))
    assert read.subnets == {"nodes-v4": (Subnet("s-1", "nodes-v4", net_id, "10.0.0.0/16", (("10.0.200.0", "10.0.200.9"),), routers=routed),)}
    # Nothing asked: the line the preflight read before.
    assert "networks" not in json.loads(probe(connection))


def test_networks_asked_in_other_than_json_fail_the_probe_in_one_line():
    environment = {**os.environ, "OS_CLOUD": "mine", "OCP_PYTHON": sys.executable, NETWORKS_VARIABLE: "storage, vlan"}
    done = subprocess.run(["bash", "-c", PROBE_COMMAND], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout) == {"error": f"{NETWORKS_VARIABLE} is not JSON"}


def test_images_asked_by_name_are_every_one_glance_lists_newest_first():
    """What the installer's validation and the Machine API count under a name (gophercloud's images.IDFromName:
    GET /v2/images?name=, every status, public and shared images too): the probe lists the same, each with what
    tells them apart. tests/localcloud/test_preflight_networks.py reads the real Glance."""
    listed = {
        "rhcos": [
            Of(id="i-old", status="active", visibility="private", owner_id="p-1", created_at="2026-10-01T00:00:00Z"),
            Of(id="i-queued", status="queued", visibility="private", owner_id="p-1", created_at="2026-11-02T00:00:00Z"),
            Of(id="i-public", status="active", visibility="public", owner_id="p-admin", created_at="2026-11-01T00:00:00Z"),
        ],
    }
    connection = _connection(_forbidden)
    connection.image = Of(images=lambda name: iter(listed.get(name, [])))
    line = probe(connection, {"images": ["rhcos", "nowhere"]})
    read = parse_probe(line)
    assert read.images == {
        "rhcos": (
            GlanceImage("i-queued", "queued", "private", "p-1", "2026-11-02T00:00:00Z"),
            GlanceImage("i-public", "active", "public", "p-admin", "2026-11-01T00:00:00Z"),
            GlanceImage("i-old", "active", "private", "p-1", "2026-10-01T00:00:00Z"),
        ),
        "nowhere": (),
    }
    # Not asked: not read (standalone mode, whose Machine API reads no image by name).
    connection.network.get_network = connection.network.networks = lambda *args, **kwargs: []
    assert parse_probe(probe(connection, {"networks": []})).images is None
    broken = parse_probe(json.dumps({"extensions": [], "hosts": None, "images": {"rhcos": [{"status": "active"}]}}))
    assert broken.images is None and "images it cannot have read" in broken.failure
