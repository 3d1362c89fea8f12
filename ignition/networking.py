"""The on-node networking a `platform: none` cluster must bring itself. Pure Python.

Every node: CoreDNS (static pod) answering the cluster's names, a path unit and a oneshot
service that put it first in resolv.conf whenever NetworkManager's own copy changes
(NetworkManager itself told to leave the file alone), and a kubelet that waits for that.
Nodes that may hold a VIP: keepalived (static pod) with one unicast VRRP instance per VIP,
run by keepalived-run on whichever interface holds the node's address. Masters: haproxy
(static pod) in front of every master's API, and api-vip-redirect.service sending
`<API VIP>:6443` to it while it is healthy. The machine config server is never proxied:
OVN-Kubernetes rejects every connection a node opens to 22623/22624, so `<API VIP>:22624`
reaches the holder's own MCS, and the API VIP only sits where one listens. Images come from
the installer's release payload unless `ocp:networking.images` overrides them (`node_images`).

With `ocp:loadBalancer: UserManaged` the user's own balancer holds both VIPs: no node runs
keepalived, haproxy or the redirect, and every node keeps CoreDNS and the resolv.conf handling,
whose records still name the VIPs (docs/networking.md, "A load balancer of your own").

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
from typing import Any, Literal

from cluster.addresses import AddressPlan, Node, plan_addresses
from cluster.config import ClusterConfig, ConfigError
from cluster.identity import ClusterIdentity
from cluster.networking import API_PORT, DNS_HEALTH_PORT, IMAGE_NAMES, MCS_HTTP_PORT, ROUTER_HEALTH_PORT
from ignition.assembly import Additions, File, Unit
from ignition.render import render

MANIFESTS = "/etc/kubernetes/manifests"
KEEPALIVED_CONF = "/etc/keepalived/keepalived.conf"
KEEPALIVED_RUN = "/etc/keepalived/keepalived-run"
KEEPALIVED_RUN_CONFIG = "/etc/keepalived/keepalived-run.env"
# keepalived's writable directory in its pod (an emptyDir): the config with the interface, pid files.
KEEPALIVED_RUN_DIR = "/run/keepalived"
HAPROXY_CFG = "/etc/haproxy/haproxy.cfg"
COREFILE = "/etc/coredns/Corefile"
PREPENDER = "/usr/local/bin/local-dns-prepender"
PREPENDER_SERVICE = "local-dns-prepender.service"
PREPENDER_PATH = "local-dns-prepender.path"
# What NetworkManager learnt, written there even with rc-manager=unmanaged.
NM_RESOLV_CONF = "/run/NetworkManager/resolv.conf"
NM_CONF = "/etc/NetworkManager/conf.d/99-local-dns.conf"
KUBELET_DROPIN = "/etc/systemd/system/kubelet.service.d/20-wait-local-dns.conf"
REDIRECT_SCRIPT = "/usr/local/bin/api-vip-redirect"
REDIRECT_CONFIG = "/etc/sysconfig/api-vip-redirect"
REDIRECT_UNIT = "api-vip-redirect.service"
REDIRECT_TABLE = "api_vip_redirect"
HAPROXY_HEALTH_PATH = "/haproxy_ready"

# The static pods and the payload image each runs.
POD_IMAGES = {"keepalived": "keepalived-ipfailover", "haproxy": "haproxy-router", "coredns": "coredns"}

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

ImageSource = Literal["payload", "override"]


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
    vip: IPv4Address
    vrid: int
    priority: int
    password: str
    peers: tuple[IPv4Address, ...]
    checks: tuple[Check, ...]


def node_images(config: ClusterConfig, node: Node, identity: ClusterIdentity) -> dict[str, tuple[str, ImageSource]]:
    """Every image `node` runs, by payload name: (pullspec, where it came from).

    `ocp:networking.images.<name>` wins; otherwise the release payload the installer
    generated the configs for (`identity.release_images`, digest-pinned). Raises ConfigError,
    one message per image found in neither, naming the key to set."""
    overrides = config.networking.images
    images: dict[str, tuple[str, ImageSource]] = {}
    problems = []
    for name in sorted(POD_IMAGES[pod] for pod in _pods(config, node)):
        if name in overrides:
            images[name] = (overrides[name], "override")
        elif name in identity.release_images:
            images[name] = (identity.release_images[name], "payload")
        else:
            release = identity.release_image or "the release payload (not recorded by the installer run)"
            problems.append(
                f"ocp:networking.images.{name}: no image for {IMAGE_NAMES[name]} in {release}: set it to a "
                f"digest-pinned pullspec, e.g. the output of `oc adm release info --image-for={name} <release image>`"
            )
    if problems:
        raise ConfigError(problems)
    return images


def _pods(config: ClusterConfig, node: Node) -> tuple[str, ...]:
    """The static pods `node` runs: CoreDNS everywhere; keepalived and haproxy only where this
    program runs the VIPs (not with the user's own balancer)."""
    pods = ["coredns"]
    if config.user_managed_lb:
        return tuple(pods)
    if node.role != "worker" or _routes_ingress(config, node):
        pods.append("keepalived")
    if node.role == "master":
        pods.append("haproxy")
    return tuple(pods)


def _routes_ingress(config: ClusterConfig, node: Node) -> bool:
    return node in plan_addresses(config).router_slots


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
    images = {name: ref for name, (ref, _source) in node_images(config, node, identity).items()}
    additions = _dns(config, plan, node, images)
    if config.user_managed_lb:
        return additions  # the user's balancer holds the VIPs: DNS and resolv.conf only
    instances = _vrrp_instances(config, plan, node, identity)
    if instances:  # a worker that runs no router holds no VIP
        additions += _keepalived(config, plan, node, instances, images)
    if node.role == "master":
        additions += _haproxy(config, plan, images)
    return additions


def _vrrp_instances(
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
                # The router's readiness (its pod's readiness probe): not ready, the node leaves
                # the election within two checks a second apart and the VIP moves at once.
                checks=(Check("router_ready", answers(router_ready), 0, interval=1, rise=3, fall=2),),
            )
        )
    return tuple(instances)


