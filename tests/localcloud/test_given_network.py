"""A cluster on the networks a company cloud gives you, with the real engine, the OpenStack plugin and
the local cloud: a provider network and subnet an admin made in the project beforehand (no router, no
floating IPs), a second network with port security off and no subnet (a provider VLAN, a Multus L2
network) whose ports carry no groups, a third for the workers only, and the user's own load balancer
(`loadBalancer: UserManaged`). Integrated (the real installer validates its `controlPlanePort`
against the cloud) and standalone. Judged through the cloud's API: the adopted network tagged as the
installer tags it, no router, each port as its network is described; `pulumi destroy` leaves the
given networks exactly as they were, untagged."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs, structured
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))

CIDR = "10.30.0.0/24"
# What an admin makes in the tenant's project before the user writes a stack: a flat provider network
# whose DHCP pool keeps clear of the addresses the stack plans (.5, .7, .10-.129), an L2 network with
# port security off and no subnet, and a routed-elsewhere storage network with a subnet.
GIVEN = """
project = admin.identity.find_project(project_name, ignore_missing=False)
def network(name, **fields):
    found = admin.network.find_network(name, project_id=project.id)
    return found or admin.network.create_network(name=name, project_id=project.id, **fields)
provider = network("given-provider", provider_network_type="flat", provider_physical_network="given")
if not list(admin.network.subnets(network_id=provider.id)):
    admin.network.create_subnet(network_id=provider.id, project_id=project.id, name="given-v4", ip_version=4, cidr=cidr,
        gateway_ip="10.30.0.1", allocation_pools=[{"start": "10.30.0.200", "end": "10.30.0.250"}], dns_nameservers=["10.20.0.1"])
l2 = network("given-l2", provider_network_type="flat", provider_physical_network="l2", port_security_enabled=False)
storage = network("given-storage")
if not list(admin.network.subnets(network_id=storage.id)):
    admin.network.create_subnet(network_id=storage.id, project_id=project.id, name="given-storage", ip_version=4, cidr="10.31.0.0/24")
result = {n.name: n.id for n in (provider, l2, storage)}
"""
# The given networks as a user would compare them before and after: attributes, tags, subnets, ports.
SEEN = """
result = {}
for name, network_id in ids.items():
    n = admin.network.get_network(network_id)
    result[name] = {
        "tags": sorted(n.tags or []), "mtu": n.mtu, "port_security": n.is_port_security_enabled, "shared": n.is_shared,
        "subnets": sorted((s.name, s.cidr, s.gateway_ip, json.dumps(s.allocation_pools)) for s in admin.network.subnets(network_id=network_id)),
        "ports": sorted(p.id for p in admin.network.ports(network_id=network_id) if not (p.device_owner or "").startswith("network:dhcp")),
    }
"""
REMOVE = """
for network_id in ids.values():
    for port in admin.network.ports(network_id=network_id):
        admin.network.delete_port(port)
    admin.network.delete_network(network_id)
