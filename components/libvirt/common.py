"""What every libvirt component shares: the cluster's facts, node MACs and where nodes attach."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address

import pulumi

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig, Libvirt

GIB = 1024**3
# QEMU's prefix; 0x52 has the locally administered bit set, so no vendor owns these.
MAC_PREFIX = (0x52, 0x54, 0x00)


def mac_address(ip: IPv4Address) -> str:
    """A node's MAC: the QEMU prefix plus the last three octets of its planned address.

    Depends on the address alone, so adding, removing or resizing other nodes never changes
    it, and a node re-created in its slot gets the same DHCP reservation. Unique within any
    machine network of /8 or smaller (the config allows /24 and larger, all within that).
    """
    return ":".join(f"{octet:02x}" for octet in (*MAC_PREFIX, *ip.packed[1:]))


def domain_kind(domain_type: str) -> tuple[str | None, str]:
    """The domain's `type` input (None: left out) and its CPU mode, for ocp:libvirt.domainType.

    RHCOS 4.13+ needs x86-64-v2, which QEMU's default CPU model lacks. kvm: host-passthrough,
    and no `type`, as before the key existed: the provider's default is kvm, and `type` and
    `cpu` are ForceNew, so a running kvm domain must see neither change. qemu (TCG): libvirt
    refuses host-passthrough there; host-model becomes a named model TCG runs, with x86-64-v2.
    """
    if domain_type == "qemu":
        return "qemu", "host-model"
    return None, "host-passthrough"


@dataclass(frozen=True)
class Attachment:
    """Where a node's NIC plugs in: exactly one of a network id (ours), a network name, a bridge."""

    network_id: pulumi.Output[str] | None = None  # the network this program created
    network_name: str | None = None
    bridge: str | None = None


@dataclass(frozen=True)
class ClusterContext:
    config: ClusterConfig
    plan: AddressPlan
    # Resolves once the installer's configs passed the day-2 review (components.installer);
    # names made through `reviewed` keep a resource from registering when they did not.
    review: pulumi.Output[object]

    def reviewed(self, value: str) -> pulumi.Output[str]:
        return self.review.apply(lambda _: value)

    @property
    def libvirt(self) -> Libvirt:
        assert self.config.libvirt is not None
        return self.config.libvirt

    @property
    def pool(self) -> str:
        return self.libvirt.pool
