"""Each node's ignition: the installer's role config plus this program's additions. Pure Python.

- Integrated mode (`platform: openstack`): masters and workers keep the installer's pointer
  config unchanged (`https://<API VIP>:22623/config/<role>`: the machine config server's
  certificate carries the VIP as an IP SAN), and the machine-config-operator renders the
  on-node networking; this program adds the hostname only.
- Standalone mode and libvirt (`platform: none`): the pointer's merge source becomes
  `http://<API VIP>:22624/config/<role>`: at first boot there is no cluster DNS to resolve
  `api-int`, and the machine config server's certificate names only `api-int`, so HTTPS by
  IP cannot verify. Port 22624 is the MCS's plain-HTTP listener, open to the machine network
  only. Every node also gets this program's keepalived, haproxy, CoreDNS and resolv.conf;
  with `ocp:loadBalancer: UserManaged` CoreDNS and resolv.conf only, and the user's balancer
  fronts `<API VIP>:22624` too (docs/networking.md, "A load balancer of your own").
- The bootstrap's full config (installer's + additions) is about 300 KB, far above Nova's
  user_data limit: on OpenStack it is *served*, as a private Glance image fetched with a Keystone
  token (bootstrap.configSource: glance, as the installer does) or by the bootstrap helper (over
  TLS, its CA pinned in the shim), and
  the bootstrap gets a shim that merges it, verified by sha512. On libvirt (fw_cfg) it is passed
  directly.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Literal

import yaml

from cluster.addresses import AddressPlan, Node, host_port, server_name
from cluster.config import ClusterConfig
from cluster.helper_tls import HelperTls, helper_tls
from cluster.identity import ClusterIdentity
from cluster.installer import InstallerAssets
from ignition import assembly, chrony
from ignition.assembly import Additions, File, NodeIgnition

MCS_PLAIN_PORT = 22624
# This project's budget, half of Nova's (65535 bytes of base64, about 48 KiB of JSON): a master
# with 500 reserved worker slots needs about 19.3 KB (docs/networking.md, sizes).
USER_DATA_LIMIT = 24 * 1024
SHIM_LIMIT = 4 * 1024
SCHEDULER_MANIFEST = "/opt/openshift/manifests/cluster-scheduler-02-config.yml"
# bootkube.sh hands this file to the MCO's bootstrap render (--cloud-provider-ca-file) only if it
# exists; the masters then get the cloud's CA where the cloud provider config names it.
CLOUD_CA_FILE = "/opt/openshift/tls/cloud-ca-cert.pem"
# The installer's documented way to shape the default IngressController at install time.
INGRESS_MANIFEST = "/opt/openshift/manifests/cluster-ingress-default-ingresscontroller.yaml"
# The installer's bootstrap approves every pending CSR, any name and requester, every 20 s until
# bootkube is done (data/data/bootstrap/files/usr/local/bin/approve-csr.sh, run by
# systemd/common/units/approve-csr.service, enabled): masked here. Its job, the masters' first client
# and serving requests, is done by cluster/csr.py's judge, scoped to the stack's masters (`python -m
# ocp install` beside its bootstrap wait, or `python -m ocp approve-csrs`).
BLANKET_APPROVER = "approve-csr.service"

BootstrapDelivery = Literal["served", "direct"]
# Nova refuses user_data whose base64 is longer.
NOVA_USER_DATA_BASE64 = 65535
# The Glance shim is sized before anything is made, with room for what only the run knows.
# Keystone's Fernet tokens are at most 255 characters (`keystone-manage doctor`), JWS ones under
# 1 KB; only LDAP identities or many federated groups make them longer: 8 KiB is far beyond.
TOKEN_BUDGET = 8192
# The catalog's image endpoint (a URL), and an infra ID (the installer's are at most 27 characters).
ENDPOINT_BUDGET = 512
INFRA_ID_BUDGET = 27
Contributor = Callable[[ClusterConfig, AddressPlan, Node, ClusterIdentity], Additions]


def _networking(config: ClusterConfig, plan: AddressPlan, node: Node, identity: ClusterIdentity) -> Additions:
    from ignition import networking  # keepalived, haproxy, CoreDNS, resolv.conf

    return networking.node_additions(config, plan, node, identity)


# What every node gets besides its hostname; a feature adds itself here.
CONTRIBUTORS: tuple[Contributor, ...] = (_networking,)


def bootstrap_helper_url(plan: AddressPlan, port: int, identity: ClusterIdentity) -> str:
    """Where the bootstrap helper serves the bootstrap's config: over TLS (a neighbour on the
    machine network reads no secret, nor poses as the helper), under a path unguessable without
    the cluster's secret, so it is a secret itself (the shim's user_data, the upload)."""
    return f"https://{host_port(plan.helper_ip, port)}/{identity.derive('bootstrap-helper-path', 32)}/bootstrap.ign"


def bootstrap_helper_tls(plan: AddressPlan, assets: InstallerAssets) -> HelperTls:
    """The helper's CA, which the shim trusts alone, and its certificate for its address, dated
    from when the installer made the configs (cluster.helper_tls)."""
    return helper_tls(assets.identity, plan.helper_ip, assets.record.generated_at if assets.record else None)


def scheduler_manifest(masters_schedulable: bool) -> File:
    """The installer makes masters schedulable because it sees 0 compute replicas (always 0
    here, see cluster.installer); this sets what the cluster really has."""
    document = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "Scheduler",
        "metadata": {"name": "cluster"},
        "spec": {"mastersSchedulable": masters_schedulable},
    }
    return File(SCHEDULER_MANIFEST, yaml.safe_dump(document, sort_keys=True).encode())


def ingress_placement(config: ClusterConfig, plan: AddressPlan, infra_id: str) -> File:
    """Routers only on the router slots: the nodes whose keepalived may hold the Ingress VIP.
    Names of slots, not of existing workers, so scaling workers never changes it; in a
    compact cluster the masters, which keep the routers when workers are added later.
    One router per router node there is: unset, the operator runs 2 (HA topology) whatever
    the nodes, and a router with no node to go to stays Pending."""
    hostnames = [server_name(config, node, infra_id) for node in plan.router_slots]
    selector = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": hostnames}]}
    spec: dict = {"nodePlacement": {"nodeSelector": selector}, "replicas": plan.routers}
    document = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "IngressController",
        "metadata": {"name": "default", "namespace": "openshift-ingress-operator"},
        "spec": spec,
    }
    return File(INGRESS_MANIFEST, yaml.safe_dump(document, sort_keys=True).encode())


def node_additions(config: ClusterConfig, plan: AddressPlan, node: Node, identity: ClusterIdentity) -> Additions:
    additions = assembly.hostname(server_name(config, node, identity.infra_id))
    if config.integrated:
        return additions  # the MCO renders the rest; two VRRP stacks for one VIP would fight
    for contribute in CONTRIBUTORS:
        additions += contribute(config, plan, node, identity)
    return additions


def node_ignition(
    config: ClusterConfig,
    plan: AddressPlan,
    node: Node,
    assets: InstallerAssets,
    bootstrap_delivery: BootstrapDelivery,
    cloud_ca: str | None = None,
) -> NodeIgnition:
    """`cloud_ca`: the CA the cloud's endpoints are signed by (integrated mode), as IPI's
    bootstrap shim and the UPI guide put it on the bootstrap."""
    additions = node_additions(config, plan, node, assets.identity)
    if node.role == "bootstrap":
        shape = Additions(files=(scheduler_manifest(config.workers.count == 0), ingress_placement(config, plan, assets.infra_id)))
        shape += chrony.bootstrap_additions(config)
        shape += Additions(units=(assembly.masked(BLANKET_APPROVER),))
        if cloud_ca and config.integrated:
            shape += Additions(files=(File(CLOUD_CA_FILE, cloud_ca.encode()),))
        full = assembly.with_additions(assets.bootstrap, shape + additions)
        if bootstrap_delivery == "direct":
            return NodeIgnition(user_data=assembly.dumps(full))
        served = assembly.dumps(full)
        if config.bootstrap.config_source == "glance":
            # Its user_data needs the image and a token, which only the run has: glance_shim.
            return NodeIgnition(user_data="", served=served)
        shim = assembly.shim_config(
            bootstrap_helper_url(plan, config.bootstrap.helper.port, assets.identity),
            served,
            # The helper's own CA, and no other: the fetch trusts what the helper serves alone.
            assembly.certificate_sources(bootstrap_helper_tls(plan, assets).ca),
            # The server's own name, as every other node gets it (integrated: <infraID>-bootstrap).
            assembly.hostname(server_name(config, node, assets.infra_id)),
        )
        return NodeIgnition(user_data=assembly.dumps(shim), served=served)
    pointer = assets.master if node.role == "master" else assets.worker
    if config.integrated:
        return NodeIgnition(user_data=integrated_pointer_user_data(config, node, assets.infra_id, assembly.dumps(pointer)))
    source = f"http://{host_port(plan.api_vip, MCS_PLAIN_PORT)}/config/{node.role}"
    config_ = assembly.pointer_config(pointer, source, additions)
    return NodeIgnition(user_data=assembly.dumps(config_))


def glance_shim(
    config: ClusterConfig, node: Node, infra_id: str, served: str, source: str, token: str, cloud_ca: str | None
) -> str:
    """The bootstrap's user_data when Glance serves its config (a secret: it holds the token)."""
    text = _glance_shim(config, node, infra_id, served, source, token, cloud_ca)
    size = len(base64.b64encode(text.encode()))
    if size > NOVA_USER_DATA_BASE64:
        raise ValueError(
            f"ocp:bootstrap.configSource: glance, but the bootstrap's user_data is {size} bytes in base64 (a "
            f"{len(token)}-character Keystone token, a {len(source)}-character image URL), over Nova's "
            f"{NOVA_USER_DATA_BASE64}: write configSource: helper"
        )
    return text


