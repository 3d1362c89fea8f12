"""What masters, workers and the bootstrap share: a port with a fixed IP and a server on it;
NodePool: the nodes of one role."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import pulumi
import pulumi_openstack as openstack

from cluster.addresses import Node
from cluster.config import RoleBase
from cluster.installer import InstallerAssets
from components.drain import drain_command
from components.openstack.common import ClusterContext, Subnet
from components.openstack.vips import on_nodes as vips_on_nodes

# Instance inputs that replace (userData, networks, keyPair, blockDevices, availabilityZone,
# schedulerHints, configDrive) or rebuild (imageName, imageId) a server: read at first boot only.
FIRST_BOOT_ONLY = ("userData", "networks", "imageName", "imageId", "blockDevices", "keyPair", "availabilityZone", "schedulerHints", "configDrive")


# What the running cluster adds to a node's port, which a later update must not write over
# (the provider reads the pairs back on refresh, then puts the program's list in their place):
# EgressIPs that cloud-network-config-controller appends to allowed_address_pairs, and the
# lb-sg-* groups the cloud controller manager attaches. The port's own lists are its first
# boot's: the VIPs and its groups never change on a running cluster, and the additional groups
# (ocp:openstack.additionalSecurityGroupIds, ocp:<pool>.additionalSecurityGroupIds) are applied
# beside them (PortSecGroupAssociate).
CLUSTER_KEPT = ("allowedAddressPairs", "securityGroupIds")
# vNIC types Neutron takes that the provider's binding.vnic_type refuses.
VALUE_SPEC_VNIC_TYPES = ("vdpa",)


def node_port(
    name: str,
    cluster: ClusterContext,
    node: Node,
    subnet: Subnet,
    security_group_ids: pulumi.Input[Sequence[str]],
    vips: Sequence[IPv4Address | IPv6Address],
    parent: pulumi.Resource,
    protect: bool = False,
    of_the_cluster: bool = True,
) -> openstack.networking.Port:
    """`security_group_ids`: the node's groups at creation, the additional ones included.
    Not `of_the_cluster` (the bootstrap, which no controller of the cluster touches): its lists
    follow the program, the SSH group that comes and goes with ocp:openstack.sshAllowedCidr too."""
    return _port(
        f"{name}-port", cluster, node, subnet.network_id, subnet.fixed_ips(node.ips), _NodeGroups(security_group_ids), vips, parent,
        protect, of_the_cluster,
    )


def additional_network_ports(
    name: str,
    cluster: ClusterContext,
    node: Node,
    security_group_ids: pulumi.Input[Sequence[str]],
    parent: pulumi.Resource,
    protect: bool = False,
    of_the_cluster: bool = True,
) -> list[openstack.networking.Port]:
    """The node's port on each extra network of its pool (ocp:openstack.additionalNetworkIds, then
    additionalNetworks), made as the network is described: with the node's groups, tags and name as
    the installer's machines have them (a port Nova made would carry the project's `default` group
    alone), or without port security and groups (provider VLANs, storage and L2 networks), or with
    listed groups; vNIC type as written. Port N is on extra network N whatever the pool, so a
    network added or moved to another pool renames no other port. A server made before a port
    existed keeps the networks it booted with; its new port waits for the server made again."""
    ports = []
    for number, network in cluster.extra_networks_of(node):
        groups = network.groups
        read = cluster.extra_network(network.network, parent)
        ports.append(
            _port(
                f"{name}-port-{number}",
                cluster,
                node,
                read.id,
                None,
                _NodeGroups(security_group_ids) if groups == "node" else _ListedGroups(() if groups == "none" else groups),
                (),
                parent,
                protect,
                of_the_cluster,
                port_security=network.port_security,
                vnic_type=network.vnic_type,
                profile=network.profile.as_neutron() if network.profile else None,
                addressless=read.addressless,
                off_already=cluster.port_security_off_already(network.network),
            )
        )
    return ports


@dataclass(frozen=True)
class _NodeGroups:
    """The node's own groups on a port (its role's, ingress, the additional ones)."""

    ids: pulumi.Input[Sequence[str]]


@dataclass(frozen=True)
class _ListedGroups:
    """Exactly these groups on a port (none: no port security or no groups wanted)."""

    ids: tuple[str, ...]


def _port(
    name: str,
    cluster: ClusterContext,
    node: Node,
    network: pulumi.Input[str],
    fixed_ips: list[openstack.networking.PortFixedIpArgs] | None,
    groups: _NodeGroups | _ListedGroups,
    vips: Sequence[IPv4Address | IPv6Address],
    parent: pulumi.Resource,
    protect: bool,
    of_the_cluster: bool,
    port_security: bool = True,
    vnic_type: str = "normal",
    profile: dict | None = None,
    addressless: pulumi.Input[bool] = False,
    off_already: bool = False,
) -> openstack.networking.Port:
    # Nova writes the VF's PCI address into the binding profile when it binds the port, and Neutron shows the
    # profile to admins only: never updated from here (a change of it is refused on day 2).
    kept = (list(CLUSTER_KEPT) if of_the_cluster else []) + (["binding.profile"] if profile else [])
    listed = isinstance(groups, _ListedGroups)
    port = openstack.networking.Port(
        name,
        name=cluster.server_name(node),
        network_id=network,
        fixed_ips=fixed_ips,
        security_group_ids=list(groups.ids) if listed else groups.ids,
        # No groups at all: without it Neutron gives the port the project's `default` group.
        no_security_groups=True if listed and not groups.ids else None,
        # Sent only to turn it off, and not where the network has it off itself (its ports inherit it, and
        # only the network's owner may say so): a cloud without the port-security extension takes the rest.
        port_security_enabled=False if not port_security and not off_already else None,
        binding=_binding(vnic_type, profile),
        # vdpa, which Neutron takes and the pinned provider's schema does not (terraform-provider-openstack v3.4.0
        # validates binding.vnic_type against a list without it): sent as the port's own attribute instead.
        value_specs={"binding:vnic_type": vnic_type} if vnic_type in VALUE_SPEC_VNIC_TYPES else None,
        # A network without a subnet: the port is made without an address, as Nova requires of a port it boots on
        # with none (else "Port ... requires a FixedIP in order to be used").
        no_fixed_ip=pulumi.Output.from_input(addressless).apply(lambda none: True if none else None),
        # Without these, Neutron's anti-spoofing drops traffic to a VIP this node holds.
        allowed_address_pairs=[openstack.networking.PortAllowedAddressPairArgs(ip_address=str(vip)) for vip in vips] or None,
        tags=cluster.tags,
        opts=pulumi.ResourceOptions(parent=parent, protect=protect, ignore_changes=kept),
    )
    additional = cluster.additional_groups(node)
    if additional and kept and not listed:
        # Adds its groups to the port and, when edited or removed, takes away only those it
        # added (enforce false): the groups the cluster attached stay.
        openstack.networking.PortSecGroupAssociate(
            f"{name}-additional-groups",
            port_id=port.id,
            security_group_ids=list(additional),
            enforce=False,
            opts=pulumi.ResourceOptions(parent=parent),
        )
    return port


def _binding(vnic_type: str, profile: dict | None) -> openstack.networking.PortBindingArgs | None:
    """The port's binding: its vNIC type, and its profile as the JSON object the provider takes."""
    if vnic_type in VALUE_SPEC_VNIC_TYPES or (vnic_type == "normal" and not profile):
        return None
    return openstack.networking.PortBindingArgs(
        vnic_type=vnic_type, profile=json.dumps(profile, sort_keys=True, separators=(",", ":")) if profile else None
    )


