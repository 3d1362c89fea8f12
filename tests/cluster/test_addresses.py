"""The address plan: fixed, collision-free, DHCP-free, and stable when the cluster changes."""

from __future__ import annotations

import json
from ipaddress import IPv4Address

import pytest

from cluster.addresses import plan_addresses
from cluster.config import ConfigError, load_config
from tests.conftest import stack_config, with_section


def plan_for(**sections):
    config = stack_config("dev")
    for key, changes in sections.items():
        config = with_section(config, key, **changes) if isinstance(changes, dict) else {**config, f"ocp:{key}": changes}
    return plan_addresses(load_config(config))


def in_pools(plan, address: IPv4Address) -> bool:
    return any(start <= address <= end for start, end in plan.allocation_pools)


def test_installer_default_vips():
    plan = plan_for()
    assert (plan.api_vip, plan.ingress_vip) == (IPv4Address("10.0.0.5"), IPv4Address("10.0.0.7"))


def test_node_addresses_of_the_dev_stack():
    plan = plan_for()
    assert {node.name: str(node.ip) for node in plan.nodes} == {
        "ocp4-bootstrap": "10.0.0.10",
        "ocp4-master-0": "10.0.0.20",
        "ocp4-master-1": "10.0.0.21",
        "ocp4-master-2": "10.0.0.22",
        "ocp4-worker-0": "10.0.0.30",
        "ocp4-worker-1": "10.0.0.31",
    }
    assert str(plan.helper_ip) == "10.0.0.11" and str(plan.gateway) == "10.0.0.1"


def test_dhcp_pool_excludes_every_vip_and_reserved_address():
    plan = plan_for(workers={"count": 7})
    reserved = [plan.api_vip, plan.ingress_vip, plan.gateway, plan.bootstrap.ip, plan.helper_ip]
    reserved += [node.ip for node in plan.master_slots + plan.worker_slots]
    assert not [address for address in reserved if in_pools(plan, address)]
    assert plan.allocation_pools[0][0] == IPv4Address("10.0.0.130")  # after 100 worker slots
    assert plan.allocation_pools[-1][1] == IPv4Address("10.0.255.254")


def test_a_vip_at_the_top_of_the_network_splits_the_pool():
    plan = plan_for(apiVip="10.0.200.5")
    assert not in_pools(plan, IPv4Address("10.0.200.5"))
    assert [(str(a), str(b)) for a, b in plan.allocation_pools] == [
        ("10.0.0.130", "10.0.200.4"),
        ("10.0.200.6", "10.0.255.254"),
    ]


@pytest.mark.parametrize("count", [0, 1, 5, 60])
def test_scaling_workers_never_moves_an_existing_node(count):
    before = {node.name: node.ip for node in plan_for(workers={"count": 2}).nodes}
    after = {node.name: node.ip for node in plan_for(workers={"count": count}).nodes}
    assert all(after[name] == ip for name, ip in before.items() if name in after)
    assert plan_for(workers={"count": count}).allocation_pools == plan_for().allocation_pools


def test_removing_the_bootstrap_moves_no_one():
    with_bootstrap = plan_for()
    without = plan_for(bootstrap={"enabled": False})
    assert [n for n in with_bootstrap.nodes if n.role != "bootstrap"] == list(without.nodes)


def test_compact_cluster_runs_ingress_on_masters():
    assert plan_for(workers={"count": 0}).router_slots == plan_for(workers={"count": 0}).master_slots


@pytest.mark.parametrize("count", [1, 2, 5, 60])
def test_router_slots_do_not_depend_on_the_worker_count(count):
    assert [node.name for node in plan_for(workers={"count": count}).router_slots] == [
        "ocp4-worker-0", "ocp4-worker-1", "ocp4-worker-2"
    ]


def test_worker_slots_that_do_not_fit_are_an_error():
    config = with_section(stack_config("dev", machineNetwork="192.168.10.0/24"), "workers", maxCount=250)
    with pytest.raises(ConfigError, match="ocp:workers.maxCount"):
        plan_addresses(load_config(config))


def test_a_vip_outside_the_network_is_an_error():
    with pytest.raises(ConfigError, match="ocp:ingressVip: 192.168.0.7 is not a host address"):
        plan_for(ingressVip="192.168.0.7")


def dual_plan(machine: list[str], **keys):
    ordered = {"fd00:10::/64": ("fd01::/48", "fd02::/112")}
    cluster = [{"cidr": ordered[m][0], "hostPrefix": 64} if ":" in m else {"cidr": "10.128.0.0/14", "hostPrefix": 23} for m in machine]
    service = [ordered[m][1] if ":" in m else "172.30.0.0/16" for m in machine]
    given = {"existingNetwork": {"networkId": "given", "subnetId": [f"subnet-v{m.count(':') and 6 or 4}" for m in machine]}}
    return plan_for(
        machineNetwork=json.dumps(machine), clusterNetwork=json.dumps(cluster), serviceNetwork=json.dumps(service), openstack=given, **keys
    )


@pytest.mark.parametrize("machine", [["10.0.0.0/16", "fd00:10::/64"], ["fd00:10::/64", "10.0.0.0/16"]])
def test_two_families_put_each_node_and_vip_at_the_same_offset_of_each_network(machine):
    plan = dual_plan(machine)
    assert [str(n) for n in plan.networks] == machine and plan.network == plan.networks[0]
    master = {"10.0.0.0/16": "10.0.0.20", "fd00:10::/64": "fd00:10::14"}
    assert [str(ip) for ip in plan.masters[0].ips] == [master[m] for m in machine]
    assert plan.masters[0].ip == plan.masters[0].ips[0]
    apis = {"10.0.0.0/16": "10.0.0.5", "fd00:10::/64": "fd00:10::5"}
    ingresses = {"10.0.0.0/16": "10.0.0.7", "fd00:10::/64": "fd00:10::7"}
    assert [str(v) for v in plan.api_vips] == [apis[m] for m in machine]
    assert [str(v) for v in plan.ingress_vips] == [ingresses[m] for m in machine]
    assert plan.api_vip == plan.api_vips[0] and plan.gateway == plan.gateways[0]
    gateways = {"10.0.0.0/16": "10.0.0.1", "fd00:10::/64": "fd00:10::1"}
    assert [str(g) for g in plan.gateways] == [gateways[m] for m in machine]


def test_the_second_familys_pools_cut_out_its_vips():
    plan = dual_plan(["10.0.0.0/16", "fd00:10::/64"], apiVip=json.dumps(["10.0.0.5", "fd00:10::ff00"]))
    assert plan.allocation_pools == plan.family_pools[0]
    assert [(str(a), str(b)) for a, b in plan.family_pools[1]] == [
        ("fd00:10::82", "fd00:10::feff"),
        ("fd00:10::ff01", "fd00:10::ffff:ffff:ffff:fffe"),
    ]


def test_one_family_plans_as_before():
    plan = plan_for()
    assert plan.networks == (plan.network,) and plan.masters[0].ips == (IPv4Address("10.0.0.20"),)
    assert plan.api_vips == (IPv4Address("10.0.0.5"),) and plan.family_pools == (plan.allocation_pools,)
