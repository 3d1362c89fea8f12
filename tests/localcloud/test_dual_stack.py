"""A dual-stack cluster (issue 43, item 3) with the real engine, the OpenStack plugin, the real
openshift-install and the local cloud: the network a user brings, made here through openstacksdk with
an IPv4 subnet and a dhcpv6-stateful IPv6 subnet (the local Neutron takes it, and assigns the planned
fixed IPv6 addresses), then the offline plan, a real preview (and the preflight refusing a machine
network the IPv6 subnet does not hold), one real `up`, judged through Neutron's API: every port has
its two fixed IPs, the VIP ports hold both VIPs and the nodes both as address pairs, the security
groups are the program's matrix with its IPv6 twins and nothing wider, floating IPs map to IPv4
addresses only, the router serves both subnets; then `pulumi destroy` leaves the network as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from ipaddress import ip_address, ip_network

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.firewall import security_groups
from harness import ccm, kubeapi
from tests.localcloud import cloud_controller
from tests.localcloud.conftest import ROOT, sdk
from tests.localcloud.engine import Stack, needs
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack
from tools import real_installer

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))

V4, V6 = "10.40.0.0/24", "fd00:40::/64"
# The user's network in their project, as upstream's dual-stack guide has it: one IPv4 and one IPv6
# subnet, the IPv6 one dhcpv6-stateful (the planned addresses), each DHCP pool clear of the plan's.
GIVEN = """
network = tenant.network.find_network(name) or tenant.network.create_network(name=name)
names = {s.name for s in tenant.network.subnets(network_id=network.id)}
if f"{prefix}-v4" not in names:
    tenant.network.create_subnet(network_id=network.id, name=f"{prefix}-v4", ip_version=4, cidr=v4, gateway_ip=v4_gateway,
        allocation_pools=v4_pools, dns_nameservers=["10.20.0.1"])
if f"{prefix}-v6" not in names:
    tenant.network.create_subnet(network_id=network.id, name=f"{prefix}-v6", ip_version=6, cidr=v6, gateway_ip=v6_gateway,
        ipv6_address_mode=mode, ipv6_ra_mode=mode, **({"allocation_pools": v6_pools} if v6_pools else {}))
result = network.id
"""


def given_network(cloud, name: str, prefix: str, v4: str, v6: str, mode: str) -> str:
    """Network `name` with subnets `<prefix>-v4` and `<prefix>-v6` (in this IPv6 address mode), each gateway the
    first address; the DHCP pools (IPv4, and IPv6 where it is dhcpv6-stateful) clear of the plan's addresses."""
    four, six = ip_network(v4), ip_network(v6)
    return sdk(
        cloud, GIVEN, name=name, prefix=prefix, v4=v4, v6=v6, mode=mode, v4_gateway=str(four[1]), v6_gateway=str(six[1]),
        v4_pools=[{"start": str(four[200]), "end": str(four[250])}],
        v6_pools=[{"start": str(six[0x1000]), "end": str(six[0x1FFF])}] if mode == "dhcpv6-stateful" else None,
    )


SEEN = """
n = tenant.network.get_network(network_id)
result = {
    "tags": sorted(n.tags or []), "mtu": n.mtu,
    "subnets": sorted((s.name, s.cidr, s.gateway_ip, s.ipv6_address_mode, json.dumps(s.allocation_pools))
        for s in tenant.network.subnets(network_id=network_id)),
    "ports": sorted(p.id for p in tenant.network.ports(network_id=network_id) if not (p.device_owner or "").startswith("network:dhcp")),
}
"""
REMOVE = """
for port in tenant.network.ports(network_id=network_id):
    tenant.network.delete_port(port)
tenant.network.delete_network(network_id)
"""
# What the stack made, as Neutron says: ports on the given network, the cluster's groups' rules, floating IPs, router interfaces.
MADE = """
subnets = {s.id: s.name for s in tenant.network.subnets(network_id=network_id)}
tag = f"openshiftClusterID={infra}"
ports = [p for p in tenant.network.ports(network_id=network_id)]
result = {
    "ports": {p.name: {"fixed_ips": sorted((subnets[f["subnet_id"]], f["ip_address"]) for f in p.fixed_ips),
                       "pairs": sorted(a["ip_address"] for a in p.allowed_address_pairs or [])}
              for p in ports if tag in (p.tags or [])},
    "interfaces": sorted(subnets[f["subnet_id"]] for p in ports if p.device_owner == "network:router_interface" for f in p.fixed_ips),
    "rules": [(g.name.removeprefix(infra + "-"), r["ethertype"], r["protocol"], r["port_range_min"], r["port_range_max"], r["remote_ip_prefix"])
              for g in tenant.network.security_groups() if tag in (g.tags or [])
              for r in g.security_group_rules if r["direction"] == "ingress"],
    "floating": sorted(f.fixed_ip_address for f in tenant.network.ips() if any(t.endswith(infra) for t in f.tags or [])),
}
"""