def _peers(candidates: tuple[Node, ...], node: Node) -> tuple[IPv4Address, ...]:
    return tuple(candidate.ip for candidate in candidates if candidate.ip != node.ip)


def _keepalived(
    config: ClusterConfig, plan: AddressPlan, node: Node, instances: tuple[Instance, ...], images: dict[str, str]
) -> Additions:
    checks = {check.name: check for instance in instances for check in instance.checks}
    conf = render(
        "keepalived.conf.j2",
        node_name=node.name,
        node_ip=node.ip,
        runner=KEEPALIVED_RUN,
        advert_int=config.networking.advert_int,
        garp_master_delay=GARP_MASTER_DELAY_S,
        checks=list(checks.values()),
        instances=instances,
    )
    settings = render(
        "keepalived-run.env.j2",
        runner=KEEPALIVED_RUN,
        node_ip=node.ip,
        # Both, whatever this node may hold: a VIP it held under another config (the Ingress
        # VIP of a compact cluster's master) is stale too.
        vips=[plan.api_vip, plan.ingress_vip],
    )
    run = ["/bin/sh", KEEPALIVED_RUN, KEEPALIVED_RUN_CONFIG, KEEPALIVED_CONF, KEEPALIVED_RUN_DIR]
    liveness = {"exec": {"command": [*run, "alive"]}, "initialDelaySeconds": 10, "periodSeconds": 10}
    return Additions(
        files=(
            # The VRRP passwords are in it.
            File(KEEPALIVED_CONF, conf.encode(), 0o600),
            File(KEEPALIVED_RUN, render("keepalived-run.sh.j2").encode(), 0o755),
            File(KEEPALIVED_RUN_CONFIG, settings.encode()),
            _static_pod(
                "keepalived", images, run, KEEPALIVED_CONF, liveness, privileged=True, run_dir=KEEPALIVED_RUN_DIR
            ),
        )
    )


def _haproxy(config: ClusterConfig, plan: AddressPlan, images: dict[str, str]) -> Additions:
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
    # The stats page answers while haproxy runs, whatever its backends: a liveness that never
    # restarts haproxy for a cluster still coming up.
    liveness = {
        "httpGet": {"host": "127.0.0.1", "path": "/", "port": settings.haproxy_stats_port},
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    return Additions(
        files=(
            File(HAPROXY_CFG, cfg.encode()),
            _static_pod("haproxy", images, command, HAPROXY_CFG, liveness),
            File(REDIRECT_SCRIPT, render("api-vip-redirect.sh.j2").encode(), 0o755),
            File(REDIRECT_CONFIG, env.encode()),
        ),
        units=(
            Unit(REDIRECT_UNIT, render("api-vip-redirect.service.j2", script=REDIRECT_SCRIPT, config=REDIRECT_CONFIG)),
        ),
    )


def _dns(config: ClusterConfig, plan: AddressPlan, node: Node, images: dict[str, str]) -> Additions:
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
    prepender = render(
        "local-dns-prepender.sh.j2", node_ip=node.ip, domain=domain, nm_conf=NM_CONF, upstream=NM_RESOLV_CONF
    )
    command = ["/usr/bin/coredns", "-conf", COREFILE]
    liveness = {
        "httpGet": {"path": "/health", "port": DNS_HEALTH_PORT},
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    return Additions(
        files=(
            File(COREFILE, corefile.encode()),
            _static_pod("coredns", images, command, COREFILE, liveness, privileged=True),
            File(PREPENDER, prepender.encode(), 0o755),
            File(NM_CONF, render("NetworkManager-local-dns.conf.j2", writer=PREPENDER_SERVICE).encode()),
            File(
                KUBELET_DROPIN,
                render("kubelet-wait-resolv.conf.j2", node_ip=node.ip, prepender=PREPENDER_SERVICE).encode(),
            ),
        ),
        units=(
            Unit(PREPENDER_PATH, render("local-dns-prepender.path.j2", upstream=NM_RESOLV_CONF, service=PREPENDER_SERVICE)),
            Unit(PREPENDER_SERVICE, render("local-dns-prepender.service.j2", script=PREPENDER)),
        ),
    )


def _static_pod(
    name: str,
    images: dict[str, str],
    command: list[str],
    config_file: str,
    liveness: dict[str, Any],
    privileged: bool = False,
    run_dir: str | None = None,
) -> File:
    """A static pod on the host network that reads its config from `config_file`'s directory."""
    manifest = render(
        "static-pod.yaml.j2",
        name=name,
        image=images[POD_IMAGES[name]],
        command=command,
        config_dir=config_file.rsplit("/", 1)[0],
        run_dir=run_dir,
        privileged=privileged,
        liveness=liveness,
    )
    return File(f"{MANIFESTS}/{name}.yaml", manifest.encode())
