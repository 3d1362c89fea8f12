"""The security group matrix (OpenShift 4.12's shape, FACTS section 2). Pure Python.

Everything between nodes, SSH included, is limited to the machine network (a bastion inside
is the way in). Beyond it only what clients must reach: the API and Ingress from
`openstack.apiAllowedCidrs` / `ingressAllowedCidrs` (default the world), NodePorts from
`openstack.nodePortAllowedCidrs` (default none), ICMP, and SSH to the bootstrap helper and
the bootstrap from `openstack.sshAllowedCidr` (both gone with the bootstrap). The helper
serves its config to the bootstrap's address alone. `exposure_table` lists every rule that reaches beyond the machine network, with its reason,
and every port of an extra network that no group filters (portSecurity false).

With `ocp:loadBalancer: UserManaged` no node runs keepalived: no VRRP rule. The user's balancer
reaches the nodes' 6443, 22623 (22624 in standalone mode), 80, 443 and 1936 (its checks) by the
same rules as everything else on the machine network; a balancer elsewhere must reach the nodes
from an address in it (docs/networking.md, "A load balancer of your own").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import NamedTuple

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig

WORLD = IPv4Network("0.0.0.0/0")
WORLD6 = IPv6Network("::/0")
WORLDS = {4: WORLD, 6: WORLD6}
NODE_PORTS = (30000, 32767)
Source = IPv4Network | IPv6Network


@dataclass(frozen=True)
class Rule:
    protocol: str  # tcp, udp, icmp, esp, vrrp (Neutron's names)
    port_min: int | None
    port_max: int | None
    source: Source
    description: str
    # Why this rule must admit more than the machine network; empty for rules that do not.
    why: str = ""

    @property
    def key(self) -> str:
        """Stable identity, used in resource names: changing one rule touches one resource."""
        ports = "" if self.port_min is None else f"-{self.port_min}" + ("" if self.port_max == self.port_min else f"-{self.port_max}")
        source = {WORLD: "world", WORLD6: "world6"}.get(self.source) or str(self.source).replace("/", "_").replace(":", "-")
        return f"{self.protocol}{ports}-{source}"

    @property
    def ethertype(self) -> str:
        return f"IPv{self.source.version}"

    @property
    def ports(self) -> str:
        """`tcp 6443`, `udp 30000-32767`, `icmp`."""
        if self.port_min is None:
            return self.protocol
        span = str(self.port_min) if self.port_max == self.port_min else f"{self.port_min}-{self.port_max}"
        return f"{self.protocol} {span}"


class Exposure(NamedTuple):
    """One row of the exposure table: a rule open beyond the machine network."""

    group: str
    rule: str
    source: str
    why: str


def _rule(protocol: str, low: int | None, high: int | None, source: Source, text: str, why: str = "") -> Rule:
    # Neutron's name for ICMP over IPv6.
    return Rule("ipv6-icmp" if protocol == "icmp" and source.version == 6 else protocol, low, high, source, text, why)


def _rules(source: Source, entries: list[tuple[str, int | None, int | None, str]]) -> list[Rule]:
    return [_rule(protocol, low, high, source, text) for protocol, low, high, text in entries]


def _on_machine_networks(config: ClusterConfig, entries: list[tuple[str, int | None, int | None, str]]) -> list[Rule]:
    """The entries from each family's machine network (dual-stack: the IPv6 one's rules after the IPv4 one's)."""
    return [rule for network in config.machine_networks for rule in _rules(network, entries)]


def _open_to(
    config: ClusterConfig, extra: Iterable[Source], entries: list[tuple[str, int | None, int | None, str]], why: str
) -> list[Rule]:
    """The machine network always (nodes and pods reach these through the VIPs too), then each
    configured source beyond it, with the reason it must be open."""
    rules = _on_machine_networks(config, entries)
    for source in dict.fromkeys(extra):
        if source not in config.machine_networks:
            rules += [_rule(protocol, low, high, source, text, why) for protocol, low, high, text in entries]
    return rules


