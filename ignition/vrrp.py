"""The VRRP side of the on-node networking: keepalived's health checks, priorities, router IDs
and one instance per VIP per address family. Pure Python (docs/networking.md, keepalived)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

from cluster.addresses import AddressPlan, Node, plan_addresses
from cluster.config import ClusterConfig
from cluster.identity import ClusterIdentity
from cluster.networking import API_PORT, MCS_HTTP_PORT, ROUTER_HEALTH_PORT

Address = IPv4Address | IPv6Address

# VRRP priorities (docs/networking.md has the table). Each check adds its weight while it
# passes; a failing weight-0 check takes the node out of the election at once (priority 0
# sent: the VIP moves within a second). The bootstrap serves only while its MCS listens; with
# its API too (100) it beats any master (at most 90); with its MCS only (50) it still beats
# masters that have no API yet (40), so masters can fetch their configs, but not one whose
# API is ready (55 and more). A master's MCS outweighs its API checks: haproxy serves the API
# through the other masters, but only the holder's own MCS answers `<API VIP>:22624`.
BOOTSTRAP_API_PRIORITY = 50
BOOTSTRAP_API_WEIGHT = 50
MASTER_API_PRIORITY = 40
MASTER_CHECK_WEIGHT = 15
MASTER_MCS_WEIGHT = 20
INGRESS_PRIORITY = 40
# keepalived's second gratuitous ARP burst, this long after taking a VIP (its default: 5 s).
# Masters of equal priority whose timers run out together all take the VIP for a moment, and a
# client keeps the last burst it heard, maybe a loser's, until the winner's second one.
GARP_MASTER_DELAY_S = 1

# keepalived's variable for the interface holding the node's address of the primary family.
INTERFACE_VARIABLE = "VRRP_INTERFACE"


@dataclass(frozen=True)
class Check:
    """A keepalived health check: a command that exits 0 while what it checks is fine."""

    name: str
    script: str
    # 0: a failing check puts the instance in FAULT, so the node drops out of the election.
    weight: int
    # Seconds between runs; a state changes after `rise` passes or `fall` failures in a row.
    interval: int = 2
    rise: int = 3
    fall: int = 2


def answers(url: str) -> str:
    """The check script: `url` on this node answers 2xx within a second."""
    return f"/usr/bin/curl -o /dev/null -kfs --max-time 1 {url}"


def listening(port: int) -> str:
    """The check script: something on this node listens on TCP `port` (IPv4 or IPv6). No
    connection: OVN-Kubernetes rejects those to the MCS from the node itself. `ss` is in the
    keepalived image (iproute) and on the host; the pod shares the host's network."""
    return f"/bin/sh -c 'ss -Hltn sport = :{port} | grep -q .'"


@dataclass(frozen=True)
class Instance:
    name: str
    vip: Address
    vrid: int
    priority: int
    # None for IPv6: keepalived speaks VRRP version 3 there, which has no authentication.
    password: str | None
    source: Address  # the node's address of the VIP's family
    interface: str  # the keepalived variable naming the interface that holds `source`
    peers: tuple[Address, ...]
    checks: tuple[Check, ...]


def families(plan: AddressPlan) -> tuple[int, ...]:
    """The machine network's IP versions, primary first: (4,), (4, 6), (6, 4) or (6,)."""
    return tuple(network.version for network in plan.networks)


def suffix(plan: AddressPlan, version: int) -> str:
    """What names of the second family's instances and variables end with: nothing for the primary family."""
    return "" if version == families(plan)[0] else f"_ipv{version}"


def _address(addresses: tuple[Address, ...], version: int) -> Address:
    return next(address for address in addresses if address.version == version)


def ipv6(plan: AddressPlan) -> bool:
    """Whether any IPv6 is in the plan: then the scripts are rendered for both families."""
    return 6 in families(plan)