def _glance_shim(
    config: ClusterConfig, node: Node, infra_id: str, served: str, source: str, token: str, cloud_ca: str | None
) -> str:
    """As the installer's: merge the image's data from `source` with the token in X-Auth-Token,
    verified by sha512, trusting the CAs of the cloud's endpoints, through the cluster's proxy."""
    proxy = config.proxy
    settings = {
        "httpProxy": proxy.http_proxy if proxy else None,
        "httpsProxy": proxy.https_proxy if proxy else None,
        "noProxy": list(proxy.no_proxy) if proxy and proxy.no_proxy else None,
    }
    shim = assembly.shim_config(
        source,
        served,
        assembly.certificate_sources(cloud_ca or ""),
        assembly.hostname(server_name(config, node, infra_id)),
        headers={"X-Auth-Token": token},
        proxy={key: value for key, value in settings.items() if value},
    )
    return assembly.dumps(shim)


def glance_file_url(image_endpoint: str, image_id: str) -> str:
    """Where Glance serves an image's data (API v2), from the catalog's image endpoint."""
    return f"{image_endpoint.rstrip('/').removesuffix('/v2')}/v2/images/{image_id}/file"


def glance_shim_problems(config: ClusterConfig, plan: AddressPlan, cloud_ca: str | None) -> list[str]:
    """The Glance shim against Nova's limit before anything is made: all but the token, the image
    URL and the infra ID is known; those take their budgets."""
    if not config.uses_glance:
        return []
    source = "https://" + "e" * ENDPOINT_BUDGET + "/v2/images/00000000-0000-0000-0000-000000000000/file"
    text = _glance_shim(config, plan.bootstrap, "i" * INFRA_ID_BUDGET, "", source, "t" * TOKEN_BUDGET, cloud_ca)
    size = len(base64.b64encode(text.encode()))
    if size <= NOVA_USER_DATA_BASE64:
        return []
    keys = "the clouds.yaml cacert" + (" and ocp:openstack.caBundle" if config.openstack and config.openstack.ca_bundle else "")
    return [
        f"ocp:bootstrap.configSource: glance, but the bootstrap's user_data (the shim that fetches its config from "
        f"Glance) could be {size} bytes in base64, over Nova's limit of {NOVA_USER_DATA_BASE64}: it carries every CA "
        f"of {keys} ({len((cloud_ca or '').encode())} bytes) and room for a {TOKEN_BUDGET}-character Keystone token. "
        "Keep only the CAs that sign the cloud's endpoints there, or write configSource: helper"
    ]


