"""Failure domains as upstream makes them (issue 43, item 2), through the program's registrations: a
server group per zone (and per serverGroupSize slice in a zone) where the stack asks for it, each
root volume of its zone's type, the install-config's rootVolume.types, the cleanup told which groups
are the program's; and a stack written before these keys registers exactly what it did."""

from __future__ import annotations

import json

import yaml

from cluster.cleanup import CLEANUP_SCRIPT, OWN_GROUP_ZONES
from tests.conftest import deploy, preview, run, stack_config, with_section
from tools.mock_run import unwrap

INSTANCE = "openstack:compute/instance:Instance"
VOLUME = "openstack:blockstorage/volume:Volume"
GROUP = "openstack:compute/serverGroup:ServerGroup"
ZONES = ["az1", "az2", "nova"]
VOLUME_ZONES = ["storage-1", "storage-2", "nova"]
TYPES = ["ssd-az1", "ssd-az2", "ssd"]


def three_zones(config: dict[str, str], workers: int = 5, **worker_keys) -> dict[str, str]:
    volume = {"size": 120, "types": TYPES, "availabilityZones": VOLUME_ZONES}
    config = with_section(config, "masters", availabilityZones=ZONES, rootVolume=volume, serverGroupPerZone=True)
    return with_section(config, "workers", count=workers, availabilityZones=ZONES, rootVolume=volume, serverGroupPerZone=True, **worker_keys)


def placed(program_run) -> tuple[dict[str, str], dict[str, dict]]:
    """Each server's group name, and each server's zone, root volume type and volume zone."""
    groups = {r.id: unwrap(r.inputs["name"]) for r in program_run.of_type(GROUP)}
    volumes = {r.id: r for r in program_run.of_type(VOLUME)}
    where = {}
    for server in program_run.of_type(INSTANCE):
        if "-bootstrap" in server.name:
            continue
        devices = unwrap(server.inputs.get("blockDevices")) or [{}]
        volume = volumes[devices[0]["uuid"]].inputs if devices[0].get("sourceType") == "volume" else {}
        where[unwrap(server.inputs["name"])] = {
            "group": groups[unwrap(server.inputs["schedulerHints"])[0]["group"]],
            "zone": unwrap(server.inputs.get("availabilityZone")),
            "type": unwrap(volume.get("volumeType", devices[0].get("volumeType"))),
            "volume zone": unwrap(volume.get("availabilityZone")),
        }
    return groups, where


def test_each_zone_has_its_group_and_each_node_its_zones_volume_type():
    program_run = run(three_zones(stack_config("dev"), serverGroupSize=1))
    infra = program_run.outputs["infraId"]
    groups, where = placed(program_run)
    # Upstream's names: <infraID>-worker-<zone>; serverGroupSize slices a zone's: -<zone>-1, ...
    assert sorted(groups.values()) == sorted(
        [f"{infra}-master-{zone}" for zone in ZONES] + [f"{infra}-worker-{zone}" for zone in ZONES] + [f"{infra}-worker-az1-1", f"{infra}-worker-az2-1"]
    )
    for index in range(5):
        zone = index % 3
        assert where[f"{infra}-worker-{index}"] == {
            "group": f"{infra}-worker-{ZONES[zone]}" + ("-1" if index >= 3 else ""),
            "zone": ZONES[zone], "type": TYPES[zone], "volume zone": VOLUME_ZONES[zone],
        }
    for index in range(3):
        assert where[f"{infra}-master-{index}"] == {"group": f"{infra}-master-{ZONES[index]}", "zone": ZONES[index], "type": TYPES[index], "volume zone": VOLUME_ZONES[index]}


def test_the_install_config_pairs_the_types_with_the_zones_as_upstream():
    program_run = run(three_zones(stack_config("dev")))
    installer = next(r for r in program_run.resources if r.name == "installer-run")
    environment = unwrap(installer.inputs["environment"])
    document = yaml.safe_load(environment["INSTALL_CONFIG"])
    for pool in (document["controlPlane"], document["compute"][0]):
        volume = pool["platform"]["openstack"]["rootVolume"]
        assert volume == {"size": 120, "types": TYPES, "zones": VOLUME_ZONES}
        assert pool["platform"]["openstack"]["zones"] == ZONES


def test_the_cleanup_leaves_the_programs_own_zone_groups_to_the_engine():
    per_zone = run(three_zones(stack_config("dev")))
    script = unwrap(per_zone.by_name("ocp4-cleanup-on-destroy").inputs["delete"])
    assert script.startswith(f"export {OWN_GROUP_ZONES}=") and json.dumps({"master": ZONES, "worker": ZONES}, sort_keys=True) in script
    # Without per-zone groups the script is the one stacks have always had.
    one_group = run(with_section(stack_config("dev"), "workers", availabilityZones=["az1", "az2"]))
    assert unwrap(one_group.by_name("ocp4-cleanup-on-destroy").inputs["delete"]) == CLEANUP_SCRIPT


def test_a_stack_with_zones_and_one_group_keeps_it():
    """Written before serverGroupPerZone (or without it): one group across the zones, as before."""
    config = with_section(
        stack_config("dev"), "workers", count=3, availabilityZones=["az1", "az2"],
        rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1", "storage-2"]},
    )
    program_run = run(config)
    infra = program_run.outputs["infraId"]
    groups, where = placed(program_run)
    assert sorted(groups.values()) == [f"{infra}-master", f"{infra}-worker"]
    assert {w["group"] for name, w in where.items() if "-worker-" in name} == {f"{infra}-worker"}
    assert {w["type"] for w in where.values() if w["type"]} <= {"ssd"}


def test_scaling_a_zone_stack_keeps_every_group_and_server():
    """Workers 5 -> 7 and 5 -> 4 with a group per zone and slices of 1: the new ones make their zone's
    next group; the last goes with its group; nothing running is replaced or moved."""
    state = deploy(three_zones(stack_config("dev"), serverGroupSize=1))
    grown = preview(state, three_zones(stack_config("dev"), workers=7, serverGroupSize=1))
    assert grown.error is None, grown.error
    changed = {name: c.action for name, c in grown.changes.items() if c.action != "same"}
    assert set(changed.values()) == {"create"}, changed
    assert {name for name in changed if "server-group" in name} == {"ocp4-workers-server-group-nova-1", "ocp4-workers-server-group-az1-2"}
    shrunk = preview(state, three_zones(stack_config("dev"), workers=4, serverGroupSize=1))
    assert shrunk.error is None, shrunk.error
    gone = {name: c.action for name, c in shrunk.changes.items() if c.action != "same"}
    assert set(gone.values()) == {"delete"}, gone
    assert {name for name in gone if "server-group" in name} == {"ocp4-workers-server-group-az2-1"}


def test_a_stack_recorded_before_the_layout_key_cannot_take_a_group_per_zone():
    """Its install record lacks serverGroupPerZone: it was made with one group across its zones."""
    from tests.test_day2 import _without_in_record

    zones = with_section(stack_config("dev"), "workers", availabilityZones=["az1", "az2"])
    older = _without_in_record(deploy(zones), "workers.serverGroupPerZone")
    assert preview(older, zones).error is None
    result = preview(older, with_section(zones, "workers", serverGroupPerZone=True))
    assert result.error is not None and "ocp:workers.serverGroupPerZone: was false at install, now true" in result.error
