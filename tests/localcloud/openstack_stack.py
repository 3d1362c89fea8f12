"""A stack of this program on the local OpenStack, run by the real engine, for the tests that
need one: made from a committed stack file, and on the way out destroyed as a user would, then
swept of anything that still carries its infra ID, so that one failed test never leaves its
cloud resources to the next. Test harness."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, structured
from tests.localcloud.test_cleanup import CSI, OURS, REMOVE
from tools.real_installer import stand_in_oc

PLUGINS = [("openstack", "5.5.3")]


def openstack_stack(
    name: str, work: Path, cloud, cloud_env: dict[str, str], oc: Path | None = None, edit: Callable[[dict], dict] = lambda config: config,
    cli: bool = False, extra_env: dict[str, str] | None = None, secrets_provider: str | None = None,
) -> Iterator[Stack]:
    """A module fixture's body: the committed stack `name` passed through `edit`, with `oc` (the stand-in
    for the release lookups by default: no registry here). No `openstack` CLI on the engine's PATH: the
    program needs none (its preflight and cleanup run openstacksdk from its venv); `cli` puts the local
    cloud's there for what a user runs beside it (tools.recover); `extra_env` and `secrets_provider` put the
    state and the key elsewhere (PULUMI_BACKEND_URL, VAULT_TOKEN, ...). OCP_KEEP_LIFECYCLE keeps the stack, to
    look into a failure."""
    oc = oc or stand_in_oc(work)

    def local(committed: dict) -> dict:
        return edit({**committed, "ocp:installer": dict(committed["ocp:installer"], oc=str(oc))})

    env = {"OS_CLIENT_CONFIG_FILE": cloud_env["OS_CLIENT_CONFIG_FILE"], **(extra_env or {})}
    if cli:
        env["PATH"] = str(cloud.bin("openstack").parent)
    created = Stack.create(name, work, env, PLUGINS, local, secrets_provider)
    created.cloud = cloud  # type: ignore[attr-defined]
    yield created
    if os.environ.get("OCP_KEEP_LIFECYCLE"):
        print(f"kept: the stack in {created.project} (PULUMI_HOME {work / 'home'}, backend {work / 'state'})")
        return
    emptied(created)


def emptied(stack: Stack) -> None:
    """Nothing left of the stack, whatever a test before left it in (failed midway too): what the
    state knows destroyed, then whatever carries the infra ID swept, and the state told so."""
    stack.pulumi("cancel", "--yes")  # a run killed on purpose leaves its lock
    stack.destroy(teardown=True)
    sweep(stack)
    if stack.state():
        stack.pulumi("refresh", "--yes", "--skip-preview", "--clear-pending-creates")
    assert stack.state() == [], [resource["urn"] for resource in stack.state()]


# What the project holds, as the cloud's APIs say, for the names and tags of one infra ID.
INVENTORY = """
def mine(name):
    return (name or "").startswith(infra)

