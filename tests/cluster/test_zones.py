"""Failure domains (issue 43, item 2), pure: the rules on rootVolume.types and per-zone groups, the
preflight's zone checks, the needs table's groups and members, the example MachineSets, and which
server groups the destroy cleanup takes."""

from __future__ import annotations

import dataclasses

import pytest

from cluster import cleanup
from cluster.addresses import plan_addresses
from cluster.cloud_facts import Existing, Quota
from cluster.cloud_needs import quota_needs
from cluster.config import ConfigError, load_config
from cluster.machineset import worker_machinesets
from cluster.preflight import footprint, problems
from tests.cluster.test_preflight import FLAVORS, facts
from tests.conftest import stack_config, with_section

ZONES = ["az1", "az2", "nova"]
VOLUME = {"size": 120, "types": ["ssd-az1", "ssd-az2", "ssd"], "availabilityZones": ["storage-1", "storage-2", "nova"]}
UNLIMITED = {name: Quota(-1) for name in ("instances", "cores", "ram", "server_groups", "server_group_members", "ports")}


def zoned(role: str = "workers", config: dict[str, str] | None = None, **keys) -> dict[str, str]:
    return with_section(config or stack_config("dev"), role, **{"availabilityZones": ZONES, "rootVolume": VOLUME, **keys})