def _clients(config: ClusterConfig, key: str) -> tuple[Source, ...]:
    """The sources a client key admits: as written, or unset the world of each family of the machine
    network (0.0.0.0/0, and ::/0 with IPv6)."""
    if config.openstack is None:
        return tuple(WORLDS[family] for family in config.families)
    if key not in config.openstack.model_fields_set:
        return tuple(WORLDS[family] for family in config.families)
    return getattr(config.openstack, key)


def within_machine_network(config: ClusterConfig, source: Source) -> bool:
    return any(source.version == network.version and source.subnet_of(network) for network in config.machine_networks)


def _intra_cluster(config: ClusterConfig) -> list[Rule]:
    vrrp = [] if config.user_managed_lb else [("vrrp", None, None, "keepalived VRRP (IP protocol 112)")]
    return _on_machine_networks(
        config,
        [
            ("udp", 4789, 4789, "VXLAN"),
            ("udp", 6081, 6081, "Geneve"),
            ("udp", 500, 500, "IPsec IKE"),
            ("udp", 4500, 4500, "IPsec NAT-T"),
            ("esp", None, None, "IPsec ESP"),
            ("tcp", 9000, 9999, "host-level services"),
            ("udp", 9000, 9999, "host-level services"),
            ("tcp", 10250, 10250, "kubelet"),
            *vrrp,
            ("tcp", 22, 22, "SSH"),
        ],
    )


def _node_common(config: ClusterConfig) -> list[Rule]:
    extra = config.openstack.node_port_allowed_cidrs if config.openstack else ()
    icmp = [
        _rule("icmp", None, None, WORLDS[family], "ICMP", "ping and ICMP errors (path MTU discovery) from clients, as the installer opens it")
        for family in config.families
    ]
    low, high = NODE_PORTS
    return icmp + _open_to(
        config,
        extra,
        [("tcp", low, high, "NodePort services"), ("udp", low, high, "NodePort services")],
        "NodePort services for these clients (ocp:openstack.nodePortAllowedCidrs)",
    )


def _ingress(config: ClusterConfig) -> list[Rule]:
    return _open_to(
        config,
        _clients(config, "ingress_allowed_cidrs"),
        [("tcp", 80, 80, "ingress HTTP"), ("tcp", 443, 443, "ingress HTTPS")],
        "clients reach the routes: console, OAuth, applications (ocp:openstack.ingressAllowedCidrs)",
    ) + _on_machine_networks(
        config, [("tcp", 1936, 1936, f"router health ({'the load balancer' if config.user_managed_lb else 'keepalived'} checks)")]
    )


def master_rules(config: ClusterConfig, plan: AddressPlan) -> list[Rule]:
    """Masters, and the bootstrap, which holds the API VIP and serves the MCS first."""
    rules = (
        _node_common(config)
        + _open_to(
            config,
            _clients(config, "api_allowed_cidrs"),
            [("tcp", 6443, 6443, "Kubernetes API")],
            "clients reach the Kubernetes API (ocp:openstack.apiAllowedCidrs)",
        )
        + _on_machine_networks(
            config,
            [
                ("tcp", 22623, 22623, "machine config server (HTTPS)"),
                ("tcp", 53, 53, "CoreDNS"),
                ("udp", 53, 53, "CoreDNS"),
                ("tcp", 6641, 6642, "OVN databases"),
                ("tcp", 10257, 10257, "kube-controller-manager"),
                ("tcp", 10259, 10259, "kube-scheduler"),
                ("tcp", 2379, 2380, "etcd"),
            ],
        )
        + _intra_cluster(config)
    )
    if not config.integrated:
        # First boot fetches the MCS config by VIP over plain HTTP: no DNS yet, and with
        # `platform: none` the MCS certificate names only api-int (docs/openstack.md).
        rules += _on_machine_networks(config, [("tcp", 22624, 22624, "machine config server (HTTP, first boot)")])
    return rules