def server(
    name: str,
    cluster: ClusterContext,
    node: Node,
    role: RoleBase,
    port: openstack.networking.Port,
    user_data: pulumi.Input[str],
    server_group_id: pulumi.Input[str] | None,
    opts: pulumi.ResourceOptions,
    additional_ports: Sequence[openstack.networking.Port] = (),
) -> openstack.compute.Instance:
    image = role.openstack_image
    block_devices = None
    if role.root_volume is not None:
        block_devices = [_root_device(name, cluster, node, role, image, opts.parent, bool(opts.protect))]
        etcd = getattr(role, "etcd_disk", None)
        if etcd is not None:  # masters.etcdDisk: part of the flavor's ephemeral storage, as the CPMS's Local block device
            block_devices.append(_etcd_device(etcd.size))
    zones = role.availability_zones
    # First-boot inputs: a running server keeps what it was created with (a change would
    # replace or re-image it); new servers get the current values. Its size changes only
    # when the stack names it in <role>.resize.
    ignored = [*FIRST_BOOT_ONLY, *([] if node.index in role.resize else ["flavorName", "flavorId"])]
    return openstack.compute.Instance(
        name,
        name=cluster.server_name(node),
        flavor_name=role.flavor,
        # By the ID the preflight resolved the name to: the provider refuses a name two images share.
        image_id=None if block_devices else cluster.image_id(image, opts.parent),
        block_devices=block_devices,
        availability_zone=zones[node.index % len(zones)] if zones else None,
        networks=[openstack.compute.InstanceNetworkArgs(port=each.id) for each in (port, *additional_ports)],
        scheduler_hints=[openstack.compute.InstanceSchedulerHintArgs(group=server_group_id)] if server_group_id else None,
        user_data=user_data,
        # Nova's metadata (the name the kubelet registers under, in integrated mode) from a disk:
        # a node needs no metadata service, which an adopted subnet may lack.
        config_drive=True,
        metadata=cluster.infra_id.apply(lambda infra_id: {"openshiftClusterID": infra_id, "role": node.role}),
        tags=cluster.tags,
        # The server boots on a port made beforehand, which two servers cannot hold: a replacement
        # (a server Nova left in ERROR, a deliberate one) deletes the old server first, or the
        # old one's delete unbinds the port from the new one.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=ignored, delete_before_replace=True)),
    )


