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


def test_the_credentials_are_found_under_the_installers_name_for_the_cloud():
    # The installer keeps the stack's clouds.yaml entry in the cluster as "openstack", whatever its name here.
    config = with_section(stack_config("dev"), "openstack", cloud="lab-cloud")
    config["openstack:cloud"] = "lab-cloud"
    provider = provider_of(config)
    assert provider["cloudName"] == "openstack"
    assert provider["cloudsSecret"] == {"name": "openstack-cloud-credentials", "namespace": "openshift-machine-api"}


def test_workers_without_an_image_of_their_own_boot_the_default_not_the_masters():
    config = with_section(with_section(stack_config("dev"), "masters", image="rhcos-4.17"), "workers", image=None)
    assert provider_of(config)["image"] == "rhcos"


def test_its_server_group_is_the_one_the_stack_keeps_at_any_worker_count():
    """MAPO looks the group up by name and makes one when none exists: the name must be the
    workers' group of the stack, which exists at 0 workers too (never a second of one name)."""
    from tests.conftest import run
    from tools.mock_run import unwrap

    compact = run(with_section(stack_config("dev"), "workers", count=0))
    infra_id = compact.outputs["infraId"]
    groups = {unwrap(r.inputs["name"]) for r in compact.of_type("openstack:compute/serverGroup:ServerGroup")}
    provider = worker_machineset(load_config(with_section(stack_config("dev"), "workers", count=0)), infra_id)
    name = provider["spec"]["template"]["spec"]["providerSpec"]["value"]["serverGroupName"]
    assert name == f"{infra_id}-worker" and name in groups


def test_machines_land_on_the_given_subnet_with_the_workers_extra_networks_as_described():
    subnet, storage = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
    group = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
    config = with_section(
        stack_config("dev"),
        "openstack",
        existingNetwork={"networkId": "ocp-vlan-210", "subnetId": subnet},
        additionalNetworks=[
            {"network": "storage-vlan-204", "pools": ["workers"], "portSecurity": False},
            {"network": storage, "vnicType": "direct"},
            {"network": "masters-only", "pools": ["masters"]},
        ],
    )
    provider = provider_of(with_section(config, "workers", additionalSecurityGroupIds=[group]))
    # The Machine API takes the machine's address from primarySubnet (the tag is its fallback only).
    assert provider["primarySubnet"] == subnet
    assert provider["networks"] == [
        {"filter": {"name": "ocp-vlan-210"}, "subnets": [{"uuid": subnet}]},
        {"filter": {"name": "storage-vlan-204"}, "portSecurity": False},
        {"uuid": storage, "vnicType": "direct"},
    ]
    assert provider["securityGroups"] == [{"name": "ocp4-x7k2p-worker"}, {"uuid": group}]


def test_a_subnet_given_by_name_is_found_by_name():
    config = with_section(stack_config("dev"), "openstack", existingNetwork={"networkId": "ocp-vlan-210", "subnetId": "ocp-vlan-210-v4"})
    provider = provider_of(config)
    assert "primarySubnet" not in provider  # an ID only: the network's primaryClusterNetwork tag is the fallback
    assert provider["networks"] == [{"filter": {"name": "ocp-vlan-210"}, "subnets": [{"filter": {"name": "ocp-vlan-210-v4"}}]}]