def dual_stack(config: dict) -> dict:
    """The dev stack (integrated: the real installer validates its controlPlanePort against the cloud) on the given
    network, both families, one master and one worker; floating IPs through a router of its own, as dev has them."""
    openstack = dict(config["ocp:openstack"])
    openstack["existingNetwork"] = {"networkId": "given-dual", "subnetId": ["dual-v4", "dual-v6"], "router": True}
    return {
        **config,
        "ocp:machineNetwork": [V4, V6],
        "ocp:clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}, {"cidr": "fd01::/48", "hostPrefix": 64}],
        "ocp:serviceNetwork": ["172.30.0.0/16", "fd02::/112"],
        "ocp:masters": {**config["ocp:masters"], "count": 1},
        "ocp:workers": {**config["ocp:workers"], "count": 1, "maxCount": 10},
        "ocp:openstack": openstack,
    }


@pytest.fixture(scope="module")
def given(cloud) -> Iterator[str]:
    network_id = given_network(cloud, "given-dual", "dual", V4, V6, "dhcpv6-stateful")
    yield network_id
    sdk(cloud, REMOVE, network_id=network_id)


@pytest.fixture(scope="module")
def stack(given, cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    yield from openstack_stack("dev", tmp_path_factory.mktemp("dual"), cloud, cloud_env, edit=dual_stack)


def test_a_dual_stack_cluster_plans_previews_and_is_made_with_both_families_then_leaves_the_network_as_it_was(stack, cloud, given):
    started, timings = time.monotonic(), {}
    before = sdk(cloud, SEEN, network_id=given)
    config = load_config(stack.base)
    plan = plan_addresses(config)

    # The offline plan, with the real installer against the local cloud (the network exists there).
    config_file = stack.work / "plan" / "Pulumi.dual.yaml"
    config_file.parent.mkdir()
    stack.write_config(stack.base, config_file)
    environment = {key: value for key, value in os.environ.items() if key != real_installer.LOCALCLOUD_SWITCH}
    planned = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--config-file", str(config_file), "--out", str(stack.work / "plan" / "out")],
        cwd=ROOT, env=environment, capture_output=True, text=True,
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "made by the real" in planned.stdout, planned.stdout
    assert "guard rails: the policy pack's 6 mandatory rules pass" in planned.stdout, planned.stdout
    outputs = json.loads((stack.work / "plan" / "out" / "outputs.json").read_text())
    assert outputs["apiVips"] == ["10.40.0.5", "fd00:40::5"] and outputs["ingressVips"] == ["10.40.0.7", "fd00:40::7"], outputs
    timings["plan"] = time.monotonic() - started

    # A real preview; and the preflight reads the real subnets: a machine network the IPv6 subnet does not hold stops it.
    steps, output = stack.steps(stack.base, stack.work / "preview.yaml")
    assert steps is not None, output[-4000:]
    wrong = {**stack.base, "ocp:machineNetwork": json.dumps([V4, "fd00:41::/64"])}
    steps, output = stack.steps(wrong, stack.work / "wrong.yaml")
    assert steps is None and 'ocp:machineNetwork: fd00:41::/64 is not the CIDR of subnet "dual-v6" (fd00:40::/64)' in output, output[-4000:]
    timings["previews"] = time.monotonic() - started - timings["plan"]

    stack.up()
    timings["up"] = time.monotonic() - started - timings["plan"] - timings["previews"]
    infra = infra_id(stack)
    made = sdk(cloud, MADE, network_id=given, infra=infra)
    ports = made["ports"]
    # Every node's port: its planned address in each family, on that family's subnet.
    for node in plan.nodes:
        name = f"{infra}-{'bootstrap' if node.role == 'bootstrap' else f'{node.role}-{node.index}'}"
        assert ports[name]["fixed_ips"] == [["dual-v4", str(node.ips[0])], ["dual-v6", str(node.ips[1])]], (name, ports[name])
    # The VIP ports hold both VIPs; the nodes that may hold one carry both as address pairs.
    assert ports[f"{infra}-api-port"]["fixed_ips"] == [["dual-v4", "10.40.0.5"], ["dual-v6", "fd00:40::5"]], ports
    assert ports[f"{infra}-ingress-port"]["fixed_ips"] == [["dual-v4", "10.40.0.7"], ["dual-v6", "fd00:40::7"]], ports
    assert ports[f"{infra}-master-0"]["pairs"] == sorted(["10.40.0.5", "fd00:40::5", "10.40.0.7", "fd00:40::7"]), ports
    assert ports[f"{infra}-worker-0"]["pairs"] == sorted(["10.40.0.7", "fd00:40::7"]), ports
    # The groups: exactly the program's matrix, each family with its ethertype; IPv6 wider than the machine network
    # only for ICMP, the API and the routes, as IPv4's 0.0.0.0/0.
    wanted = sorted(
        ((group, rule.ethertype, rule.protocol, rule.port_min, rule.port_max, str(rule.source))
         for group, rules in security_groups(config, plan).items()
         for rule in rules),
        key=repr,
    )
    assert sorted(map(tuple, made["rules"]), key=repr) == wanted
    ipv6 = [rule for rule in made["rules"] if rule[1] == "IPv6"]
    assert ipv6 and {rule[5] for rule in ipv6} == {V6, "::/0"}, ipv6
    assert {(rule[2], rule[3]) for rule in ipv6 if rule[5] == "::/0"} == {("ipv6-icmp", None), ("tcp", 6443), ("tcp", 80), ("tcp", 443)}, ipv6
    # Floating IPs map to IPv4 addresses only (the API's, the Ingress', the bootstrap's); the router serves both subnets.
    assert made["floating"] and all(ip_address(address).version == 4 for address in made["floating"]), made["floating"]
    assert sorted(made["floating"]) == sorted(["10.40.0.5", "10.40.0.7", str(plan.bootstrap.ips[0])]), made["floating"]
    assert made["interfaces"] == ["dual-v4", "dual-v6"], made["interfaces"]
    outputs = stack.outputs()
    assert outputs["apiVips"] == ["10.40.0.5", "fd00:40::5"] and outputs["apiVip"] == "10.40.0.5", outputs
    assert outputs["ingressVips"] == ["10.40.0.7", "fd00:40::7"], outputs

    # The real cloud controller takes each node's two planned addresses, the IPv4 one first, as its kubelet names them.
    if not (ccm.missing() or kubeapi.missing()):
        got, _, _ = cloud_controller.initialized_as_planned(stack, infra, stack.work / "controller")
        assert {name: [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"] for name, node in got.items()} == {
            f"{infra}-{node.role}-{node.index}": [str(ip) for ip in node.ips] for node in plan.nodes if node.role != "bootstrap"
        }
        timings["controller"] = time.monotonic() - started - sum(timings.values())

    destroyed = stack.destroy()
    assert destroyed.returncode == 0, (destroyed.stdout + destroyed.stderr)[-6000:]
    timings["destroy"] = time.monotonic() - started - sum(timings.values())
    assert sdk(cloud, SEEN, network_id=given) == before
    print(f"dual-stack: {', '.join(f'{step} {seconds:.0f} s' for step, seconds in timings.items())}")



def test_an_ipv6_only_stack_plans_with_the_real_installer_on_the_given_ipv6_subnet(given, cloud, tmp_path):
    """Single-stack IPv6 as upstream's guide has it: the IPv6 subnet alone, no external network, no floating IP; the
    offline plan runs the real installer against the local cloud, which validates the controlPlanePort there."""
    committed = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = committed["config"]
    openstack = {key: value for key, value in config["ocp:openstack"].items() if key not in ("externalNetwork", "apiFloatingIp", "ingressFloatingIp", "sshAllowedCidr")}
    openstack["existingNetwork"] = {"networkId": "given-dual", "subnetId": "dual-v6"}
    config.update({
        "ocp:machineNetwork": V6, "ocp:clusterNetwork": {"cidr": "fd01::/48", "hostPrefix": 64}, "ocp:serviceNetwork": "fd02::/112",
        "ocp:masters": {**config["ocp:masters"], "count": 1}, "ocp:workers": {**config["ocp:workers"], "count": 1, "maxCount": 10},
        "ocp:bootstrap": {**config["ocp:bootstrap"], "helper": {"floatingIp": False}}, "ocp:openstack": openstack,
        "ocp:installer": {**config["ocp:installer"], "dir": str(tmp_path / "assets")},
    })
    config_file = tmp_path / "Pulumi.ipv6.yaml"
    config_file.write_text(yaml.safe_dump(committed))
    environment = {key: value for key, value in os.environ.items() if key != real_installer.LOCALCLOUD_SWITCH}
    planned = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--config-file", str(config_file), "--out", str(tmp_path / "out")],
        cwd=ROOT, env=environment, capture_output=True, text=True,
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "made by the real" in planned.stdout, planned.stdout
    resources = json.loads((tmp_path / "out" / "resources.json").read_text())
    text = json.dumps(resources)
    assert "fd00:40::14" in text and "10.40.0." not in text
    assert not [each for each in resources if each["type"].endswith((":FloatingIp", ":FloatingIpAssociate", ":Router"))]