def integrated_pointer_user_data(config: ClusterConfig, node: Node, infra_id: str, pointer: str) -> str:
    """Integrated mode: a pointer config (the installer's, or the one the running cluster serves
    for new workers, components/openstack/pointers.py) unchanged, plus the hostname."""
    # As node_additions gives an integrated node: its hostname alone.
    return assembly.dumps(assembly.with_additions(json.loads(pointer), assembly.hostname(server_name(config, node, infra_id))))


def all_node_ignitions(
    config: ClusterConfig,
    plan: AddressPlan,
    assets: InstallerAssets,
    bootstrap_delivery: BootstrapDelivery,
    cloud_ca: str | None = None,
) -> dict[str, NodeIgnition]:
    """Every node that exists in this configuration, by hostname; checks the size budgets."""
    result = {node.name: node_ignition(config, plan, node, assets, bootstrap_delivery, cloud_ca) for node in plan.nodes}
    for name, ignition in result.items():
        if ignition.served is None and name == plan.bootstrap.name:
            continue  # delivered directly (libvirt fw_cfg): no size limit that matters
        if ignition.served is not None and config.bootstrap.config_source == "glance":
            continue  # sized before anything is made (glance_shim_problems) and when it is built
        checked_size(name, ignition)
    return result


def checked_size(name: str, ignition: NodeIgnition) -> str:
    """The node's user_data, within its budget."""
    limit = SHIM_LIMIT if ignition.served is not None else USER_DATA_LIMIT
    size = len(ignition.user_data.encode())
    if size > limit:
        raise ValueError(f"{name}: user_data is {size} bytes, over the budget of {limit}")
    return ignition.user_data
