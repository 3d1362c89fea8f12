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
VIPs; and every node, the bootstrap included, makes its IPv6 addresses from its MAC as Neutron
expects (NM_IPV6_CONF). A single-family IPv4 stack renders exactly what it did before (running
nodes keep their files).
The VRRP side (checks, priorities, router IDs, instances) is ignition/vrrp.py;
docs/networking.md explains priorities, VRIDs and the rest.
"""

from __future__ import annotations

from typing import Any, Literal

from cluster.addresses import AddressPlan, Node, host_port, plan_addresses
from cluster.config import ClusterConfig, ConfigError
from cluster.identity import ClusterIdentity
from cluster.networking import API_PORT, DNS_HEALTH_PORT, IMAGE_NAMES
from ignition import vrrp
from ignition.assembly import Additions, File, Unit
from ignition.render import render
from ignition.vrrp import GARP_MASTER_DELAY_S, INTERFACE_VARIABLE, Instance
from ignition.vrrp import vrids as vrids  # where callers have always found it

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
# IPv6 addresses from the NIC's MAC (EUI-64), the link-local one included: Neutron's anti-spoofing lets a
# port speak only from the EUI-64 link-local address of its MAC, and RHCOS's default (stable-privacy) makes
# another, whose router solicitations, neighbour discovery and DHCPv6 are dropped. The MCO writes this file
# on platform: openstack only (templates/common/openstack/files/ipv6-config.yaml, 4.19 to 4.22), the
# installer on the OpenStack bootstrap (data/data/bootstrap/openstack/files/etc/NetworkManager/conf.d/02-ipv6.conf):
# a platform: none node gets it from here, the same path and contents.
NM_IPV6_CONF = "/etc/NetworkManager/conf.d/02-ipv6.conf"
KUBELET_DROPIN = "/etc/systemd/system/kubelet.service.d/20-wait-local-dns.conf"
REDIRECT_SCRIPT = "/usr/local/bin/api-vip-redirect"
REDIRECT_CONFIG = "/etc/sysconfig/api-vip-redirect"
REDIRECT_UNIT = "api-vip-redirect.service"
REDIRECT_TABLE = "api_vip_redirect"
HAPROXY_HEALTH_PATH = "/haproxy_ready"

# The static pods and the payload image each runs.
POD_IMAGES = {"keepalived": "keepalived-ipfailover", "haproxy": "haproxy-router", "coredns": "coredns"}

ImageSource = Literal["payload", "override"]


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



def node_additions(config: ClusterConfig, plan: AddressPlan, node: Node, identity: ClusterIdentity) -> Additions:
    """Every file and unit of the on-node networking for one node."""
    images = {name: ref for name, (ref, _source) in node_images(config, node, identity).items()}
    additions = _ipv6_addresses(plan) + _dns(config, plan, node, images)
    if config.user_managed_lb:
        return additions  # the user's balancer holds the VIPs: DNS and resolv.conf only
    instances = vrrp.vrrp_instances(config, plan, node, identity)
    if instances:  # a worker that runs no router holds no VIP
        additions += _keepalived(config, plan, node, instances, images)
    if node.role == "master":
        additions += _haproxy(config, plan, images)
    return additions



def _ipv6_addresses(plan: AddressPlan) -> Additions:
    """NetworkManager's EUI-64 addresses (NM_IPV6_CONF) where a machine network is IPv6; an IPv4 stack's
    nodes get nothing new (running nodes keep their files byte for byte)."""
    if all(network.version == 4 for network in plan.networks):
        return Additions()
    return Additions(files=(File(NM_IPV6_CONF, render("NetworkManager-ipv6.conf.j2").encode()),))


def _keepalived(
    config: ClusterConfig, plan: AddressPlan, node: Node, instances: tuple[Instance, ...], images: dict[str, str]
) -> Additions:
    checks = {check.name: check for instance in instances for check in instance.checks}
    conf = render(
        "keepalived.conf.j2",
        node_name=node.name,
        node_ip=node.ip,
        ipv6=vrrp.ipv6(plan),
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
            f"{INTERFACE_VARIABLE}{vrrp.suffix(plan, address.version).upper()}={address}" for address in node.ips
        ] if vrrp.ipv6(plan) else None,
        # Every one, whatever this node may hold: a VIP it held under another config (the Ingress
        # VIP of a compact cluster's master) is stale too.
        vips=[*plan.api_vips, *plan.ingress_vips],
    )  # fmt: skip
    run = ["/bin/sh", KEEPALIVED_RUN, KEEPALIVED_RUN_CONFIG, KEEPALIVED_CONF, KEEPALIVED_RUN_DIR]
    liveness = {"exec": {"command": [*run, "alive"]}, "initialDelaySeconds": 10, "periodSeconds": 10}
    return Additions(
        files=(
            # The VRRP passwords are in it.
            File(KEEPALIVED_CONF, conf.encode(), 0o600),
            File(KEEPALIVED_RUN, render("keepalived-run.sh.j2", ipv6=vrrp.ipv6(plan)).encode(), 0o755),
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
        api_vips=plan.api_vips,
        ipv6=vrrp.ipv6(plan),
        api_port=API_PORT,
        port=settings.haproxy_port,
        health_port=settings.haproxy_health_port,
        health_path=HAPROXY_HEALTH_PATH,
        stats_port=settings.haproxy_stats_port,
        # The primary family's addresses, as upstream's haproxy on two families: every master
        # has one, and haproxy's own family for the backends does not matter to its clients.
        masters=[{"name": slot.name, "address": host_port(slot.ip, API_PORT)} for slot in plan.master_slots],
    )
    env = render(
        "api-vip-redirect.env.j2",
        script=REDIRECT_SCRIPT,
        api_vips=plan.api_vips,
        ipv6=vrrp.ipv6(plan),
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
            File(REDIRECT_SCRIPT, render("api-vip-redirect.sh.j2", ipv6=vrrp.ipv6(plan)).encode(), 0o755),
            File(REDIRECT_CONFIG, env.encode()),
        ),
        units=(
            Unit(REDIRECT_UNIT, render("api-vip-redirect.service.j2", script=REDIRECT_SCRIPT, config=REDIRECT_CONFIG)),
        ),
    )


def _dns(config: ClusterConfig, plan: AddressPlan, node: Node, images: dict[str, str]) -> Additions:
    domain = config.cluster_domain
    escaped = domain.replace(".", r"\.")
    patterns = {"api": rf"^api(-int)?\.{escaped}\.$", "ingress": rf"^.+\.apps\.{escaped}\.$"}
    records = [
        {"type": "A" if vip.version == 4 else "AAAA", "pattern": patterns[name], "ip": vip}
        for version in sorted(vrrp.families(plan))
        for name, vips in (("api", plan.api_vips), ("ingress", plan.ingress_vips))
        for vip in vips
        if vip.version == version
    ]
    # One family only: the other's queries for the cluster's names get an empty answer.
    versions = vrrp.families(plan)
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
            for address in slot.ips
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
