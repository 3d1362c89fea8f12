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

Two address families (a machine network of IPv4 and IPv6): every VIP of the second family gets
VRRP instances of its own (keepalived refuses both families in one), peers and source from the
nodes' addresses of that family; haproxy listens on both; the redirect and CoreDNS cover both
VIPs. A single-family IPv4 stack renders exactly what it did before (running nodes keep their files).
docs/networking.md explains priorities, VRIDs and the rest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from cluster.addresses import AddressPlan, Node, plan_addresses
from cluster.config import ClusterConfig, ConfigError
from cluster.identity import ClusterIdentity
from cluster.networking import API_PORT, DNS_HEALTH_PORT, IMAGE_NAMES, MCS_HTTP_PORT, ROUTER_HEALTH_PORT
from ignition import families
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
Address = families.Address
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


def _families(plan: AddressPlan) -> tuple[int, ...]:
    """The machine network's IP versions, primary first: (4,), (4, 6), (6, 4) or (6,)."""
    return tuple(network.version for network in families.networks(plan))


def _suffix(plan: AddressPlan, version: int) -> str:
    """What names of the second family's instances and variables end with: nothing for the primary family."""
    return "" if version == _families(plan)[0] else f"_ipv{version}"


def _address(addresses: tuple[Address, ...], version: int) -> Address:
    return next(address for address in addresses if address.version == version)


def _ipv6(plan: AddressPlan) -> bool:
    """Whether any IPv6 is in the plan: then the scripts are rendered for both families."""
    return 6 in _families(plan)


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
    for version in _families(plan)[1:]:
        for name in ("api", "ingress"):
            ids[name + _suffix(plan, version)] = _free_vrid(ids[name] + 127, set(ids.values()))
    return ids


def _free_vrid(start: int, taken: set[int]) -> int:
    """The first VRRP router ID from `start` on (around 255) that is not taken."""
    return next(vrid for step in range(255) if (vrid := 1 + (start - 1 + step) % 255) not in taken)


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
        instances += _per_family(
            plan, node, "api", families.api_vips(plan), ids, priority, identity.derive("keepalived-api", 8),
            (plan.bootstrap,) + plan.master_slots, checks,
        )  # fmt: skip
    if node in plan.router_slots:
        router_ready = f"http://localhost:{ROUTER_HEALTH_PORT}/healthz/ready"
        # The router's readiness (its pod's readiness probe): not ready, the node leaves
        # the election within two checks a second apart and the VIP moves at once.
        checks = (Check("router_ready", answers(router_ready), 0, interval=1, rise=3, fall=2),)
        instances += _per_family(
            plan, node, "ingress", families.ingress_vips(plan), ids, INGRESS_PRIORITY,
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
        suffix = _suffix(plan, vip.version)
        instances.append(
            Instance(
                name=name + suffix,
                vip=vip,
                vrid=ids[name + suffix],
                priority=priority,
                password=password if vip.version == 4 else None,
                source=_address(families.node_ips(node), vip.version),
                interface=INTERFACE_VARIABLE + suffix.upper(),
                peers=tuple(_address(families.node_ips(other), vip.version) for other in candidates if other.ip != node.ip),
                checks=checks,
            )
        )
    return instances


def _keepalived(
    config: ClusterConfig, plan: AddressPlan, node: Node, instances: tuple[Instance, ...], images: dict[str, str]
) -> Additions:
    checks = {check.name: check for instance in instances for check in instance.checks}
    conf = render(
        "keepalived.conf.j2",
        node_name=node.name,
        node_ip=node.ip,
        ipv6=_ipv6(plan),
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
        # Each of the node's addresses, after the keepalived variable naming its interface.
        interfaces=[
            f"{INTERFACE_VARIABLE}{_suffix(plan, address.version).upper()}={address}" for address in families.node_ips(node)
        ] if _ipv6(plan) else None,
        # Every one, whatever this node may hold: a VIP it held under another config (the Ingress
        # VIP of a compact cluster's master) is stale too.
        vips=[*families.api_vips(plan), *families.ingress_vips(plan)],
    )  # fmt: skip
    run = ["/bin/sh", KEEPALIVED_RUN, KEEPALIVED_RUN_CONFIG, KEEPALIVED_CONF, KEEPALIVED_RUN_DIR]
    liveness = {"exec": {"command": [*run, "alive"]}, "initialDelaySeconds": 10, "periodSeconds": 10}
    return Additions(
        files=(
            # The VRRP passwords are in it.
            File(KEEPALIVED_CONF, conf.encode(), 0o600),
            File(KEEPALIVED_RUN, render("keepalived-run.sh.j2", ipv6=_ipv6(plan)).encode(), 0o755),
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
        api_vips=families.api_vips(plan),
        ipv6=_ipv6(plan),
        api_port=API_PORT,
        port=settings.haproxy_port,
        health_port=settings.haproxy_health_port,
        health_path=HAPROXY_HEALTH_PATH,
        stats_port=settings.haproxy_stats_port,
        # The primary family's addresses, as upstream's haproxy on two families: every master
        # has one, and haproxy's own family for the backends does not matter to its clients.
        masters=[{"name": slot.name, "address": _host_port(slot.ip, API_PORT)} for slot in plan.master_slots],
    )
    env = render(
        "api-vip-redirect.env.j2",
        script=REDIRECT_SCRIPT,
        api_vips=families.api_vips(plan),
        ipv6=_ipv6(plan),
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
            File(REDIRECT_SCRIPT, render("api-vip-redirect.sh.j2", ipv6=_ipv6(plan)).encode(), 0o755),
            File(REDIRECT_CONFIG, env.encode()),
        ),
        units=(
            Unit(REDIRECT_UNIT, render("api-vip-redirect.service.j2", script=REDIRECT_SCRIPT, config=REDIRECT_CONFIG)),
        ),
    )


def _host_port(address: Address, port: int) -> str:
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def _dns(config: ClusterConfig, plan: AddressPlan, node: Node, images: dict[str, str]) -> Additions:
    domain = config.cluster_domain
    escaped = domain.replace(".", r"\.")
    patterns = {"api": rf"^api(-int)?\.{escaped}\.$", "ingress": rf"^.+\.apps\.{escaped}\.$"}
    records = [
        {"type": "A" if vip.version == 4 else "AAAA", "pattern": patterns[name], "ip": vip}
        for version in sorted(_families(plan))
        for name, vips in (("api", families.api_vips(plan)), ("ingress", families.ingress_vips(plan)))
        for vip in vips
        if vip.version == version
    ]
    # One family only: the other's queries for the cluster's names get an empty answer.
    versions = _families(plan)
    empty = None if len(versions) == 2 else {"type": "AAAA" if versions == (4,) else "A", "only": f"IPv{versions[0]}"}
    corefile = render(
        "Corefile.j2",
        domain=domain,
        health_port=DNS_HEALTH_PORT,
        records=records,
        empty=empty,
        patterns=list(patterns.values()),
        hosts=[
            {"ip": address, "name": slot.name}
            for slot in (plan.bootstrap,) + plan.master_slots + plan.worker_slots
            for address in families.node_ips(slot)
        ],
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
