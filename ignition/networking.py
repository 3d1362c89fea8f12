"""The on-node networking a `platform: none` cluster must bring itself. Pure Python.

Every node: CoreDNS (static pod) answering the cluster's names, and a NetworkManager hook
that puts it first in resolv.conf. Nodes that may hold a VIP: keepalived (static pod) with
one unicast VRRP instance per VIP. Masters: haproxy (static pod) in front of every master's
API, and api-vip-redirect.service sending `<API VIP>:6443` to it while it is healthy.

Change isolation: peers, DNS names and backends come from the address plan's reserved
*slots*, never from the current node counts, so scaling workers or removing the bootstrap
changes no other node's files. The one exception: with no workers the masters run the
routers, so `workers.count` 0 vs more changes the masters' keepalived.conf.
docs/networking.md explains priorities, VRIDs and the rest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Any

from cluster.addresses import AddressPlan, Node
from cluster.config import ClusterConfig
from cluster.identity import ClusterIdentity
from cluster.networking import API_PORT, DNS_HEALTH_PORT, ROUTER_HEALTH_PORT
from ignition.assembly import Additions, File, Unit
from ignition.render import render

MANIFESTS = "/etc/kubernetes/manifests"
KEEPALIVED_CONF = "/etc/keepalived/keepalived.conf"
HAPROXY_CFG = "/etc/haproxy/haproxy.cfg"
COREFILE = "/etc/coredns/Corefile"
DISPATCHER = "/etc/NetworkManager/dispatcher.d/30-local-dns"
REDIRECT_SCRIPT = "/usr/local/bin/api-vip-redirect"
REDIRECT_CONFIG = "/etc/sysconfig/api-vip-redirect"
REDIRECT_UNIT = "api-vip-redirect.service"
REDIRECT_TABLE = "api_vip_redirect"
HAPROXY_HEALTH_PATH = "/haproxy_ready"

# VRRP priorities (docs/networking.md has the table). Each check adds its weight while it
# passes. The bootstrap with a ready API (100) beats any master (at most 70); once the
# bootstrap API is gone (50) a master with a ready API (55-70) takes over, but a bootstrap
# still starting up keeps the VIP from masters that have no API yet (40).
BOOTSTRAP_API_PRIORITY = 50
BOOTSTRAP_API_WEIGHT = 50
MASTER_API_PRIORITY = 40
MASTER_API_WEIGHT = 15
INGRESS_PRIORITY = 40


@dataclass(frozen=True)
class Check:
    """A keepalived health check: an HTTP(S) URL on this node that must answer 2xx."""

    name: str
    url: str
    # 0: a failing check puts the instance in FAULT, so the node drops out of the election.
    weight: int


@dataclass(frozen=True)
class Instance:
    name: str
    vip: IPv4Address
    vrid: int
    priority: int
    password: str
    peers: tuple[IPv4Address, ...]
    checks: tuple[Check, ...]


def vrids(config: ClusterConfig, identity: ClusterIdentity) -> dict[str, int]:
    """VRRP router IDs (1-255) of the two VIPs, always different from each other.

    Derived from the infra ID, which is unique per installation even for clusters with the
    same name; `ocp:networking.apiVrid` / `ingressVrid` override them.
    """
    settings = config.networking
    digest = int.from_bytes(hashlib.sha256(identity.infra_id.encode()).digest()[:8], "big")
    api = settings.api_vrid or 1 + digest % 255
    # 1 + (api + 0..253) % 255 is 1 to 254 steps on from the API's ID, around 255: never equal to it.
    ingress = settings.ingress_vrid or 1 + (api + digest // 255 % 254) % 255
    if ingress == api:  # only when ingressVrid is set and the derived API ID hit it
        api = ingress % 255 + 1
    return {"api": api, "ingress": ingress}


def node_additions(config: ClusterConfig, plan: AddressPlan, node: Node, identity: ClusterIdentity) -> Additions:
    """Every file and unit of the on-node networking for one node."""
    additions = _dns(config, plan, node)
    instances = _vrrp_instances(config, plan, node, identity)
    if instances:  # a worker that runs no router holds no VIP
        additions += _keepalived(config, node, instances)
    if node.role == "master":
        additions += _haproxy(config, plan)
    return additions


def _vrrp_instances(
    config: ClusterConfig, plan: AddressPlan, node: Node, identity: ClusterIdentity
) -> tuple[Instance, ...]:
    ids = vrids(config, identity)
    instances = []
    if node.role != "worker":
        api_ready = f"https://localhost:{API_PORT}/readyz"
        if node.role == "bootstrap":
            priority, checks = BOOTSTRAP_API_PRIORITY, (Check("api_ready", api_ready, BOOTSTRAP_API_WEIGHT),)
        else:
            through_haproxy = f"https://localhost:{config.networking.haproxy_port}/readyz"
            priority = MASTER_API_PRIORITY
            checks = (
                Check("api_ready", api_ready, MASTER_API_WEIGHT),
                Check("api_haproxy", through_haproxy, MASTER_API_WEIGHT),
            )
        instances.append(
            Instance(
                name="api",
                vip=plan.api_vip,
                vrid=ids["api"],
                priority=priority,
                password=identity.derive("keepalived-api", 8),
                peers=_peers((plan.bootstrap,) + plan.master_slots, node),
                checks=checks,
            )
        )
    if node in plan.router_slots:
        router_ready = f"http://localhost:{ROUTER_HEALTH_PORT}/healthz/ready"
        instances.append(
            Instance(
                name="ingress",
                vip=plan.ingress_vip,
                vrid=ids["ingress"],
                priority=INGRESS_PRIORITY,
                password=identity.derive("keepalived-ingress", 8),
                peers=_peers(plan.router_slots, node),
                checks=(Check("router_ready", router_ready, 0),),
            )
        )
    return tuple(instances)


def _peers(candidates: tuple[Node, ...], node: Node) -> tuple[IPv4Address, ...]:
    return tuple(candidate.ip for candidate in candidates if candidate.ip != node.ip)


def _keepalived(config: ClusterConfig, node: Node, instances: tuple[Instance, ...]) -> Additions:
    settings = config.networking
    checks = {check.name: check for instance in instances for check in instance.checks}
    conf = render(
        "keepalived.conf.j2",
        node_name=node.name,
        node_ip=node.ip,
        interface=settings.bootstrap_interface if node.role == "bootstrap" else settings.interface,
        advert_int=settings.advert_int,
        checks=list(checks.values()),
        instances=instances,
    )
    command = ["/usr/sbin/keepalived", "--dont-fork", "--log-console", "--vrrp", "--use-file", KEEPALIVED_CONF]
    return Additions(
        files=(
            # The VRRP passwords are in it.
            File(KEEPALIVED_CONF, conf.encode(), 0o600),
            _static_pod("keepalived", settings.keepalived_image, command, KEEPALIVED_CONF, privileged=True),
        )
    )


def _haproxy(config: ClusterConfig, plan: AddressPlan) -> Additions:
    settings = config.networking
    cfg = render(
        "haproxy.cfg.j2",
        api_vip=plan.api_vip,
        api_port=API_PORT,
        port=settings.haproxy_port,
        health_port=settings.haproxy_health_port,
        health_path=HAPROXY_HEALTH_PATH,
        stats_port=settings.haproxy_stats_port,
        masters=plan.master_slots,
    )
    env = render(
        "api-vip-redirect.env.j2",
        script=REDIRECT_SCRIPT,
        api_vip=plan.api_vip,
        api_port=API_PORT,
        lb_port=settings.haproxy_port,
        health_url=f"http://127.0.0.1:{settings.haproxy_health_port}{HAPROXY_HEALTH_PATH}",
        table=REDIRECT_TABLE,
    )
    command = ["/usr/sbin/haproxy", "-W", "-db", "-f", HAPROXY_CFG]
    return Additions(
        files=(
            File(HAPROXY_CFG, cfg.encode()),
            _static_pod("haproxy", settings.haproxy_image, command, HAPROXY_CFG),
            File(REDIRECT_SCRIPT, render("api-vip-redirect.sh.j2").encode(), 0o755),
            File(REDIRECT_CONFIG, env.encode()),
        ),
        units=(
            Unit(REDIRECT_UNIT, render("api-vip-redirect.service.j2", script=REDIRECT_SCRIPT, config=REDIRECT_CONFIG)),
        ),
    )


def _dns(config: ClusterConfig, plan: AddressPlan, node: Node) -> Additions:
    domain = config.cluster_domain
    escaped = domain.replace(".", r"\.")
    corefile = render(
        "Corefile.j2",
        domain=domain,
        health_port=DNS_HEALTH_PORT,
        records=[
            {"pattern": rf"^api(-int)?\.{escaped}\.$", "ip": plan.api_vip},
            {"pattern": rf"^.+\.apps\.{escaped}\.$", "ip": plan.ingress_vip},
        ],
        hosts=(plan.bootstrap,) + plan.master_slots + plan.worker_slots,
        nameservers=config.nameservers,
    )
    dispatcher = render("local-dns-dispatcher.sh.j2", node_ip=node.ip, domain=domain)
    command = ["/usr/bin/coredns", "-conf", COREFILE]
    liveness = {"path": "/health", "port": DNS_HEALTH_PORT}
    image = config.networking.coredns_image
    return Additions(
        files=(
            File(COREFILE, corefile.encode()),
            _static_pod("coredns", image, command, COREFILE, privileged=True, liveness=liveness),
            File(DISPATCHER, dispatcher.encode(), 0o755),
        )
    )


def _static_pod(
    name: str,
    image: str,
    command: list[str],
    config_file: str,
    privileged: bool = False,
    liveness: dict[str, Any] | None = None,
) -> File:
    """A static pod on the host network that reads its config from `config_file`'s directory."""
    manifest = render(
        "static-pod.yaml.j2",
        name=name,
        image=image,
        command=command,
        config_dir=config_file.rsplit("/", 1)[0],
        privileged=privileged,
        liveness=liveness,
    )
    return File(f"{MANIFESTS}/{name}.yaml", manifest.encode())
