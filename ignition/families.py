"""The address plan's families, as the on-node networking reads them. Pure Python.

The address plan gives every node an address per family and the VIPs per family (`Node.ips`,
`AddressPlan.networks`, `api_vips`, `ingress_vips`, primary first). Read through these
functions, a plan of one family that has only the singular attributes reads the same:
ignition/ then works on either side of that change (drop this module once every plan has both).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Any

Address = IPv4Address | IPv6Address


def node_ips(node: Any) -> tuple[Address, ...]:
    return tuple(getattr(node, "ips", (node.ip,)))


def networks(plan: Any) -> tuple[IPv4Network | IPv6Network, ...]:
    return tuple(getattr(plan, "networks", (plan.network,)))


def api_vips(plan: Any) -> tuple[Address, ...]:
    return tuple(getattr(plan, "api_vips", (plan.api_vip,)))


def ingress_vips(plan: Any) -> tuple[Address, ...]:
    return tuple(getattr(plan, "ingress_vips", (plan.ingress_vip,)))
