"""Example worker MachineSets for an integrated cluster, one per zone. Pure Python.

This program makes the masters and workers itself (UPI), so the installer's MachineSets are
removed. After install, the Machine API can still add workers if the user applies a
MachineSet: this one is filled in from the stack (image, flavor, network by its tag,
security groups and server group by the names this program gives them), with 0 replicas, so
applying it changes nothing until it is scaled. Machines it creates carry no ingress group:
the routers stay on the router slots (docs/day2.md, "Ingress placement is decided at install").

The provider spec is written as the installer's pkg/asset/machines/openstack/machines.go
(generateProviderSpec, v1.4.19-ec5 and master) writes it, and read as the Machine API's OpenStack
provider reads it (machine-api-provider-openstack release-4.19 pkg/machine/convert.go, which
turns it into cluster-api-provider-openstack's ports; the types are openshift/api
machine/v1alpha1/types_openstack.go):

- the given network with every subnet of ocp:openstack.existingNetwork.subnetId, in
  machineNetwork's order: one port with an address of each family (a subnet left out gives no
  address with dhcpv6-stateful);
- every extra network with noAllowedAddressPairs (no VIP is ever on it);
- an extra network whose port takes listed security groups as a `ports:` entry (a `networks:`
  entry always gets the machine's groups), and every one after it too, so that a machine's NIC N
  is on extra network N as on the stack's own workers (MAPO makes the `networks:` ports first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.config import ClusterConfig
from cluster.config_fields import is_openstack_id
from cluster.config_openstack import AdditionalNetwork


def worker_machinesets(config: ClusterConfig, infra_id: str, network_ids: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One MachineSet per failure domain, as the installer makes them: per compute zone (its zone,
    root volume type and volume zone at the same place), or one without zones. `network_ids`: the ID of
    each network name the cloud description knows (a `ports:` entry names its network by ID only)."""
    zones = config.workers.availability_zones
    if len(zones) < 2:
        return [worker_machineset(config, infra_id, network_ids=network_ids)]
    return [worker_machineset(config, infra_id, domain, network_ids) for domain in range(len(zones))]


