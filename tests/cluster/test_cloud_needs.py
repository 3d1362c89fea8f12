"""What a stack takes of its project's quotas (cluster/cloud_needs.py), beside what a cloud has free."""

from __future__ import annotations

from cluster.addresses import plan_addresses
from cluster.cloud_facts import Flavor, Quota
from cluster.cloud_needs import quota_needs
from cluster.config import load_config
from tests.conftest import stack_config, with_section

FLAVORS = {"master": Flavor(4, 16384, 40), "worker": Flavor(2, 8192, 40)}


def _needs(config, flavors=FLAVORS, quotas=None):
    settings = load_config(config)
    return {row.key: row for row in quota_needs(settings, plan_addresses(settings), flavors, quotas)}


def test_sizes_come_from_the_flavors_and_are_unknown_without_them():
    rows = _needs(stack_config("dev"))
    assert (rows["cores"].need, rows["ram"].need) == (4 * 4 + 2 * 2, 4 * 16384 + 2 * 8192)  # bootstrap and 3 masters, 2 workers
    rows = _needs(stack_config("dev"), flavors={"master": FLAVORS["master"]})
    assert (rows["cores"].need, rows["ram"].need, rows["instances"].need) == (None, None, 6)
    assert rows["cores"].verdict == "not described"


def test_root_volumes_groups_and_an_existing_network():
    workers = {"count": 12, "flavor": "worker", "image": "rhcos", "serverGroupSize": 5, "rootVolume": {"size": 100}}
    config = with_section(stack_config("standalone", workers=workers), "openstack", existingNetwork={"networkId": "11111111-2222-4333-8444-555555555555", "subnetId": "11111111-2222-4333-8444-666666666666"})
    rows = _needs(config)
    assert (rows["volumes"].need, rows["gigabytes"].need) == (12, 1200)
    assert (rows["serverGroups"].need, rows["serverGroupMembers"].need) == (1 + 3, 5)  # the masters', workers in 5 + 5 + 2
    assert (rows["networks"].need, rows["subnets"].need, rows["routers"].need) == (0, 0, 0)


def test_verdicts_hold_the_need_against_what_is_free():
    quotas = {"instances": Quota(10, 5), "cores": Quota(-1), "ports": Quota(8), "routers": Quota(10, 10)}
    rows = _needs(stack_config("dev"), quotas=quotas)
    assert (rows["instances"].free, rows["instances"].verdict) == (5, "short by 1")
    assert rows["cores"].verdict == "enough (unlimited)" and rows["cores"].free is None
    assert (rows["ports"].free, rows["ports"].verdict) == (8, "short by 2")  # no usage described: the limit is free
    assert rows["routers"].verdict == "short by 1" and rows["volumes"].verdict == "not described"


def test_a_given_network_with_a_router_needs_the_router_alone_and_extra_networks_their_ports():
    given = {"networkId": "11111111-2222-4333-8444-555555555555", "subnetId": "11111111-2222-4333-8444-666666666666", "router": True}
    rows = _needs(with_section(stack_config("standalone"), "openstack", existingNetwork=given), quotas={"routers": Quota(1, 1), "networks": Quota(0)})
    assert (rows["networks"].need, rows["subnets"].need, rows["routers"].need) == (0, 0, 1)
    assert rows["routers"].verdict == "short by 1" and rows["networks"].verdict == "enough"
    plain = _needs(stack_config("dev"))["ports"].need
    extra = with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "storage", "pools": ["workers"]}])
    assert _needs(extra)["ports"].need == plain + 2  # one port per worker on it
