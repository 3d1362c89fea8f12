"""Where every VIP and node sits in the machine network, as plain values. Pure Python.

Layout, as host offsets inside the machine network (10.0.0.0/16: offset 5 is 10.0.0.5):

    1            router / gateway
    5, 7         API and Ingress VIPs (defaults, as the installer chose them)
    10           bootstrap            11   bootstrap helper
    20-24        master slots 0-4
    30 ...       worker slots 0 .. workers.maxCount-1
    after that   the subnet's DHCP allocation pool, up to the last host

Dual-stack: the second family's network has the same layout, so a node's or VIP's address in
each family sits at the same offset of that family's network (fd00:10::/64: offset 20 is fd00:10::14).

A node's address depends only on its role and index, never on how many nodes there are,
so scaling workers (within maxCount) or removing the bootstrap moves no one. The same
holds for the *slot* lists, which the on-node networking uses for VRRP peers and DNS
names: they cover every address a node of that role may ever have.
"""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

GATEWAY_OFFSET = 1
API_VIP_OFFSET = 5
INGRESS_VIP_OFFSET = 7
BOOTSTRAP_OFFSET = 10
HELPER_OFFSET = 11
MASTER_OFFSET = 20
MASTER_SLOTS = 5
WORKER_OFFSET = 30


def host(network: IPNetwork, offset: int) -> IPAddress:
    return network.network_address + offset


def gateway(network: IPNetwork) -> IPAddress:
    return host(network, GATEWAY_OFFSET)


def effective_vips(
    network: IPNetwork, api_vip: IPAddress | None, ingress_vip: IPAddress | None
) -> tuple[IPAddress, IPAddress]:
    """The configured VIPs, or the installer's defaults (5th and 7th host)."""
    return api_vip or host(network, API_VIP_OFFSET), ingress_vip or host(network, INGRESS_VIP_OFFSET)


def per_family(networks: Sequence[IPNetwork], vips: Sequence[IPAddress]) -> tuple[IPAddress | None, ...]:
    """The VIP written for each machine network, by family (None: that family's default)."""
    return tuple(next((vip for vip in vips if vip.version == network.version), None) for network in networks)


def reserved_addresses(network: IPNetwork, name: str, max_workers: int) -> dict[IPAddress, str]:
    """Every address the plan gives a node or the router, with what it is."""
    return {
        gateway(network): "the router's gateway address",
        host(network, BOOTSTRAP_OFFSET): f"{name}-bootstrap",
        host(network, HELPER_OFFSET): "the bootstrap helper",
        **{host(network, MASTER_OFFSET + i): f"{name}-master-{i}'s reserved address" for i in range(MASTER_SLOTS)},
        **{host(network, WORKER_OFFSET + i): f"{name}-worker-{i}'s reserved address" for i in range(max_workers)},
    }


def placement_problems(
    network: IPNetwork, name: str, api_vip: IPAddress | None, ingress_vip: IPAddress | None, max_workers: int,
    user_managed: bool = False,
) -> list[str]:
    """Why these addresses cannot be planned, one message per problem; checked with the config
    (cluster/config_rules.py), so they come with every other problem of the stack at once.

    `user_managed` (ocp:loadBalancer: UserManaged): the VIPs are the user's balancer's frontends, not on
    any node, and the installer drops two rules for them (pkg/types/validation/installconfig.go,
    validateAPIAndIngressVIPs): a VIP may lie outside the machine network (on the balancer's own
    routed network, as upstream's spine-leaf layout has it), and one address may serve both. A VIP
    inside the machine network still must not be a node's."""
    last_host = network.broadcast_address - 1
    if host(network, WORKER_OFFSET + max_workers) > last_host - 8:
        return [
            f"ocp:workers.maxCount: {max_workers} worker addresses from host {WORKER_OFFSET} on leave no room "
            f"for a DHCP pool in {network}: lower workers.maxCount or use a larger ocp:machineNetwork"
        ]
    api_vip, ingress_vip = effective_vips(network, api_vip, ingress_vip)
    taken = reserved_addresses(network, name, max_workers)
    problems = []
    for key, vip in (("apiVip", api_vip), ("ingressVip", ingress_vip)):
        if vip not in network and user_managed:
            continue
        if vip not in network:
            problems.append(
                f"ocp:{key}: {vip} is not a host address in ocp:machineNetwork {network} (the nodes' keepalived holds it "
                "there; only a balancer of your own, ocp:loadBalancer: UserManaged, may listen elsewhere)"
            )
        elif vip in (network.network_address, network.broadcast_address):
            problems.append(f"ocp:{key}: {vip} is not a host address in ocp:machineNetwork {network}")
        elif vip in taken:
            problems.append(
                f"ocp:{key}: {vip} is {taken[vip]}: pick a free address such as "
                f"{host(network, API_VIP_OFFSET if key == 'apiVip' else INGRESS_VIP_OFFSET)} "
                f"or one at the top of the network"
            )
    if api_vip == ingress_vip and not user_managed:
        problems.append(
            f"ocp:ingressVip: {ingress_vip} is also the API VIP: the two VIPs must differ (keepalived holds each on "
            "its own nodes; one address for both only with a balancer of your own, ocp:loadBalancer: UserManaged)"
        )
    return problems