def _etcd_device(size: int) -> openstack.compute.InstanceBlockDeviceArgs:
    """etcd's local disk: a blank disk of the server's own storage, deleted with it, as cluster-api-provider-openstack
    (v0.11, pkg/cloud/services/compute/instance.go) makes an additionalBlockDevices entry of storage type Local. Nova
    formats and labels the first one `ephemeral0`, which the MachineConfig (ignition/etcd_disk.py) formats for etcd."""
    return openstack.compute.InstanceBlockDeviceArgs(
        source_type="blank",
        destination_type="local",
        volume_size=size,
        boot_index=-1,
        delete_on_termination=True,
    )


# Volume inputs a change of which would replace the volume a running node boots from
# (availabilityZone, imageId) or fail on it (size: no online extend; volumeType: retype):
# read when the volume is made, as the server reads its blockDevices.
VOLUME_FIRST_BOOT_ONLY = ("availabilityZone", "imageId", "size", "volumeType")


def _root_device(
    name: str, cluster: ClusterContext, node: Node, role: RoleBase, image: str, parent: pulumi.Resource | None, protect: bool
) -> openstack.compute.InstanceBlockDeviceArgs:
    """The boot disk: Nova makes a volume from the image, or, when the volume must sit in a
    Cinder zone, this program makes it (Nova's image-to-volume has no zone of its own)."""
    assert role.root_volume is not None
    root = role.root_volume
    image_id = cluster.image_id(image, parent)
    if not root.availability_zones:
        return openstack.compute.InstanceBlockDeviceArgs(
            source_type="image",
            uuid=image_id,
            destination_type="volume",
            volume_size=root.size,
            volume_type=role.volume_type_of(node.index),
            boot_index=0,
            delete_on_termination=True,
        )
    zones = root.availability_zones
    volume = openstack.blockstorage.Volume(
        f"{name}-root-volume",
        name=cluster.server_name(node).apply(lambda server: f"{server}-root"),
        size=root.size,
        volume_type=role.volume_type_of(node.index),
        image_id=image_id,
        availability_zone=zones[node.index % len(zones)],
        metadata=cluster.infra_id.apply(lambda infra_id: {"openshiftClusterID": infra_id, "role": node.role}),
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=list(VOLUME_FIRST_BOOT_ONLY), protect=protect),
    )
    # Pulumi owns the volume and deletes it after its server: not Nova on termination, so a
    # replaced server boots from the same disk and a destroy never meets a half-deleted volume.
    return openstack.compute.InstanceBlockDeviceArgs(
        source_type="volume",
        uuid=volume.id,
        destination_type="volume",
        boot_index=0,
        delete_on_termination=False,
    )


# The pools' component types before they were NodePools (ControlPlane, Workers): their
# aliases keep the URNs of running stacks, children included.
FORMER_TYPES = {"master": "ocp:openstack:ControlPlane", "worker": "ocp:openstack:Workers"}


