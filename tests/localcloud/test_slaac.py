"""Issue 50, item 8, with the real engine, the OpenStack plugin, the real installer and the local cloud: a
dual-stack dev stack on a given network whose IPv6 subnet is slaac, as upstream's dual-stack guide makes it.
Neutron derives each port's address from its MAC there and refuses an address asked for: a real preview's ports
name the subnet alone, a real `up` gives each port its EUI-64 address and the `nodes` output reads it back, the
next preview changes nothing, and destroy leaves the network as it was. Its own module, in the cloud's second group
(tests/conftest.py SIDE_MODULES): it only deploys its stack on its own network."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from ipaddress import ip_network

import pytest

from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack
from tests.localcloud.test_dual_stack import REMOVE, SEEN, dual_stack, given_network

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))

# Issue 50, item 8: the IPv6 subnet slaac, as upstream's dual-stack guide makes it. Neutron derives each port's
# address from its MAC there and refuses an address asked for: the ports name the subnet alone and the stack reads
# what Neutron gave them.
SLAAC_V4, SLAAC_V6 = "10.41.0.0/24", "fd00:41::/64"
# What Neutron does with a port on it: an address asked for (the planned one, as the program asked before) is
# refused; a port naming the subnet alone gets the address its MAC derives (modified EUI-64, RFC 4291 appendix A).
NEUTRON_ON_SLAAC = """
subnets = {s.name: s.id for s in tenant.network.subnets(network_id=network_id)}
try:
    tenant.network.create_port(network_id=network_id, name="asked", fixed_ips=[{"subnet_id": subnets["slaac-v6"], "ip_address": "fd00:41::14"}])
    refused = None
except Exception as error:
    refused = str(error)
port = tenant.network.create_port(network_id=network_id, name="derived", fixed_ips=[{"subnet_id": subnets["slaac-v4"], "ip_address": "10.41.0.20"}, {"subnet_id": subnets["slaac-v6"]}])
result = {"refused": refused, "mac": port.mac_address, "fixed_ips": sorted(f["ip_address"] for f in port.fixed_ips)}
tenant.network.delete_port(port)
"""
PORT_ADDRESSES = """
tag = f"openshiftClusterID={infra}"
result = {p.name: {"mac": p.mac_address, "ips": sorted(f["ip_address"] for f in p.fixed_ips)}
          for p in tenant.network.ports(network_id=network_id) if tag in (p.tags or [])}
"""


def eui64(prefix: str, mac: str) -> str:
    """The address a MAC derives in a /64 (modified EUI-64: the universal/local bit flipped, ff:fe in the middle)."""
    octets = bytes.fromhex(mac.replace(":", ""))
    interface = bytes([octets[0] ^ 0x02]) + octets[1:3] + b"\xff\xfe" + octets[3:]
    return str(ip_network(prefix)[int.from_bytes(interface, "big")])


def slaac_stack_config(config: dict) -> dict:
    """dual_stack on network given-slaac: its IPv4 subnet and its slaac one."""
    edited = dual_stack(config)
    edited["ocp:machineNetwork"] = [SLAAC_V4, SLAAC_V6]
    edited["ocp:openstack"] = {**edited["ocp:openstack"], "existingNetwork": {"networkId": "given-slaac", "subnetId": ["slaac-v4", "slaac-v6"], "router": True}}
    return edited


@pytest.fixture(scope="module")
def slaac_given(cloud) -> Iterator[str]:
    network_id = given_network(cloud, "given-slaac", "slaac", SLAAC_V4, SLAAC_V6, "slaac")
    yield network_id
    sdk(cloud, REMOVE, network_id=network_id)


@pytest.fixture(scope="module")
def slaac_stack(slaac_given, cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    yield from openstack_stack("dev", tmp_path_factory.mktemp("slaac"), cloud, cloud_env, edit=slaac_stack_config)


def preview_inputs(stack: Stack) -> dict[str, dict]:
    """`pulumi preview --json` of the stack's config: each custom resource's planned inputs, by name."""
    stack.write_config(stack.base)
    done = stack.pulumi("preview", "--json")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return {
        step["urn"].rsplit("::", 1)[1]: (step.get("newState") or {}).get("inputs") or {}
        for step in json.loads(done.stdout)["steps"]
        if "::pulumi:providers:" not in step["urn"]
    }


def test_on_a_slaac_subnet_the_ports_ask_no_ipv6_address_and_the_stack_reads_what_neutron_derives(slaac_stack, cloud, slaac_given):
    started, timings = time.monotonic(), {}
    before = sdk(cloud, SEEN, network_id=slaac_given)
    neutron = sdk(cloud, NEUTRON_ON_SLAAC, network_id=slaac_given)
    assert neutron["refused"] and "automatic" in neutron["refused"], neutron  # what the program's ports asked before
    assert neutron["fixed_ips"] == ["10.41.0.20", eui64(SLAAC_V6, neutron["mac"])], neutron

    # A real preview: the preflight takes slaac for the second family; every port names the IPv6 subnet alone.
    planned = preview_inputs(slaac_stack)
    timings["preview"] = time.monotonic() - started
    master = next(inputs for name, inputs in planned.items() if name.endswith("-control-plane-master-0-port"))
    # The subnets by ID, unknown until the preflight passed (the infra ID gates their lookup by name).
    assert [sorted(key for key in entry if not key.startswith("__")) for entry in master["fixedIps"]] == [["ipAddress", "subnetId"], ["subnetId"]], master
    assert master["fixedIps"][0]["ipAddress"] == "10.41.0.20", master["fixedIps"]
    api = planned["ocp4-vips-api-port"]["fixedIps"]
    assert [entry.get("ipAddress") for entry in api] == ["10.41.0.5", None], api
    assert sorted(pair["ipAddress"] for pair in master["allowedAddressPairs"]) == sorted(["10.41.0.5", "fd00:41::5", "10.41.0.7", "fd00:41::7"])

    # Made: each node's port holds the address its MAC derives, which the nodes output reads back from Neutron.
    slaac_stack.up()
    timings["up"] = time.monotonic() - started - timings["preview"]
    infra = infra_id(slaac_stack)
    held = sdk(cloud, PORT_ADDRESSES, network_id=slaac_given, infra=infra)
    outputs = slaac_stack.outputs()
    for name, (v4, v6) in outputs["nodes"].items():
        assert held[name]["ips"] == sorted([v4, v6]) and v6 == eui64(SLAAC_V6, held[name]["mac"]), (name, held)
    assert outputs["nodes"][f"{infra}-master-0"][0] == "10.41.0.20" and len(outputs["nodes"]) == 3, outputs["nodes"]
    # Nothing moves on the next run: the provider keeps no fixed_ip of its own to compare with Neutron's.
    steps, output = slaac_stack.steps(slaac_stack.base, slaac_stack.work / "again.yaml")
    assert steps is not None, output[-4000:]
    assert {name: step for name, step in steps.items() if step != "same"} == {}
    assert re.search(r'"changeSummary": \{\s*"same": \d+\s*\}', output), output[-3000:]

    destroyed = slaac_stack.destroy()
    assert destroyed.returncode == 0, (destroyed.stdout + destroyed.stderr)[-6000:]
    timings["destroy"] = time.monotonic() - started - sum(timings.values())
    assert sdk(cloud, SEEN, network_id=slaac_given) == before
    print(f"slaac: {', '.join(f'{step} {seconds:.0f} s' for step, seconds in timings.items())}")