def refusal(config: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    return refused.value.report()


def zone_facts(**changes) -> object:
    types = ("__DEFAULT__", "ssd", "ssd-az1", "ssd-az2")
    return dataclasses.replace(facts(UNLIMITED), compute_zones=tuple(ZONES), volume_zones=("nova", "storage-1", "storage-2"), volume_types=types, **changes)


def preflight(config: dict[str, str], **changes) -> list[str]:
    settings = load_config(config)
    return problems(settings, plan_addresses(settings), zone_facts(**changes))


# The rules, as the installer has them (pkg/types/openstack/validation/machinepool.go).
def test_type_and_types_together_are_refused():
    report = refusal(zoned(rootVolume={**VOLUME, "type": "ssd"}))
    assert "ocp:workers.rootVolume.type and ocp:workers.rootVolume.types are both set" in report


def test_types_of_another_length_than_the_zones_are_refused():
    report = refusal(zoned(rootVolume={**VOLUME, "types": ["ssd-az1", "ssd-az2"]}))
    assert "ocp:workers.rootVolume.types lists 2 volume types and ocp:workers.availabilityZones 3 zones" in report
    # One type serves every zone; types without zones have nothing to pair with.
    load_config(zoned(rootVolume={**VOLUME, "types": ["ssd"]}))
    report = refusal(with_section(stack_config("dev"), "masters", rootVolume={"size": 120, "types": ["a", "b"]}))
    assert "ocp:masters.rootVolume.types lists 2 volume types and ocp:masters.availabilityZones 0 zones" in report


def test_types_stand_for_type_in_integrated_mode():
    load_config(zoned("masters"))
    report = refusal(with_section(stack_config("dev"), "masters", rootVolume={"size": 120}))
    assert "ocp:masters.rootVolume.type is required in integrated mode" in report


def test_the_layout_key_is_openstacks():
    report = refusal(with_section(stack_config("kvm"), "workers", serverGroupPerZone=True))
    assert "ocp:workers.serverGroupPerZone is a openstack setting and ocp:platform is libvirt: remove it" in report


# The preflight: policies no host can meet.
def test_hard_affinity_across_zones_in_one_group_is_refused():
    found = preflight(zoned(serverGroupPolicy="affinity", count=3))
    assert [p for p in found if p.startswith("ocp:workers.serverGroupPolicy: affinity")] == [
        "ocp:workers.serverGroupPolicy: affinity puts every member of a server group on one compute host, and the workers "
        "of group <infraID>-worker are in zones az1, az2, nova (ocp:workers.availabilityZones): no host is in two zones, so "
        "Nova would refuse the second with NoValidHost halfway through `pulumi up`. Write soft-affinity, or (a new stack) "
        "ocp:workers.serverGroupPerZone: true for one group per zone"
    ]
    # A group per zone holds one zone's workers: affinity can be met; soft-affinity anyway.
    assert not [p for p in preflight(zoned(serverGroupPolicy="affinity", count=3, serverGroupPerZone=True)) if "affinity" in p]
    assert not [p for p in preflight(zoned(serverGroupPolicy="soft-affinity", count=3)) if "affinity" in p]
    # One worker, or one zone: one host can hold them.
    assert not [p for p in preflight(zoned(serverGroupPolicy="affinity", count=1)) if "affinity" in p]


def test_hard_anti_affinity_needs_a_host_per_member_of_a_group_in_its_zone():
    config = zoned(serverGroupPolicy="anti-affinity", count=6, serverGroupPerZone=True)
    found = preflight(config, zone_hosts={"az1": 1, "az2": 2, "nova": 2})
    assert [p for p in found if "anti-affinity" in p] == [
        "ocp:workers.serverGroupPolicy: anti-affinity puts each member of a server group on a compute host of its own, and "
        "2 workers of group <infraID>-worker-az1 are in zone az1, where cloud \"openstack\" has 1 host(s) up: Nova would "
        "refuse the next with NoValidHost halfway through `pulumi up`. Write soft-anti-affinity (the installer's default), "
        "add hosts to az1, or ocp:workers.serverGroupSize to at most that many"
    ]
    assert not [p for p in preflight(config, zone_hosts={"az1": 2, "az2": 2, "nova": 2}) if "anti-affinity" in p]
    # Where the cloud does not show its zones' hosts (a member's token), nothing is claimed.
    assert not [p for p in preflight(config) if "anti-affinity" in p]


def test_an_unknown_zone_type_is_named_by_its_place():
    found = preflight(zoned(rootVolume={**VOLUME, "types": ["ssd-az1", "ssd-az9", "ssd"]}))
    assert [p for p in found if "rootVolume.types" in p] == [
        'ocp:workers.rootVolume.types[1]: volume type "ssd-az9" does not exist in cloud "openstack" (types: __DEFAULT__, ssd, ssd-az1, ssd-az2)'
    ]


# The needs table and the quotas: a group per zone, and per slice in a zone.
def test_the_needs_count_each_zones_groups_and_the_fullest():
    config = load_config(zoned("workers", zoned("masters", serverGroupPerZone=True), count=7, serverGroupPerZone=True, serverGroupSize=2))
    plan = plan_addresses(config)
    # workers az1: 0, 3, 6 -> az1 (2), az1-1 (1); az2: 1, 4; nova: 2, 5. Masters one a zone.
    assert config.workers.server_groups(7) == {"-az1": 2, "-az2": 2, "-nova": 2, "-az1-1": 1}
    assert footprint(config, plan, FLAVORS)["server_groups"] == 3 + 4
    needs = {need.key: need.need for need in quota_needs(config, plan, FLAVORS, None)}
    assert needs["serverGroups"] == 7 and needs["serverGroupMembers"] == 2
    # What the cloud already holds, read group by group: nothing more to add.
    existing = Existing(masters=3, workers=7, worker_groups=(2, 2, 2, 1), master_groups=(1, 1, 1))
    assert footprint(config, plan, FLAVORS, existing)["server_groups"] == 7


def test_a_running_worker_never_changes_group_in_its_zone():
    config = zoned(count=6, serverGroupPerZone=True, serverGroupSize=2)
    running = Existing(masters=3, workers=6, worker_groups=(2, 2, 2))
    found = preflight(with_section(config, "workers", serverGroupSize=1), existing=running)
    assert [p for p in found if p.startswith("ocp:workers.serverGroupSize")] == [
        "ocp:workers.serverGroupSize: the 6 running workers are in server groups of [2, 2, 2] members; with 1 some would "
        "change group, and Nova cannot move a server: they would be replaced. To keep them where they are, write serverGroupSize: 2"
    ]
    assert not [p for p in preflight(config, existing=running) if p.startswith("ocp:workers.serverGroupSize")]


# The example MachineSets: one per zone, as upstream's.
def test_one_machineset_per_zone_with_its_zone_type_volume_zone_and_group():
    machinesets = worker_machinesets(load_config(zoned(serverGroupPerZone=True)), "ocp4-x7k2p")
    assert [m["metadata"]["name"] for m in machinesets] == [f"ocp4-x7k2p-worker-extra-{i}" for i in range(3)]
    for index, machineset in enumerate(machinesets):
        provider = machineset["spec"]["template"]["spec"]["providerSpec"]["value"]
        assert machineset["spec"]["selector"]["matchLabels"]["machine.openshift.io/cluster-api-machineset"] == machineset["metadata"]["name"]
        assert provider["availabilityZone"] == ZONES[index]
        assert provider["rootVolume"] == {"diskSize": 120, "sourceUUID": "rhcos", "volumeType": VOLUME["types"][index], "availabilityZone": VOLUME["availabilityZones"][index]}
        assert provider["serverGroupName"] == f"ocp4-x7k2p-worker-{ZONES[index]}"
        assert provider["networks"][0]["subnets"] == [{"filter": {"tags": "openshiftClusterID=ocp4-x7k2p"}}]


def test_a_machineset_never_joins_a_group_server_group_size_fills():
    for keys in ({"serverGroupPerZone": True}, {}):
        machinesets = worker_machinesets(load_config(zoned(serverGroupSize=3, **keys)), "ocp4-x7k2p")
        names = [m["spec"]["template"]["spec"]["providerSpec"]["value"]["serverGroupName"] for m in machinesets]
        assert names == [f"ocp4-x7k2p-worker-extra-{i}" for i in range(3)]
    one = worker_machinesets(load_config(with_section(stack_config("dev"), "workers", serverGroupSize=3)), "ocp4-x7k2p")
    assert [m["spec"]["template"]["spec"]["providerSpec"]["value"]["serverGroupName"] for m in one] == ["ocp4-x7k2p-worker-extra"]
    # Zones with one group across them: every zone's MachineSet joins it, as before.
    shared = worker_machinesets(load_config(zoned()), "ocp4-x7k2p")
    assert {m["spec"]["template"]["spec"]["providerSpec"]["value"]["serverGroupName"] for m in shared} == {"ocp4-x7k2p-worker"}


# The destroy cleanup: the program's groups are the engine's to delete, the Machine API's its own.
def test_the_cleanup_tells_the_programs_zone_groups_from_the_machine_apis():
    infra, own = "ocp4-x7k2p", {"worker": ZONES, "master": ZONES}
    for name in ("ocp4-x7k2p-worker-az1", "ocp4-x7k2p-worker-az1-1", "ocp4-x7k2p-master-nova", "ocp4-x7k2p-worker", "ocp4-x7k2p-worker-2"):
        assert cleanup.own_server_group(infra, name, own)
        assert not cleanup.machine_server_group(infra, name, [], ZONES, own)
    # Without per-zone groups of the program's, upstream's names are the Machine API's.
    assert cleanup.machine_server_group(infra, "ocp4-x7k2p-worker-az1", [], ZONES, {})
    # The example MachineSets' own groups (serverGroupSize) are the Machine API's, never the program's.
    for name in ("ocp4-x7k2p-worker-extra", "ocp4-x7k2p-worker-extra-2"):
        assert not cleanup.own_server_group(infra, name, own)
        assert cleanup.machine_server_group(infra, name, [], ZONES, own)
        assert not cleanup.machine_server_group(infra, name, ["a-member"], ZONES, own)