def worker_machineset(
    config: ClusterConfig, infra_id: str, domain: int | None = None, network_ids: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The MachineSet of failure domain `domain` (None: the only one, named as before zones had theirs)."""
    assert config.openstack is not None
    workers = config.workers
    name = f"{infra_id}-worker-extra" + ("" if domain is None else f"-{domain}")
    index = domain or 0  # the domain's first slot: its zone, volume type and group are those of worker `index`
    labels = {
        "machine.openshift.io/cluster-api-cluster": infra_id,
        "machine.openshift.io/cluster-api-machine-role": "worker",
        "machine.openshift.io/cluster-api-machine-type": "worker",
    }
    provider: dict[str, Any] = {
        "apiVersion": "machine.openshift.io/v1alpha1",
        "kind": "OpenstackProviderSpec",
        # The installer stores the stack's clouds.yaml entry in the cluster under this name,
        # whatever ocp:openstack.cloud calls it.
        "cloudName": "openstack",
        "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": "openshift-machine-api"},
        # Nova's metadata (the kubelet's node name) from a disk. The installer sets it for an IPv6-only
        # machine network, whose nodes cannot reach the IPv4 metadata service; the stack's own nodes boot
        # with one always (a subnet you bring may have no metadata service), and so do these.
        "configDrive": True,
        "flavor": config.worker_pool_flavor,
        "image": workers.openstack_image,
        # The subnet by the tag this program puts on it, as the installer's MachineSets find it.
        "networks": [{"filter": {}, "subnets": [{"filter": {"tags": f"openshiftClusterID={infra_id}"}}]}],
        "securityGroups": [{"name": f"{infra_id}-worker"}]
        + [
            {"uuid": group}
            for group in dict.fromkeys((*config.openstack.additional_security_group_ids, *workers.additional_security_group_ids))
        ],
        # The zone's group the stack's workers share (MAPO makes one of that name if none exists); with
        # serverGroupSize the stack's groups fill to that size, so its machines get one of their own.
        "serverGroupName": name if workers.server_group_size else f"{infra_id}-worker{workers.server_group(index)}",
        "serverMetadata": {"Name": f"{infra_id}-worker", "openshiftClusterID": infra_id},
        "tags": [f"openshiftClusterID={infra_id}", *config.tags],
        "trunk": False,
        "userDataSecret": {"name": "worker-user-data"},
    }
    existing = config.openstack.existing_network
    if existing is not None:
        # Every subnet given, in machineNetwork's order: MAPO makes one port with an address in each.
        provider["networks"] = [{**_by_id_or_name(existing.network_id), "subnets": [_by_id_or_name(s) for s in existing.subnet_ids]}]
        if is_openstack_id(existing.subnet_id):
            # As the installer writes it; the Machine API ignores it (openshift/api: "silently ignored").
            provider["primarySubnet"] = existing.subnet_id
    networks, ports = _extra_networks(config, network_ids or {})
    provider["networks"] += networks
    if ports:
        provider["ports"] = ports
    if workers.root_volume is not None:
        provider["rootVolume"] = {"diskSize": workers.root_volume.size, "sourceUUID": provider.pop("image")}
        volume_type = workers.volume_type_of(index)
        if volume_type:
            provider["rootVolume"]["volumeType"] = volume_type
        volume_zones = workers.root_volume.availability_zones
        if volume_zones:
            provider["rootVolume"]["availabilityZone"] = volume_zones[index % len(volume_zones)]
    if workers.availability_zones:
        provider["availabilityZone"] = workers.availability_zones[index % len(workers.availability_zones)]
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "openshift-machine-api", "labels": dict(labels)},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-cluster": infra_id, "machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {**labels, "machine.openshift.io/cluster-api-machineset": name}},
                "spec": {"providerSpec": {"value": provider}},
            },
        },
    }


def machineset_notes(config: ClusterConfig, network_ids: Mapping[str, str] | None = None) -> list[str]:
    """What the example cannot say as the stack's own workers have it, one line per network, naming its key."""
    if not config.integrated or config.openstack is None:
        return []
    notes = []
    in_ports = False
    keys = [key for key, _ in config.openstack.keyed_extra_networks()]
    for number, network in config.openstack.networks_of("workers"):
        key = keys[number - 1]
        in_ports = in_ports or _needs_port(network)
        if in_ports and not is_openstack_id(network.network) and network.network not in (network_ids or {}):
            notes.append(
                f"{key}: {network.network} is a name, and its entry is under ports:, whose networkID takes an ID only "
                f"(MAPO's PortOpts): replace networkID: {network.network} with the network's ID "
                f"(`openstack network show {network.network} -f value -c id`), or plan with --cloud and a description that has it"
            )
        if network.port_security and network.groups in ("none", ()):
            notes.append(
                f"{key.removesuffix('.network')}.securityGroups: none on a port with port security: the Machine API cannot "
                "make such a port (cluster-api-provider-openstack gives a port with no group of its own the machine's "
                "groups): the example's machines get the workers' groups on it"
            )
    return notes


def _by_id_or_name(reference: str) -> dict[str, Any]:
    return {"uuid": reference} if is_openstack_id(reference) else {"filter": {"name": reference}}


def _needs_port(network: AdditionalNetwork) -> bool:
    """A network whose port takes groups of its own: only a `ports:` entry lists them."""
    groups = network.groups
    return isinstance(groups, tuple) and bool(groups)


def _extra_networks(config: ClusterConfig, network_ids: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The workers' extra networks in port order: `networks:` entries up to the first that needs a `ports:`
    entry, `ports:` entries from there on (MAPO makes every `networks:` port before the `ports:` ones)."""
    assert config.openstack is not None
    networks: list[dict[str, Any]] = []
    ports: list[dict[str, Any]] = []
    for _, network in config.openstack.networks_of("workers"):
        if ports or _needs_port(network):
            ports.append(_port_entry(network, network_ids))
        else:
            networks.append(_network_entry(network))
    return networks, ports


def _binding(network: AdditionalNetwork) -> dict[str, Any]:
    """vnicType and profile as MAPO reads them. Its profile is a map of strings: "capabilities" holding
    "switchdev" and "trusted" "true" become CAPO's OVSHWOffload and TrustedVF (convert.go)."""
    binding: dict[str, Any] = {}
    if network.vnic_type != "normal":
        binding["vnicType"] = network.vnic_type
    if network.profile is not None:
        profile = network.profile
        binding["profile"] = {
            **({"capabilities": f"[{', '.join(profile.capabilities)}]"} if profile.capabilities else {}),
            **({"trusted": "true"} if profile.trusted else {}),
        }
    return binding


def _network_entry(network: AdditionalNetwork) -> dict[str, Any]:
    """A worker's extra network as the Machine API's NetworkParam describes it: the machine's groups, or
    none without port security."""
    param = _by_id_or_name(network.network)
    # As the installer writes its extra networks: no VIP in the port's allowed address pairs.
    param["noAllowedAddressPairs"] = True
    if not network.port_security:
        param["portSecurity"] = False
    return {**param, **_binding(network)}


def _port_entry(network: AdditionalNetwork, network_ids: Mapping[str, str]) -> dict[str, Any]:
    """A worker's extra network as the Machine API's PortOpts describes it: by network ID, with its own groups
    where it lists them (unset: the machine's)."""
    reference = network.network
    port: dict[str, Any] = {"networkID": reference if is_openstack_id(reference) else network_ids.get(reference, reference)}
    groups = network.groups
    if isinstance(groups, tuple) and groups:
        port["securityGroups"] = list(groups)
    if not network.port_security:
        port["portSecurity"] = False
    return {**port, **_binding(network)}
