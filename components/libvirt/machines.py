"""Machine: one node (its disk, its ignition file and its domain); NodePool: the nodes of one role.

The node boots from a copy-on-write layer over the base image and reads its ignition
through QEMU's fw_cfg (`opt/com.coreos/config`), which has no size limit that matters: the
bootstrap gets its full config directly. Its NIC has a MAC derived from its planned
address and a DHCP reservation (MAC -> address, hostname) that the provider adds to the
network when it creates the domain.

A node is installed from its ignition, which runs once, at first boot: a running node keeps
the ignition, disk and image it was created with (`ignore_changes`, as user_data on
OpenStack), and new nodes get the current ones. A new vCPU or memory size applies only to
nodes the stack names in `<role>.resize`: their domain is replaced and restarts on the disk
it has.

libvirt names are unique per host (domains) and per pool (volumes), so every replacement
deletes the old resource before creating the new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_libvirt as libvirt

from cluster.addresses import Node
from cluster.config import RoleBase
from cluster.installer import InstallerAssets
from components.drain import drain_command
from components.libvirt.common import GIB, Attachment, ClusterContext, domain_kind, mac_address


def disk_name(node: Node) -> str:
    return f"{node.name}.qcow2"


# Read at first boot only; a change would replace the node's disk or ignition (and with them its domain).
FIRST_BOOT_IGNITION = ["content"]
FIRST_BOOT_DISK = ["baseVolumeId", "size"]
FIRST_BOOT_DOMAIN = ["coreosIgnition", "disks"]
# What the provider reads back differs from what it was given, though nothing changed: libvirt
# turns host-model into the custom model it chose, and a NIC's addresses are read from its DHCP
# lease (none while the node is off, or has not asked yet). Both are fixed at install (the domain
# type cannot change; the address plan's address per node never does). Seen with the real
# provider and libvirtd: without this, every `pulumi up` updates every qemu domain.
READ_BACK_DOMAIN = ["cpu", "networkInterfaces[0].addresses"]


class Machine(pulumi.ComponentResource):
    domain: libvirt.Domain

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        node: Node,
        size: RoleBase,
        attachment: Attachment,
        base_volume_id: pulumi.Input[str],
        user_data: pulumi.Input[str],
        autostart: bool,
        opts: pulumi.ResourceOptions | None = None,
        drained_with: pulumi.Output[InstallerAssets] | None = None,
        protect: bool = False,
    ):
        """`protect`: on the disk, which holds the node. Not on the domain: masters.resize replaces it."""
        super().__init__("ocp:libvirt:Machine", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        vcpus, memory_mib, disk_gib = size.libvirt_size()
        # Written into the pool as a file that QEMU reads at boot; secret in Pulumi's state.
        ignition = libvirt.Ignition(
            f"{name}-ignition",
            name=f"{node.name}.ign",
            pool=cluster.pool,
            content=user_data,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=FIRST_BOOT_IGNITION)),
        )
        disk = libvirt.Volume(
            f"{name}-disk",
            name=cluster.reviewed(disk_name(node)),
            pool=cluster.pool,
            base_volume_id=base_volume_id,
            size=disk_gib * GIB,
            format="qcow2",
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=FIRST_BOOT_DISK, protect=protect)),
        )
        domain_type, cpu_mode = domain_kind(cluster.libvirt.domain_type)
        self.domain = libvirt.Domain(
            f"{name}-domain",
            name=node.name,
            # Only qemu passes a type: a kvm domain's inputs stay as they were before the key existed.
            **({"type": domain_type} if domain_type else {}),
            vcpu=vcpus,
            memory=memory_mib,
            cpu=libvirt.DomainCpuArgs(mode=cpu_mode),
            disks=[libvirt.DomainDiskArgs(volume_id=disk.id)],
            network_interfaces=[
                libvirt.DomainNetworkInterfaceArgs(
                    network_id=attachment.network_id,
                    network_name=attachment.network_name,
                    bridge=attachment.bridge,
                    mac=mac_address(node.ip),
                    addresses=[str(node.ip)],
                    hostname=node.name,
                    wait_for_lease=False,  # the address is fixed: nothing to wait for
                )
            ],
            coreos_ignition=ignition.id,
            # `virsh console <node>` shows the boot, ignition's progress included.
            consoles=[libvirt.DomainConsoleArgs(type="pty", target_type="serial", target_port="0")],
            autostart=autostart,
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    ignore_changes=FIRST_BOOT_DOMAIN + READ_BACK_DOMAIN + ([] if node.index in size.resize else ["vcpu", "memory"])
                ),
            ),
        )
        if drained_with is not None:  # no cloud controller: without it the Node stays NotReady for ever
            drain_command(f"{name}-drain", cluster.config, node.name, drained_with, self.domain, self)
        self.register_outputs({"domainId": self.domain.id, "mac": mac_address(node.ip), "ip": str(node.ip)})


# The pools' component types before they were NodePools: their aliases keep the URNs of
# running stacks, children included.
FORMER_TYPES = {"master": "ocp:libvirt:ControlPlane", "worker": "ocp:libvirt:Workers"}


@dataclass(frozen=True)
class PoolRole:
    """What differs between the control plane and the workers, as data."""

    name: str  # master, worker
    nodes: Sequence[Node]
    settings: RoleBase


def control_plane(cluster: ClusterContext) -> PoolRole:
    return PoolRole("master", cluster.plan.masters, cluster.config.masters)


def workers(cluster: ClusterContext) -> PoolRole:
    return PoolRole("worker", cluster.plan.workers, cluster.config.workers)


class NodePool(pulumi.ComponentResource):
    """The machines of one role, created in parallel (libvirt has no placement to wait for). The
    signature is OpenStack's NodePool's: name, role, cluster, network, user data by node, options,
    drained_with; then this platform's own."""

    machines: list[Machine]

    def __init__(
        self,
        name: str,
        role: PoolRole,
        cluster: ClusterContext,
        network: Attachment,
        user_data: dict[str, pulumi.Output[str]],
        opts: pulumi.ResourceOptions | None = None,
        drained_with: pulumi.Output[InstallerAssets] | None = None,
        *,
        base_volume_id: pulumi.Input[str],
        autostart: bool = True,
    ):
        """`drained_with`: the installer's configs whose kubeconfig drains each node before its domain goes (workers)."""
        former = pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=FORMER_TYPES[role.name])])
        super().__init__("ocp:libvirt:NodePool", name, None, pulumi.ResourceOptions.merge(opts, former))
        self.machines = [
            Machine(
                f"{name}-{node.role}-{node.index}",
                cluster,
                node,
                role.settings,
                network,
                base_volume_id,
                user_data[node.name],
                autostart,
                pulumi.ResourceOptions(parent=self),
                drained_with,
                # A destroy of the masters is the cluster's end (ocp:protect); workers come and go.
                protect=cluster.config.protect and role.name == "master",
            )
            for node in role.nodes
        ]
        self.register_outputs({"domains": [machine.domain.id for machine in self.machines]})
