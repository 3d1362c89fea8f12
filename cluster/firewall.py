"""The security group matrix (OpenShift 4.12's shape, FACTS section 2). Pure Python.

World-open: only what clients outside must reach (API, ingress when the role runs routers,
node ports, ICMP). Everything between nodes is limited to the machine network; SSH to
`openstack.sshAllowedCidr` (default: the machine network).
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

WORLD = IPv4Network("0.0.0.0/0")


@dataclass(frozen=True)
class Rule:
    protocol: str  # tcp, udp, icmp, esp, vrrp (Neutron's names)
    port_min: int | None
    port_max: int | None
    source: IPv4Network
    description: str

    @property
    def key(self) -> str:
        """Stable identity, used in resource names: changing one rule touches one resource."""
        ports = "" if self.port_min is None else f"-{self.port_min}" + ("" if self.port_max == self.port_min else f"-{self.port_max}")
        source = "world" if self.source == WORLD else str(self.source).replace("/", "_")
        return f"{self.protocol}{ports}-{source}"


def _rules(source: IPv4Network, entries: list[tuple[str, int | None, int | None, str]]) -> list[Rule]:
    return [Rule(protocol, low, high, source, text) for protocol, low, high, text in entries]


def _intra_cluster(cidr: IPv4Network) -> list[Rule]:
    return _rules(
        cidr,
        [
            ("udp", 4789, 4789, "VXLAN"),
            ("udp", 6081, 6081, "Geneve"),
            ("udp", 500, 500, "IPsec IKE"),
            ("udp", 4500, 4500, "IPsec NAT-T"),
            ("esp", None, None, "IPsec ESP"),
            ("tcp", 9000, 9999, "host-level services"),
            ("udp", 9000, 9999, "host-level services"),
            ("tcp", 10250, 10250, "kubelet"),
            ("vrrp", None, None, "keepalived VRRP (IP protocol 112)"),
        ],
    )


def _node_ports() -> list[Rule]:
    return _rules(
        WORLD,
        [
            ("icmp", None, None, "ICMP"),
            ("tcp", 30000, 32767, "NodePort services"),
            ("udp", 30000, 32767, "NodePort services"),
        ],
    )


def _ingress(cidr: IPv4Network) -> list[Rule]:
    return _rules(WORLD, [("tcp", 80, 80, "ingress HTTP"), ("tcp", 443, 443, "ingress HTTPS")]) + _rules(
        cidr, [("tcp", 1936, 1936, "router health (keepalived checks)")]
    )


def master_rules(cidr: IPv4Network, ssh_from: IPv4Network, schedulable: bool) -> list[Rule]:
    rules = (
        _node_ports()
        + _rules(WORLD, [("tcp", 6443, 6443, "Kubernetes API")])
        + _rules(
            cidr,
            [
                ("tcp", 22623, 22623, "machine config server (HTTPS)"),
                # First boot fetches the MCS config by VIP over plain HTTP: no DNS yet, and the
                # MCS certificate names only api-int (see README, "first boot").
                ("tcp", 22624, 22624, "machine config server (HTTP, first boot)"),
                ("tcp", 53, 53, "CoreDNS"),
                ("udp", 53, 53, "CoreDNS"),
                ("tcp", 6641, 6642, "OVN databases"),
                ("tcp", 10257, 10257, "kube-controller-manager"),
                ("tcp", 10259, 10259, "kube-scheduler"),
                ("tcp", 2379, 2380, "etcd"),
            ],
        )
        + _intra_cluster(cidr)
        + _rules(ssh_from, [("tcp", 22, 22, "SSH")])
    )
    if schedulable:  # no workers: the masters run the routers
        rules += _ingress(cidr)
    return rules


def worker_rules(cidr: IPv4Network, ssh_from: IPv4Network) -> list[Rule]:
    return _node_ports() + _ingress(cidr) + _intra_cluster(cidr) + _rules(ssh_from, [("tcp", 22, 22, "SSH")])


def helper_rules(cidr: IPv4Network, ssh_from: IPv4Network, port: int) -> list[Rule]:
    """The bootstrap helper: its config server for the machine network only, SSH for `pulumi up`."""
    return _rules(cidr, [("tcp", port, port, "bootstrap ignition over HTTP")]) + _rules(
        ssh_from, [("tcp", 22, 22, "SSH, for uploading the bootstrap ignition")]
    )