"""
# Each of the stack's ports on the given networks: its node, network, groups and port security.
PORTS = """
networks = {network_id: name for name, network_id in ids.items()}
result = [
    {"name": p.name, "network": networks[p.network_id], "groups": sorted(g.name for g in (tenant.network.get_security_group(i) for i in p.security_group_ids or [])),
     "port_security": p.is_port_security_enabled, "fixed_ips": [f["ip_address"] for f in p.fixed_ips], "pairs": p.allowed_address_pairs or [],
     "tags": sorted(p.tags or [])}
    for p in tenant.network.ports() if p.network_id in networks and f"openshiftClusterID={infra}" in (p.tags or [])
]
result += [{"router": r.name} for r in tenant.network.routers() if (r.name or "").startswith(infra)]
result += [{"floating_ip": f.floating_ip_address} for f in tenant.network.ips() if any(t.endswith(infra) for t in f.tags or [])]
"""


def given_stack(config: dict, ids: dict[str, str]) -> dict:
    """The committed stack moved onto the given networks: the provider network by name, the L2 network (no
    port security: the workers only by default, issue 49), the storage network on the workers, the user's
    balancer; no router, no floating IP."""
    openstack = {key: value for key, value in config["ocp:openstack"].items() if key not in ("externalNetwork", "sshAllowedCidr", "apiFloatingIp", "ingressFloatingIp")}
    openstack["existingNetwork"] = {"networkId": "given-provider", "subnetId": "given-v4"}
    openstack["additionalNetworks"] = [
        {"network": "given-l2", "portSecurity": False},
        {"network": ids["given-storage"], "pools": ["workers"]},
    ]
    return {
        **config,
        "ocp:machineNetwork": CIDR,
        "ocp:loadBalancer": "UserManaged",
        "ocp:masters": {**config["ocp:masters"], "count": 1},
        "ocp:workers": {**config["ocp:workers"], "count": 1, "maxCount": 10},
        "ocp:bootstrap": {**config["ocp:bootstrap"], "helper": {"floatingIp": False}},
        "ocp:openstack": openstack,
    }


@pytest.fixture(scope="module")
def given(cloud) -> Iterator[dict[str, str]]:
    ids = sdk(cloud, GIVEN, project_name=cloud.project, cidr=CIDR)
    yield ids
    sdk(cloud, REMOVE, ids=ids)


@pytest.fixture(scope="module", params=["dev", "standalone"])
def stack(request, given, cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    yield from openstack_stack(
        request.param, tmp_path_factory.mktemp(f"{request.param}-given"), cloud, cloud_env, edit=lambda config: given_stack(config, given)
    )


def test_a_cluster_on_given_networks_is_made_as_they_are_described_and_leaves_them_as_they_were(stack, cloud, given):
    before = sdk(cloud, SEEN, ids=given)
    stack.up()
    infra = infra_id(stack)
    made = sdk(cloud, PORTS, ids=given, infra=infra)
    assert not [item for item in made if "router" in item or "floating_ip" in item], made
    ports = [item for item in made if "name" in item]
    by_network: dict[str, list[dict]] = {}
    for port in ports:
        by_network.setdefault(port["network"], []).append(port)
    names = {port["name"] for port in by_network["given-provider"]}
    masters = {name for name in names if "master" in name}
    workers = {name for name in names if "worker" in name}
    assert len(masters) == 1 and len(workers) == 1, names
    # No VIP ports: the user's balancer holds the VIPs, so no node port lets them through either.
    assert not [port for port in ports if not any(role in port["name"] for role in ("master", "worker", "bootstrap"))], ports
    assert all(port["pairs"] == [] for port in ports), ports
    # The L2 network: no port security, so the workers only (neither the masters nor the bootstrap), no groups.
    assert {port["name"] for port in by_network["given-l2"]} == workers
    assert all(port["port_security"] is False and port["groups"] == [] and port["fixed_ips"] == [] for port in by_network["given-l2"]), by_network["given-l2"]
    # The storage network: the workers only, with the node's groups.
    assert {port["name"] for port in by_network["given-storage"]} == workers
    primary = {port["name"]: port["groups"] for port in by_network["given-provider"]}
    for port in by_network["given-storage"]:
        assert port["groups"] == primary[port["name"]] and port["groups"], (port, primary)
    # The adopted network: the installer's tag in integrated mode (the Machine API's fallback), nothing else.
    during = sdk(cloud, SEEN, ids=given)
    tag = [f"{infra}-primaryClusterNetwork"] if stack.name == "dev" else []
    assert during["given-provider"]["tags"] == tag, during
    assert {name: {k: v for k, v in seen.items() if k not in ("tags", "ports")} for name, seen in during.items()} == {
        name: {k: v for k, v in seen.items() if k not in ("tags", "ports")} for name, seen in before.items()
    }
    outputs = stack.outputs()
    assert outputs.get("apiFloatingIp") is None and outputs.get("ingressFloatingIp") is None, outputs
    assert "10.30.0.5 api." in outputs["etcHosts"] and "10.30.0.7 " in outputs["etcHosts"], outputs["etcHosts"]
    # The given network's MTU, which the install holds against OVN-Kubernetes' needs; what the user's balancer fronts.
    assert outputs["networkMtu"] == before["given-provider"]["mtu"], outputs
    pools = outputs["loadBalancerPools"]
    assert pools["api"]["frontend"] == "10.30.0.5:6443" and set(pools["api"]["members"].values()) == {"10.30.0.10:6443", "10.30.0.20:6443"}, pools
    destroyed = stack.destroy()
    assert destroyed.returncode == 0, (destroyed.stdout + destroyed.stderr)[-6000:]
    assert sdk(cloud, SEEN, ids=given) == before


def test_floating_ips_on_the_given_network_without_a_router_are_refused_before_anything(stack, cloud, given):
    """Issue 50, finding 7: the dev stack on a network and subnet made beforehand, router left false, as a new user
    writes it. A floating IP planned there (the API's) is refused by the real preview, naming the key, and nothing
    is made (before, `pulumi up` made 87 resources and failed at the bootstrap's floating IP: Neutron's "External
    network ... is not reachable from subnet ..."). The bootstrap's, left at its default, is off there."""
    before = sdk(cloud, SEEN, ids=given)
    config = {key: value for key, value in stack.base.items() if key != "ocp:loadBalancer"}
    openstack = {**structured(config["ocp:openstack"]), "externalNetwork": "external"}
    config["ocp:bootstrap"] = json.dumps({key: value for key, value in structured(config["ocp:bootstrap"]).items() if key != "helper"})
    steps, output = stack.steps({**config, "ocp:openstack": json.dumps({**openstack, "apiFloatingIp": "create"})})
    assert steps is None, output[-4000:]
    assert (
        'ocp:openstack.apiFloatingIp: floating IPs on externalNetwork "external" reach a port on subnet "given-v4" only through '
        'a router with an interface on that subnet and its gateway on "external", and the subnet has none'
    ) in " ".join(output.split()), output[-4000:]
    assert stack.state() == [] and sdk(cloud, SEEN, ids=given) == before
    # None asked for: the bootstrap's floating IP, unset, is off on a network given without a router.
    steps, output = stack.steps({**config, "ocp:openstack": json.dumps(openstack)})
    stack.write_config(stack.base)
    assert steps is not None, output[-4000:]
    assert "ocp4-bootstrap-node" in steps and not [name for name in steps if name.endswith("-fip")], sorted(steps)
