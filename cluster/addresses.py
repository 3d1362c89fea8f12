"""Which address every VIP and node gets, from the layout in cluster/address_layout.py. Pure Python.

A node's address depends only on its role and index, never on how many nodes there are,
so scaling workers (within maxCount) or removing the bootstrap moves no one. The same
holds for the *slot* lists, which the on-node networking uses for VRRP peers and DNS
names: they cover every address a node of that role may ever have.

Dual-stack (two machine networks, the primary first): a node has an address in each family at
the same offset of that family's network (`Node.ips`), and so do the VIPs (`api_vips`,
`ingress_vips`); the singular attributes are the primary family's, as on a single-family stack.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Literal

from cluster.address_layout import (
    BOOTSTRAP_OFFSET,
    HELPER_OFFSET,
    MASTER_OFFSET,
    MASTER_SLOTS,
    WORKER_OFFSET,
    IPAddress,
    IPNetwork,
    effective_vips,
    gateway,
    host,
    per_family,
    placement_problems,
)
from cluster.config_base import ConfigError
from cluster.config_schema import ClusterConfig

Role = Literal["bootstrap", "master", "worker"]

@dataclass(frozen=True)
class Node:
    name: str  # hostname, also the server's name: <cluster>-master-0
    role: Role
    index: int
    ips: tuple[IPAddress, ...]  # one per family of the machine network, the primary first

    @property
    def ip(self) -> IPAddress:
        """The node's address in the primary family."""
        return self.ips[0]

    def fqdn(self, cluster_domain: str) -> str:
        return f"{self.name}.{cluster_domain}"


@dataclass(frozen=True)
class AddressPlan:
    # One entry per family of ocp:machineNetwork, the primary first.
    networks: tuple[IPNetwork, ...]
    gateways: tuple[IPAddress, ...]
    api_vips: tuple[IPAddress, ...]
    ingress_vips: tuple[IPAddress, ...]
    bootstrap: Node
    helper_ips: tuple[IPAddress, ...]  # the bootstrap helper's, one per family
    master_slots: tuple[Node, ...]
    worker_slots: tuple[Node, ...]
    master_count: int
    worker_count: int
    bootstrap_enabled: bool
    # Each network's DHCP pools, its VIPs cut out.
    family_pools: tuple[tuple[tuple[IPAddress, IPAddress], ...], ...]

    @property
    def network(self) -> IPNetwork:
        return self.networks[0]

    @property
    def gateway(self) -> IPAddress:
        return self.gateways[0]

    @property
    def api_vip(self) -> IPAddress:
        return self.api_vips[0]

    @property
    def ingress_vip(self) -> IPAddress:
        return self.ingress_vips[0]

    @property
    def helper_ip(self) -> IPAddress:
        return self.helper_ips[0]

    @property
    def allocation_pools(self) -> tuple[tuple[IPAddress, IPAddress], ...]:
        """The primary network's DHCP pools."""
        return self.family_pools[0]

    @property
    def dual_stack(self) -> bool:
        return len(self.networks) == 2

    @property
    def masters(self) -> tuple[Node, ...]:
        return self.master_slots[: self.master_count]

    @property
    def workers(self) -> tuple[Node, ...]:
        return self.worker_slots[: self.worker_count]

    @property
    def nodes(self) -> tuple[Node, ...]:
        """Every node that exists in this configuration, bootstrap first."""
        bootstrap = (self.bootstrap,) if self.bootstrap_enabled else ()
        return bootstrap + self.masters + self.workers

    router_count: int
    # Decided at install (a compact cluster's masters keep the routers when workers come
    # later): cluster.day2 sets it from the install record.
    routers_on_masters: bool

    @property
    def router_slots(self) -> tuple[Node, ...]:
        """Where routers run and the Ingress VIP may sit: the first `networking.routerNodes`
        worker slots (whether or not those workers exist yet), or a compact cluster's masters."""
        return self.master_slots if self.routers_on_masters else self.worker_slots[: self.router_count]

    # The worker count at install (cluster.day2.installed_plan; None: this run is the install).
    workers_at_install: int | None = None

    @property
    def router_nodes(self) -> tuple[Node, ...]:
        """The router slots that exist in this configuration (host network: one router each)."""
        return self.masters if self.routers_on_masters else self.workers[: self.router_count]

    @property
    def routers(self) -> int:
        """How many routers the IngressController runs: one per router node there was at install."""
        workers = self.worker_count if self.workers_at_install is None else self.workers_at_install
        return self.master_count if self.routers_on_masters else min(self.router_count, workers)


