"""Failure domains as upstream makes them (issue 43, item 2), with the real engine, the OpenStack plugin,
the real installer and the local cloud: its compute zones az1, az2 and nova (Nova's default zone: its host is in
no aggregate, so Nova places a server asking for it on any host), its Cinder zones storage-1, storage-2 and nova,
and a volume type per zone (ssd-az1 and ssd-az2 held to storage-1 and storage-2 by `RESKEY:availability_zones`,
harness/localcloud/operator.py, so Cinder refuses a volume of the wrong type for its zone; ssd for nova).

One stack, two lives. First as a stack made before these keys: this program's previous commit makes
it (zones, one server group across them, one volume type), and the current program's preview leaves
every resource as it is and refuses a group per zone. Then, destroyed and made again by the current
program with a group per zone and a type per zone: the offline plan, the preview and `up`, read back
through the cloud's API (each server in its zone and its zone's group, each root volume of its zone's
type in its volume zone) and the plan's example MachineSets, one per zone with that zone's group."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness import ccm, kubeapi
from tests.conftest import ROOT
from tests.localcloud import cloud_controller
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, flat, needs, structured
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))

# The program before rootVolume.types and serverGroupPerZone (issue 43 item 1's review).
BEFORE = "1029279"
# What the current program adds to a stack BEFORE made: issue 50's mark before the destroy's sweep (components/openstack/cleanup.py).
SINCE_BEFORE = {"ocp4-cleanup-mark-on-destroy": "create"}
ZONES = ["az1", "az2", "nova"]
VOLUME_ZONES = ["storage-1", "storage-2", "nova"]
TYPES = ["ssd-az1", "ssd-az2", "ssd"]
# Each server of the infra ID: its zone, its server group (by the groups' members), its root volume's type and zone.
PLACED = """
groups = {m: g.name for g in tenant.compute.server_groups() if (g.name or "").startswith(infra) for m in g.member_ids or []}
result = {}
for s in tenant.compute.servers(details=True):
    if not (s.name or "").startswith(infra):
        continue
    volumes = [tenant.block_storage.get_volume(v["id"]) for v in s.attached_volumes or []]
    result[s.name] = {
        "zone": s.availability_zone, "group": groups.get(s.id), "status": s.status,
        "volumes": [{"type": v.volume_type, "zone": v.availability_zone, "status": v.status} for v in volumes],
    }
result = {"servers": result, "groups": sorted({g.name for g in tenant.compute.server_groups() if (g.name or "").startswith(infra)})}
"""


def legacy(config: dict) -> dict:
    """A small stack with zones as it was written before the keys: one group, one volume type."""
    volume = {"size": 25, "type": "ssd", "availabilityZones": ["storage-1", "storage-2"]}
    return {
        **config,
        "ocp:masters": {**config["ocp:masters"], "count": 1, "availabilityZones": ["az1"], "rootVolume": {**volume, "availabilityZones": ["storage-1"]}},
        "ocp:workers": {**config["ocp:workers"], "count": 2, "availabilityZones": ["az1", "az2"], "rootVolume": volume},
    }


def per_zone(config: dict) -> dict:
    volume = {"size": 25, "types": TYPES, "availabilityZones": VOLUME_ZONES}
    zoned = {"availabilityZones": ZONES, "rootVolume": volume, "serverGroupPerZone": True}
    return flat({
        **{key: structured(value) for key, value in config.items()},
        "ocp:masters": {**structured(config["ocp:masters"]), "count": 3, **zoned},
        "ocp:workers": {**structured(config["ocp:workers"]), "count": 3, **zoned},
    })


def program_of(project: Path, commit: str | None) -> None:
    """The stack's copy of the program: `commit`'s files (git archive), or the working tree's again."""
    if commit is None:
        ignore = shutil.ignore_patterns(".git", ".toolchain", "venv", "build", "assets", "tests", "__pycache__", "Pulumi.*.yaml")
        shutil.copytree(ROOT, project, ignore=ignore, dirs_exist_ok=True, symlinks=True)
        return
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(project), "--exclude=tests", "--exclude=Pulumi.*.yaml"], input=archive, check=True)


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    if not (ROOT / ".git").exists():
        pytest.skip("needs the project's git history")
    yield from openstack_stack("dev", tmp_path_factory.mktemp("zones"), cloud, cloud_env, edit=legacy)


