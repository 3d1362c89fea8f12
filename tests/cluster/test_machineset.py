"""The example worker MachineSet the plan writes for an integrated cluster."""

from __future__ import annotations

import pytest

from cluster.config import load_config
from cluster.machineset import machineset_notes, worker_machineset
from tests.cluster.test_families import V4, V6, families
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
    """As the installer's generateProviderSpec writes them (pkg/asset/machines/openstack/machines.go, v1.4.19-ec5 and
    master): every extra network with noAllowedAddressPairs (MAPO's convert.go puts no VIP pair on its port then)."""
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
    # Written as the installer writes it; openshift/api machine/v1alpha1: "primarySubnet is silently ignored".
    assert provider["primarySubnet"] == subnet
    assert provider["networks"] == [
        {"filter": {"name": "ocp-vlan-210"}, "subnets": [{"uuid": subnet}]},
        {"filter": {"name": "storage-vlan-204"}, "noAllowedAddressPairs": True, "portSecurity": False},
        {"uuid": storage, "noAllowedAddressPairs": True, "vnicType": "direct"},
    ]
    assert provider["securityGroups"] == [{"name": "ocp4-x7k2p-worker"}, {"uuid": group}]
    assert "ports" not in provider


def test_a_subnet_given_by_name_is_found_by_name():
    config = with_section(stack_config("dev"), "openstack", existingNetwork={"networkId": "ocp-vlan-210", "subnetId": "ocp-vlan-210-v4"})
    provider = provider_of(config)
    assert "primarySubnet" not in provider  # the installer writes the first subnet's ID only
    assert provider["networks"] == [{"filter": {"name": "ocp-vlan-210"}, "subnets": [{"filter": {"name": "ocp-vlan-210-v4"}}]}]


@pytest.mark.parametrize("order", [(V4, V6), (V6, V4), (V6,)], ids=["ipv4-first", "ipv6-first", "ipv6-only"])
def test_machines_of_two_families_get_an_address_of_each_on_one_port(order):
    """Issue 50, finding 2: with dhcpv6-stateful a subnet left out of the port gives no address of its family, and the
    worker never gets Ready. MAPO makes one port with a fixed IP on each subnet listed under a network it can name
    (convert.go, "network and subnet are defined"), so every subnet is listed, in machineNetwork's order."""
    provider = provider_of(families(*order))
    subnets = [{"filter": {"name": f"subnet-v{4 if family is V4 else 6}"}} for family in order]
    assert provider["networks"][0] == {"filter": {"name": "dualstack"}, "subnets": subnets}


@pytest.mark.parametrize("order", [(V4,), (V4, V6), (V6,)], ids=["ipv4", "dual-stack", "ipv6-only"])
def test_machines_read_nova_metadata_from_a_config_drive(order):
    """Issue 50, finding 3: the installer sets configDrive for an IPv6-only machine network (isSingleStackIPv6 in
    pkg/asset/machines/openstack; the metadata service is IPv4). The stack's own nodes boot with one always (a subnet
    you bring may have no metadata service), and so do the example's machines (MAPO: InstanceSpec.ConfigDrive)."""
    assert provider_of(families(*order) if order != (V4,) else stack_config("dev"))["configDrive"] is True


def test_an_extra_network_with_groups_of_its_own_is_a_port_entry_and_keeps_its_place():
    """Issue 50, finding 8: a networks: entry always carries the machine's groups (cluster-api-provider-openstack's
    GetOrCreatePort inherits them); only a ports: entry lists others. MAPO makes the networks: ports first, so the
    entries from the first such network on are ports:, and a machine's NIC N is on extra network N as on the stack's
    own workers. A ports: entry names its network by ID only (PortOpts.networkID): a name the cloud description knows
    is written as its ID; one it does not is named in a note."""
    listed, storage = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f", "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
    l2 = "7d0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
    config = load_config(with_section(
        stack_config("dev"),
        "openstack",
        additionalNetworkIds=[storage],
        additionalNetworks=[
            {"network": "lab-internal", "portSecurity": False, "vnicType": "direct"},
            {"network": "backup", "pools": ["workers"], "securityGroups": [listed]},
            {"network": l2, "portSecurity": False},
            {"network": "media", "pools": ["workers"]},
        ],
    ))
    ids = {"backup": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"}
    provider = worker_machineset(config, "ocp4-x7k2p", network_ids=ids)["spec"]["template"]["spec"]["providerSpec"]["value"]
    assert provider["networks"][1:] == [
        {"uuid": storage, "noAllowedAddressPairs": True},
        {"filter": {"name": "lab-internal"}, "noAllowedAddressPairs": True, "portSecurity": False, "vnicType": "direct"},
    ]
    assert provider["ports"] == [
        {"networkID": ids["backup"], "securityGroups": [listed]},
        {"networkID": l2, "portSecurity": False},
        {"networkID": "media"},
    ]
    assert machineset_notes(config, ids) == [
        "ocp:openstack.additionalNetworks[3].network: media is a name, and its entry is under ports:, whose networkID takes "
        "an ID only (MAPO's PortOpts): replace networkID: media with the network's ID (`openstack network show media -f value "
        "-c id`), or plan with --cloud and a description that has it"
    ]


def test_a_port_with_port_security_and_no_group_is_said_to_get_the_machines_groups():
    """CAPO gives a port whose own list resolves to no group the machine's groups: the example cannot say none."""
    config = load_config(with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "quiet", "securityGroups": "none"}]))
    assert machineset_notes(config) == [
        "ocp:openstack.additionalNetworks[0].securityGroups: none on a port with port security: the Machine API cannot make "
        "such a port (cluster-api-provider-openstack gives a port with no group of its own the machine's groups): the "
        "example's machines get the workers' groups on it"
    ]
    assert provider_of(with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "quiet", "securityGroups": "none"}]))[
        "networks"
    ][1] == {"filter": {"name": "quiet"}, "noAllowedAddressPairs": True}


def test_sr_iov_ports_carry_their_vnic_type_and_profile_as_mapo_reads_them():
    """Issue 50, finding 10: MAPO's profile is a map of strings (openshift/api NetworkParam.Profile, PortOpts.Profile);
    convert.go's portProfileToCapov1BindingProfile makes OVSHWOffload of a "capabilities" value holding "switchdev" and
    TrustedVF of "trusted": "true", which CAPO sends as {"capabilities": ["switchdev"], "trusted": true}."""
    listed = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
    config = with_section(stack_config("dev"), "openstack", additionalNetworks=[
        {"network": "offload", "pools": ["workers"], "portSecurity": False, "vnicType": "direct", "profile": {"capabilities": ["switchdev"], "trusted": True}},
        {"network": "passthrough", "pools": ["workers"], "portSecurity": False, "vnicType": "direct-physical"},
        {"network": "vdpa", "pools": ["workers"], "vnicType": "vdpa", "securityGroups": [listed]},
    ])
    provider = provider_of(config)
    assert provider["networks"][1:] == [
        {"filter": {"name": "offload"}, "noAllowedAddressPairs": True, "portSecurity": False, "vnicType": "direct",
         "profile": {"capabilities": "[switchdev]", "trusted": "true"}},
        {"filter": {"name": "passthrough"}, "noAllowedAddressPairs": True, "portSecurity": False, "vnicType": "direct-physical"},
    ]
    assert provider["ports"] == [{"networkID": "vdpa", "securityGroups": [listed], "vnicType": "vdpa"}]