def node_addresses(plan: AddressPlan, node: Node, derived: Collection[int] = (), assigned: Sequence[str] | None = None) -> list[str | None]:
    """A node's address in each family, the primary first: the planned one; in a `derived` family (a
    subnet where Neutron derives each port's address from its MAC: slaac, dhcpv6-stateless) the one of
    its port's addresses (`assigned`, as Neutron shows them) inside that family's network, None while
    the port does not exist."""
    found: list[str | None] = []
    for family, (network, planned) in enumerate(zip(plan.networks, node.ips)):
        if family not in derived:
            found.append(str(planned))
            continue
        inside = [address for address in assigned or () if _inside(address, network)]
        found.append(inside[0] if inside else None)
    return found


def _inside(address: str, network: IPNetwork) -> bool:
    try:
        return ip_address(address) in network
    except ValueError:
        return False


def host_port(address: IPAddress, port: int) -> str:
    """`address:port`, an IPv6 address in brackets as URLs and listeners want it."""
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def server_name(config: ClusterConfig, node: Node, infra_id: str) -> str:
    """A node's server and host name. Integrated mode: `<infraID>-<role>-<index>`, as UPI names
    them (the cloud provider finds a node's server by this exact name, unique in the project);
    otherwise the planned name, `<cluster>-<role>-<index>`."""
    if not config.integrated:
        return node.name
    return f"{infra_id}-bootstrap" if node.role == "bootstrap" else f"{infra_id}-{node.role}-{node.index}"


def plan_addresses(config: ClusterConfig) -> AddressPlan:
    networks = config.machine_networks
    name = config.cluster_name
    max_workers = config.workers.max_count
    written = tuple(zip(per_family(networks, config.api_vips), per_family(networks, config.ingress_vips)))
    problems = [
        problem
        for network, (api, ingress) in zip(networks, written)
        for problem in placement_problems(network, name, api, ingress, max_workers, config.user_managed_lb)
    ]
    if problems:
        raise ConfigError(problems)

    def ips(offset: int) -> tuple[IPAddress, ...]:
        return tuple(host(network, offset) for network in networks)

    master_slots = tuple(Node(f"{name}-master-{i}", "master", i, ips(MASTER_OFFSET + i)) for i in range(MASTER_SLOTS))
    worker_slots = tuple(Node(f"{name}-worker-{i}", "worker", i, ips(WORKER_OFFSET + i)) for i in range(max_workers))
    bootstrap = Node(f"{name}-bootstrap", "bootstrap", 0, ips(BOOTSTRAP_OFFSET))
    vips = tuple(effective_vips(network, api, ingress) for network, (api, ingress) in zip(networks, written))

    return AddressPlan(
        networks=networks,
        gateways=tuple(gateway(network) for network in networks),
        api_vips=tuple(api for api, _ in vips),
        ingress_vips=tuple(ingress for _, ingress in vips),
        bootstrap=bootstrap,
        helper_ips=ips(HELPER_OFFSET),
        master_slots=master_slots,
        worker_slots=worker_slots,
        master_count=config.masters.count,
        worker_count=config.workers.count,
        bootstrap_enabled=config.bootstrap.enabled,
        router_count=min(config.networking.router_nodes, max_workers),
        routers_on_masters=config.workers.count == 0,
        family_pools=tuple(
            _pools(host(network, WORKER_OFFSET + max_workers), network.broadcast_address - 1, set(pair))
            for network, pair in zip(networks, vips)
        ),
    )


def _pools(start: IPAddress, end: IPAddress, holes: set[IPAddress]) -> tuple[tuple[IPAddress, IPAddress], ...]:
    """The range start..end with the VIPs cut out (a VIP may sit at the top of the network)."""
    pools = []
    for hole in sorted(h for h in holes if start <= h <= end):
        if hole > start:
            pools.append((start, hole - 1))
        start = hole + 1
    if start <= end:
        pools.append((start, end))
    return tuple(pools)