def test_a_stack_with_zones_made_before_keeps_its_group_and_cannot_take_one_per_zone(stack, cloud):
    program_of(stack.project, BEFORE)
    stack.up()
    program_of(stack.project, None)
    steps, output = stack.steps(stack.base)
    assert steps is not None, output[-3000:]
    # Nothing changes but what the release adds to every integrated stack (CHANGELOG): the destroy's mark, a command whose create runs `true`.
    assert {name: action for name, action in steps.items() if action != "same"} == SINCE_BEFORE, output[-3000:]
    infra = infra_id(stack)
    seen = sdk(cloud, PLACED, infra=infra)
    assert seen["groups"] == [f"{infra}-master", f"{infra}-worker"]
    assert {s["group"] for name, s in seen["servers"].items() if "-worker-" in name} == {f"{infra}-worker"}
    refused, output = stack.steps(flat({**stack.base, "ocp:workers": {**structured(stack.base["ocp:workers"]), "serverGroupPerZone": True}}))
    assert refused is None and "ocp:workers.serverGroupPerZone: was false at install, now true" in output, output[-3000:]
    stack.write_config(stack.base)
    done = stack.destroy()
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def test_three_zones_each_with_its_group_and_volume_type(stack, cloud, tmp_path):
    config = per_zone(stack.base)
    # The offline plan of the same stack file: its needs and its example MachineSets.
    plan_file = tmp_path / "Pulumi.zones.yaml"
    plan_file.write_text(yaml.safe_dump({"config": {k: structured(v) for k, v in config.items() if k != "ocp:pullSecret"}}))
    planned = subprocess.run([sys.executable, "-m", "tools.plan", "--config-file", str(plan_file), "--out", str(tmp_path / "plan"),
                              "--cloud", str(ROOT / "samples" / "cloud" / "dev.yaml")],
                             cwd=ROOT, capture_output=True, text=True)
    assert planned.returncode == 0, planned.stderr[-3000:]
    machinesets = list(yaml.safe_load_all((tmp_path / "plan" / "machinesets" / "worker.yaml").read_text()))
    needs = yaml.safe_load((tmp_path / "plan" / "needs.yaml").read_text())["quotas"]
    assert needs["serverGroups"]["need"] == 6 and needs["serverGroupMembers"]["need"] == 1, needs
    steps, output = stack.steps(config)
    assert steps is not None, output[-3000:]
    # A new cluster (the first was destroyed): every group per zone is made, none of one across them.
    assert {name for name, action in steps.items() if "server-group" in name} == {
        f"{pool}-server-group-{zone}" for pool in ("ocp4-control-plane", "ocp4-workers") for zone in ZONES
    }, steps
    stack.up(config)
    infra = infra_id(stack)
    seen = sdk(cloud, PLACED, infra=infra)
    assert seen["groups"] == sorted(f"{infra}-{role}-{zone}" for role in ("master", "worker") for zone in ZONES)
    for role in ("master", "worker"):
        for index, zone in enumerate(ZONES):
            server = seen["servers"][f"{infra}-{role}-{index}"]
            assert server["group"] == f"{infra}-{role}-{zone}", server
            # Nova finds a zone through its aggregate (placement's pre-filter): the default zone, whose host is in none
            # here, places anywhere, so only the aggregates' zones are held to their hosts.
            assert server["zone"] == zone or zone == "nova", server
            assert server["volumes"] == [{"type": TYPES[index], "zone": VOLUME_ZONES[index], "status": "in-use"}], server
    # One MachineSet per zone: its zone, its zone's volume type and Cinder zone, and the group its zone's workers are in.
    planned_infra = machinesets[0]["metadata"]["labels"]["machine.openshift.io/cluster-api-cluster"]
    assert len(machinesets) == 3
    for index, machineset in enumerate(machinesets):
        provider = machineset["spec"]["template"]["spec"]["providerSpec"]["value"]
        group = provider["serverGroupName"].replace(planned_infra, infra)
        worker = seen["servers"][f"{infra}-worker-{index}"]
        assert (provider["availabilityZone"], group) == (ZONES[index], worker["group"])
        assert (provider["rootVolume"]["volumeType"], provider["rootVolume"]["availabilityZone"]) == (worker["volumes"][0]["type"], worker["volumes"][0]["zone"])
    # The real cloud controller labels each node with its server's zone: the zone its MachineSet names.
    if not (ccm.missing() or kubeapi.missing()):
        got, _, _ = cloud_controller.initialized_as_planned(stack, infra, tmp_path / "controller", config=config)
        for role in ("master", "worker"):
            zones = [got[f"{infra}-{role}-{index}"]["metadata"]["labels"]["topology.kubernetes.io/zone"] for index in range(3)]
            assert all(zone == wanted or wanted == "nova" for zone, wanted in zip(zones, ZONES)), (role, zones)
        assert [got[f"{infra}-worker-{index}"]["metadata"]["labels"]["topology.kubernetes.io/zone"] for index in range(2)] == [
            machineset["spec"]["template"]["spec"]["providerSpec"]["value"]["availabilityZone"] for machineset in machinesets[:2]
        ]
    again, output = stack.steps(config)
    assert again is not None and {name: action for name, action in again.items() if action != "same"} == {}, output[-3000:]
