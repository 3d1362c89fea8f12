"""The example worker MachineSet the plan writes for an integrated cluster."""

from __future__ import annotations

from cluster.config import load_config
from cluster.machineset import worker_machineset
from tests.conftest import stack_config, with_section


def provider_of(config: dict[str, str]) -> dict:
    machineset = worker_machineset(load_config(config), "ocp4-x7k2p")
    return machineset["spec"]["template"]["spec"]["providerSpec"]["value"]


def test_workers_on_the_flavors_disk_name_the_image():
    provider = provider_of(stack_config("dev"))
    assert provider["image"] == "rhcos" and "rootVolume" not in provider and "availabilityZone" not in provider


def test_root_volume_and_zones_follow_the_stacks_workers():
    config = with_section(
        stack_config("dev"), "workers", availabilityZones=["az1", "az2"],
        rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1", "storage-2"]},
    )
    provider = provider_of(config)
    assert "image" not in provider
    # A MachineSet places every Machine in one zone pair: the first, as the stack's worker-0.
    assert provider["availabilityZone"] == "az1"
    assert provider["rootVolume"] == {"diskSize": 120, "sourceUUID": "rhcos", "volumeType": "ssd", "availabilityZone": "storage-1"}