def worker_rules(config: ClusterConfig) -> list[Rule]:
    return _node_common(config) + _intra_cluster(config)


def ingress_rules(config: ClusterConfig) -> list[Rule]:
    """A group of its own for the nodes that run the routers (and the Ingress VIP's port): which
    nodes those are was decided at install, so adding workers to a compact cluster moves no rule."""
    return _ingress(config)


def helper_rules(config: ClusterConfig, plan: AddressPlan) -> list[Rule]:
    """The bootstrap helper: its config server for the bootstrap alone, SSH for `pulumi up`."""
    port = config.bootstrap.helper.port
    ssh_from = config.helper_ssh_cidr
    why = "" if within_machine_network(config, ssh_from) else (
        "`pulumi up` copies the bootstrap config onto the helper (ocp:openstack.sshAllowedCidr)"
    )
    served = [("tcp", port, port, "bootstrap ignition over HTTP, to the bootstrap only")]
    return [rule for ip in plan.bootstrap.ips for rule in _rules(ip_network(ip), served)] + [
        Rule("tcp", 22, 22, ssh_from, "SSH, for uploading the bootstrap ignition", why)
    ]


def bootstrap_rules(config: ClusterConfig) -> list[Rule]:
    """The bootstrap alone (a group of its own, so no master admits it): SSH from where `pulumi up`
    runs, for `openshift-install gather bootstrap`. Inside the machine network the master group
    admits it already: nothing."""
    ssh_from = config.helper_ssh_cidr
    if within_machine_network(config, ssh_from):
        return []
    why = "`openshift-install gather bootstrap` from where `pulumi up` runs (ocp:openstack.sshAllowedCidr)"
    return [Rule("tcp", 22, 22, ssh_from, "SSH, for openshift-install gather bootstrap", why)]


def security_groups(config: ClusterConfig, plan: AddressPlan) -> dict[str, list[Rule]]:
    """Every OpenStack security group this configuration creates, by suffix; none on libvirt."""
    if config.platform != "openstack":
        return {}
    groups = {"master": master_rules(config, plan), "worker": worker_rules(config), "ingress": ingress_rules(config)}
    if plan.bootstrap_enabled:
        if config.uses_helper:
            groups["helper"] = helper_rules(config, plan)
        if bootstrap_rules(config):
            groups["bootstrap"] = bootstrap_rules(config)
    return groups


def exposure_table(config: ClusterConfig, plan: AddressPlan) -> list[Exposure]:
    """Every rule open beyond the machine network: (group, rule, source, why), in group order; then every
    port no group filters (unfiltered_ports). libvirt creates no security groups (its nodes sit on the
    host's NAT network): empty."""
    return [
        Exposure(group, rule.ports, str(rule.source), rule.why)
        for group, rules in security_groups(config, plan).items()
        for rule in rules
        if not within_machine_network(config, rule.source)
    ] + unfiltered_ports(config)


def unfiltered_ports(config: ClusterConfig) -> list[Exposure]:
    """The nodes' ports on extra networks that no security group filters, by pool: every port of those
    nodes is open to anything on the network. Without port security; and, where unfilteredMasterPorts
    says so, the masters' on a network without a subnet (the preflight refuses it unless said), whose
    ports nothing holds to an address while their groups admit the machine network by address."""
    rows = []
    for key, entry in config.openstack.keyed_extra_networks() if config.openstack else ():
        entry_key = key.removesuffix(".network")
        for pool in entry.on():
            said = " (unfilteredMasterPorts)" if pool == "masters" else ""
            if not entry.port_security:
                rows.append(Exposure(pool, "every port", f"anything on {entry.network}", f"{entry_key}: no port security, so no group{said}"))
            elif pool == "masters" and entry.unfiltered_master_ports:
                rows.append(Exposure(pool, "every port", f"anything on {entry.network}", f"{entry_key}: no subnet holds its ports to an address{said}"))
    return rows