@dataclass(frozen=True)
class PoolRole:
    """What differs between the control plane and the workers, as data."""

    name: str  # master, worker: the installer's group names
    nodes: Sequence[Node]
    settings: RoleBase
    # The VIPs these nodes may hold: without them in allowed_address_pairs Neutron drops the traffic.
    vips: Sequence[IPv4Address | IPv6Address]
    # Nova honours soft anti-affinity only between servers it already placed.
    one_at_a_time: bool
    # The node's server group by slot index, as what follows <infraID>-<name> ("": the installer's
    # one group), and every group the role has (RoleBase.server_group, server_groups).
    server_group_of: Callable[[int], str] = lambda index: ""
    server_groups: tuple[str, ...] = ("",)


def control_plane(cluster: ClusterContext) -> PoolRole:
    """Masters: one after the other; they hold the API VIP, and the Ingress VIP when they run the routers."""
    plan = cluster.plan
    settings = cluster.config.masters
    return PoolRole(
        "master", plan.masters, settings, vips_on_nodes(cluster, *plan.api_vips, *plan.ingress_vips), True,
        settings.server_group, tuple(settings.server_groups(len(plan.masters))),
    )


def workers(cluster: ClusterContext) -> PoolRole:
    """Workers: in parallel; scaling within workers.maxCount touches nothing else."""
    plan = cluster.plan
    settings = cluster.config.workers
    return PoolRole(
        "worker", plan.workers, settings, vips_on_nodes(cluster, *plan.ingress_vips), False,
        settings.server_group, tuple(settings.server_groups(settings.count)),
    )


class NodePool(pulumi.ComponentResource):
    """Ports, servers and the server group of one role. The signature is libvirt's NodePool's:
    name, role, cluster, network, user data by node, options, drained_with; then this platform's own."""

    servers: list[openstack.compute.Instance]
    # Each node's port's addresses, as Neutron assigned them.
    addresses: dict[Node, pulumi.Output[list[str]]]

    def __init__(
        self,
        name: str,
        role: PoolRole,
        cluster: ClusterContext,
        network: Subnet,
        user_data: dict[str, pulumi.Output[str]],
        opts: pulumi.ResourceOptions | None = None,
        drained_with: pulumi.Output[InstallerAssets] | None = None,
        *,
        security_groups: dict[str, pulumi.Input[Sequence[str]]],
        servers_after: Sequence[pulumi.Resource] = (),
    ):
        """`drained_with`: the installer's configs whose kubeconfig drains each node before its
        server goes (workers). `servers_after`: what the servers are created after and deleted
        before (the destroy cleanup)."""
        former = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=FORMER_TYPES[role.name])])
        super().__init__("ocp:openstack:NodePool", name, None, pulumi.ResourceOptions.merge(opts, former))
        settings, one_at_a_time = role.settings, role.one_at_a_time
        # A destroy of the masters is the cluster's end (ocp:protect); workers come and go.
        protect = cluster.config.protect and role.name == "master"
        # The first is the installer's <infraID>-master / -worker; workers.serverGroupSize adds -worker-1, ...;
        # with <role>.serverGroupPerZone, <infraID>-<role>-<zone>, -<zone>-1, ...
        groups = {
            suffix: openstack.compute.ServerGroup(
                f"{name}-server-group{suffix}",
                name=cluster.named(role.name + suffix),
                policies=settings.server_group_policy,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for suffix in role.server_groups
        }
        self.servers = []
        self.addresses = {}
        for node in role.nodes:
            node_name = f"{name}-{node.role}-{node.index}"
            port = node_port(node_name, cluster, node, network, security_groups[node.name], role.vips, self, protect)
            self.addresses[node] = port.all_fixed_ips
            additional_ports = additional_network_ports(node_name, cluster, node, security_groups[node.name], self, protect)
            # Nova honours soft anti-affinity only between servers it already placed, so
            # concurrent creation can stack them on one host: create them one after the other.
            after = [*servers_after, *([self.servers[-1]] if one_at_a_time and self.servers else [])]
            self.servers.append(
                server(
                    node_name,
                    cluster,
                    node,
                    settings,
                    port,
                    user_data[node.name],
                    groups[role.server_group_of(node.index)].id,
                    pulumi.ResourceOptions(parent=self, depends_on=after, protect=protect),
                    additional_ports,
                )
            )
            if drained_with is not None:
                drain_command(f"{node_name}-drain", cluster.config, cluster.server_name(node), drained_with, self.servers[-1], self)
        self.register_outputs({"servers": [instance.id for instance in self.servers]})