def vrids(config: ClusterConfig, identity: ClusterIdentity) -> dict[str, int]:
    """VRRP router IDs (1-255) of the VIPs, always different from each other: `api` and `ingress`,
    and with a second address family `api_ipv6` and `ingress_ipv6` (or `_ipv4`, IPv6 first).

    Derived from the infra ID, which is unique per installation even for clusters with the
    same name; `ocp:networking.apiVrid` / `ingressVrid` override them. The second family's
    follow from them: half the range on from its twin, stepping past IDs already taken.
    """
    settings = config.networking
    digest = int.from_bytes(hashlib.sha256(identity.infra_id.encode()).digest()[:8], "big")
    api = settings.api_vrid or 1 + digest % 255
    # 1 + (api + 0..253) % 255 is 1 to 254 steps on from the API's ID, around 255: never equal to it.
    ingress = settings.ingress_vrid or 1 + (api + digest // 255 % 254) % 255
    if ingress == api:  # only when ingressVrid is set and the derived API ID hit it
        api = ingress % 255 + 1
    ids = {"api": api, "ingress": ingress}
    plan = plan_addresses(config)
    for version in families(plan)[1:]:
        for name in ("api", "ingress"):
            ids[name + suffix(plan, version)] = _free_vrid(ids[name] + 127, set(ids.values()))
    return ids


def _free_vrid(start: int, taken: set[int]) -> int:
    """The first VRRP router ID from `start` on (around 255) that is not taken."""
    return next(vrid for step in range(255) if (vrid := 1 + (start - 1 + step) % 255) not in taken)


def vrrp_instances(
    config: ClusterConfig, plan: AddressPlan, node: Node, identity: ClusterIdentity
) -> tuple[Instance, ...]:
    ids = vrids(config, identity)
    instances = []
    if node.role != "worker":
        api_ready = answers(f"https://localhost:{API_PORT}/readyz")
        mcs = listening(MCS_HTTP_PORT)
        if node.role == "bootstrap":
            priority = BOOTSTRAP_API_PRIORITY
            checks = (
                # No MCS: bootkube is done (or not started): out of the election at once.
                Check("mcs_listening", mcs, 0, interval=1, rise=2, fall=2),
                Check("api_ready", api_ready, BOOTSTRAP_API_WEIGHT),
            )
        else:
            through_haproxy = answers(f"https://localhost:{config.networking.haproxy_port}/readyz")
            priority = MASTER_API_PRIORITY
            checks = (
                Check("api_ready", api_ready, MASTER_CHECK_WEIGHT),
                Check("api_haproxy", through_haproxy, MASTER_CHECK_WEIGHT),
                Check("mcs_listening", mcs, MASTER_MCS_WEIGHT, interval=1),
            )
        instances += _per_family(
            plan, node, "api", plan.api_vips, ids, priority, identity.derive("keepalived-api", 8),
            (plan.bootstrap,) + plan.master_slots, checks,
        )  # fmt: skip
    if node in plan.router_slots:
        router_ready = f"http://localhost:{ROUTER_HEALTH_PORT}/healthz/ready"
        # The router's readiness (its pod's readiness probe): not ready, the node leaves
        # the election within two checks a second apart and the VIP moves at once.
        checks = (Check("router_ready", answers(router_ready), 0, interval=1, rise=3, fall=2),)
        instances += _per_family(
            plan, node, "ingress", plan.ingress_vips, ids, INGRESS_PRIORITY,
            identity.derive("keepalived-ingress", 8), plan.router_slots, checks,
        )  # fmt: skip
    return tuple(instances)


def _per_family(
    plan: AddressPlan,
    node: Node,
    name: str,
    vips: tuple[Address, ...],
    ids: dict[str, int],
    priority: int,
    password: str,
    candidates: tuple[Node, ...],
    checks: tuple[Check, ...],
) -> list[Instance]:
    """One instance per VIP, primary family first, each speaking from the node's address of its
    family to the candidates' addresses of that family, with the same checks and priority."""
    instances = []
    for vip in vips:
        ending = suffix(plan, vip.version)
        instances.append(
            Instance(
                name=name + ending,
                vip=vip,
                vrid=ids[name + ending],
                priority=priority,
                password=password if vip.version == 4 else None,
                source=_address(node.ips, vip.version),
                interface=INTERFACE_VARIABLE + ending.upper(),
                peers=tuple(_address(other.ips, vip.version) for other in candidates if other.ip != node.ip),
                checks=checks,
            )
        )
    return instances