images = {i.id: i for i in tenant.image.images()}
result = {
    "servers": {s.name: {
        "id": s.id, "status": s.status, "flavor": s.flavor.get("original_name") or s.flavor.get("name"),
        "image": images[s.image["id"]].name if s.image and s.image.get("id") in images else None,
        "image_id": s.image.get("id") if s.image else None,
        "zone": s.availability_zone, "config_drive": str(s.has_config_drive).lower() in ("true", "1"),
        "tags": sorted(s.tags or []), "volumes": sorted(v["id"] for v in (s.attached_volumes or [])),
        "ports": sorted(p.id for p in tenant.network.ports(device_id=s.id)),
    } for s in tenant.compute.servers(details=True) if mine(s.name) or f"openshiftClusterID={infra}" in (s.tags or [])},
    "ports": {p.id: {
        "name": p.name, "device": p.device_id, "network": p.network_id, "tags": sorted(p.tags or []),
        "fixed_ips": sorted((f["subnet_id"], f["ip_address"]) for f in p.fixed_ips),
        "pairs": sorted(a["ip_address"] for a in p.allowed_address_pairs or []),
        "groups": sorted(p.security_group_ids or []),
    } for p in tenant.network.ports() if mine(p.name) or any(t.endswith(infra) for t in p.tags or [])},
    "floating_ips": {f.floating_ip_address: {"port": f.port_id, "tags": sorted(f.tags or []), "network": f.floating_network_id}
        for f in tenant.network.ips() if any(t.endswith(infra) for t in f.tags or [])},
    "groups": {g.name: {"id": g.id, "tags": sorted(g.tags or []), "rules": sorted(
        (r["protocol"], r["port_range_min"], r["port_range_max"], r["remote_ip_prefix"])
        for r in g.security_group_rules if r["direction"] == "ingress")} for g in tenant.network.security_groups() if mine(g.name)},
    "server_groups": {g.name: {"policy": g.policy or (g.policies or [None])[0], "members": sorted(g.member_ids or [])}
        for g in tenant.compute.server_groups() if mine(g.name)},
    "routers": {r.name: {"gateway": (r.external_gateway_info or {}).get("network_id"), "tags": sorted(r.tags or [])}
        for r in tenant.network.routers() if mine(r.name)},
    "networks": {n.name: {"id": n.id, "tags": sorted(n.tags or [])} for n in tenant.network.networks() if mine(n.name)},
    "subnets": {s.name: {"id": s.id, "cidr": s.cidr, "dns": list(s.dns_nameservers), "pools": s.allocation_pools, "tags": sorted(s.tags or [])}
        for s in tenant.network.subnets() if mine(s.name)},
    "volumes": {v.id: {"name": v.name, "status": v.status, "size": v.size, "type": v.volume_type, "metadata": v.metadata}
        for v in tenant.block_storage.volumes() if mine(v.name) or infra in json.dumps(v.metadata or {})},
    "images": {i.name: {"id": i.id, "status": i.status, "visibility": i.visibility, "container": i.container_format,
        "disk": i.disk_format, "tags": sorted(i.tags or []), "size": i.size} for i in images.values() if mine(i.name)},
    "external": {n.name: n.id for n in tenant.network.networks(is_router_external=True)},
}
"""

def infra_id(stack: Stack) -> str | None:
    """The cluster's infra ID, from the installer's metadata.json (there even when `pulumi up` stopped midway)."""
    metadata = stack.project / structured(stack.base["ocp:installer"])["dir"] / "metadata.json"
    return json.loads(metadata.read_text())["infraID"] if metadata.is_file() else None


def sweep(stack: Stack) -> list[str]:
    """Removes every server, volume, floating IP, port, router, network, group and image of the
    stack's infra ID; returns what it found. Fails naming what could not be removed."""
    infra = infra_id(stack)
    if infra is None:
        return []
    # Servers and ports by the cluster's tag first: standalone names its nodes without the infra ID.
    tagged = """
tag = f"openshiftClusterID={infra}"
errors, result = [], {}
# A run killed between a floating IP's create and its tags leaves it untagged: by its port's network, before the ports go.
ours = {n.id for n in tenant.network.networks() if (n.name or "").startswith(infra + "-")}
on_ours = {p.id for p in tenant.network.ports() if p.network_id in ours}
# The stand-in's lb-sg-* groups, known by the ports holding them (the 4.14 ones name no infra ID).
lb_groups = {g for p in tenant.network.ports() if p.network_id in ours for g in p.security_group_ids or []}
for ip in [ip for ip in tenant.network.ips() if ip.port_id in on_ours and tag not in (ip.tags or [])]:
    tenant.network.delete_ip(ip)
# The controllers' stand-in's load balancers (either name: VIP on the network) and trunks (a parent port refuses deletion).
for lb in [lb for lb in tenant.load_balancer.load_balancers() if lb.vip_network_id in ours or lb.name.startswith(f"kube_service_{infra}_")]:
    tenant.load_balancer.delete_load_balancer(lb, cascade=True)
    tenant.load_balancer.wait_for_delete(lb, interval=1, wait=180)
for server in [s for s in tenant.compute.servers() if tag in (s.tags or [])]:
    tenant.compute.delete_server(server)
    tenant.compute.wait_for_delete(server, interval=1, wait=120)
for trunk in [t for t in tenant.network.trunks() if tag in (t.tags or []) or t.port_id in on_ours]:
    tenant.network.delete_trunk(trunk)
for port in [p for p in tenant.network.ports() if tag in (p.tags or [])]:
    tenant.network.delete_port(port)
# A run killed between a port's create and its tags leaves it untagged: by its network then.
for port in [p for p in tenant.network.ports() if p.network_id in ours and not (p.device_owner or "").startswith("network:")]:
    tenant.network.delete_port(port)
"""
    images = """
# (or, once no port holds one, by its 4.14 description: a failed destroy took the ports first)
for group in [g for g in tenant.network.security_groups() if g.name.startswith("lb-sg-") and (g.id in lb_groups or (
        g.description.endswith(" in cluster kubernetes") and not list(tenant.network.ports(security_groups=[g.id]))))]:
    attempt(f"delete security group {group.name}", tenant.network.delete_security_group, group)
for image in [i for i in tenant.image.images() if (i.name or "").startswith(infra)]:
    attempt(f"delete image {image.name}", tenant.image.delete_image, image)
result["left"] += [f"image {i.name}" for i in tenant.image.images() if (i.name or "").startswith(infra)]
# The bootstrap's application credential (a run killed before its teardown).
credentials = f"/users/{tenant.current_user_id}/application_credentials"
for credential in tenant.identity.get(credentials).json()["application_credentials"]:
    if credential["name"].startswith(infra):
        attempt(f"delete application credential {credential['name']}", tenant.identity.delete, f"{credentials}/{credential['id']}")
"""
    removed = sdk(stack.cloud, tagged + OURS + REMOVE + images, infra=infra, other=infra, csi=CSI, volumes=[])  # type: ignore[attr-defined]
    assert removed["left"] == [], f"the stack's resources could not all be removed: {removed}"
    return removed["found"]


def inventory(stack: Stack, infra: str) -> dict:
    return sdk(stack.cloud, INVENTORY, infra=infra)  # type: ignore[attr-defined]
