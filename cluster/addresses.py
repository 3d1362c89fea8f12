"""Which address every VIP and node gets, from the layout in cluster/address_layout.py. Pure Python.

A node's address depends only on its role and index, never on how many nodes there are,
so scaling workers (within maxCount) or removing the bootstrap moves no one. The same
holds for the *slot* lists, which the on-node networking uses for VRRP peers and DNS
names: they cover every address a node of that role may ever have.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from typing import Literal

from cluster.address_layout import (
    BOOTSTRAP_OFFSET,
    HELPER_OFFSET,
    MASTER_OFFSET,
    MASTER_SLOTS,
    WORKER_OFFSET,
    effective_vips,
    gateway,
    host,
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
    ip: IPv4Address

    def fqdn(self, cluster_domain: str) -> str:
        return f"{self.name}.{cluster_domain}"


@dataclass(frozen=True)
class AddressPlan:
    network: IPv4Network
    gateway: IPv4Address
    api_vip: IPv4Address
    ingress_vip: IPv4Address
    bootstrap: Node
    helper_ip: IPv4Address
    master_slots: tuple[Node, ...]
    worker_slots: tuple[Node, ...]
    master_count: int
    worker_count: int
    bootstrap_enabled: bool
    allocation_pools: tuple[tuple[IPv4Address, IPv4Address], ...]

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


def server_name(config: ClusterConfig, node: Node, infra_id: str) -> str:
    """A node's server and host name. Integrated mode: `<infraID>-<role>-<index>`, as UPI names
    them (the cloud provider finds a node's server by this exact name, unique in the project);
    otherwise the planned name, `<cluster>-<role>-<index>`."""
    if not config.integrated:
        return node.name
    return f"{infra_id}-bootstrap" if node.role == "bootstrap" else f"{infra_id}-{node.role}-{node.index}"


def plan_addresses(config: ClusterConfig) -> AddressPlan:
    network = config.machine_network
    name = config.cluster_name
    last_host = network.broadcast_address - 1
    max_workers = config.workers.max_count
    pool_start = host(network, WORKER_OFFSET + max_workers)
    problems = placement_problems(network, name, config.api_vip, config.ingress_vip, max_workers)
    if problems:
        raise ConfigError(problems)

    master_slots = tuple(
        Node(f"{name}-master-{i}", "master", i, host(network, MASTER_OFFSET + i)) for i in range(MASTER_SLOTS)
    )
    worker_slots = tuple(
        Node(f"{name}-worker-{i}", "worker", i, host(network, WORKER_OFFSET + i)) for i in range(max_workers)
    )
    bootstrap = Node(f"{name}-bootstrap", "bootstrap", 0, host(network, BOOTSTRAP_OFFSET))
    api_vip, ingress_vip = effective_vips(network, config.api_vip, config.ingress_vip)

    return AddressPlan(
        network=network,
        gateway=gateway(network),
        api_vip=api_vip,
        ingress_vip=ingress_vip,
        bootstrap=bootstrap,
        helper_ip=host(network, HELPER_OFFSET),
        master_slots=master_slots,
        worker_slots=worker_slots,
        master_count=config.masters.count,
        worker_count=config.workers.count,
        bootstrap_enabled=config.bootstrap.enabled,
        router_count=min(config.networking.router_nodes, max_workers),
        routers_on_masters=config.workers.count == 0,
        allocation_pools=_pools(pool_start, last_host, {api_vip, ingress_vip}),
    )


def _pools(
    start: IPv4Address, end: IPv4Address, holes: set[IPv4Address]
) -> tuple[tuple[IPv4Address, IPv4Address], ...]:
    """The range start..end with the VIPs cut out (a VIP may sit at the top of the network)."""
    pools = []
    for hole in sorted(h for h in holes if start <= h <= end):
        if hole > start:
            pools.append((start, hole - 1))
        start = hole + 1
    if start <= end:
        pools.append((start, end))
    return tuple(pools)
