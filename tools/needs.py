"""What a stack needs from its cloud, for the offline plan's needs.yaml and summary: quota totals
(cluster/cloud_needs.py) with the cloud's free amount where a cloud description is given, the
Keystone roles, the services, the RHCOS image that matches the installer, the DNS records and the
MTU. docs/openstack.md has the same as a checklist with commands.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import yaml

from cluster.addresses import AddressPlan
from cluster.cloud_facts import GENEVE_OVERHEAD, MINIMUM_NETWORK_MTU, Flavor, Quota, is_baremetal
from cluster.cloud_needs import QuotaNeed, quota_needs
from cluster.config import ClusterConfig

STREAM_COMMAND = "openshift-install coreos print-stream-json"


def _quotas(description: Mapping[str, Any]) -> dict[str, Quota]:
    def quota(value: Any) -> Quota:
        return Quota(value[0], value[1]) if isinstance(value, list) else Quota(value)

    return {key: quota(value) for key, value in description["quotas"].items() if value is not None}


def _flavors(description: Mapping[str, Any] | None) -> dict[str, Flavor | None]:
    specs = (description or {}).get("flavorExtraSpecs") or {}
    return {name: Flavor(*size[:3], baremetal=is_baremetal(specs.get(name)), ephemeral_gb=size[3] if len(size) > 3 else None) for name, size in (description or {}).get("flavors", {}).items()}


def _active(described: Any) -> bool:
    """An image name the description has active: its one image, or any of several ({id, active, created})."""
    if isinstance(described, list):
        return any(copy.get("active", True) for copy in described)
    return bool(described)


def _services(settings: ClusterConfig) -> list[tuple[tuple[str, ...], str, bool]]:
    """(catalog types that serve it, why, required)."""
    rows: list[tuple[tuple[str, ...], str, bool]] = [
        (("identity",), "Keystone: every call", True),
        (("compute",), "Nova: the servers", True),
        (("network",), "Neutron: network, ports, security groups, floating IPs", True),
        (("image",), "Glance: the RHCOS image" + (", the bootstrap's config" if settings.uses_glance else ""), True),
    ]
    roles = (settings.masters, settings.workers)
    volumes = settings.integrated or any(role.root_volume for role in roles)
    if volumes:
        why = "Cinder: " + ", ".join(
            filter(None, ["root volumes" if any(role.root_volume for role in roles) else "", "the cluster's PVCs (Cinder CSI)" if settings.integrated else ""])
        )
        rows.append((("block-storage", "volumev3", "volume"), why, True))
    if settings.integrated:
        rows.append((("object-store",), "Swift (optional): the image registry's storage; without it a 100 GB Cinder volume", False))
        rows.append((("load-balancer",), "Octavia (optional): LoadBalancer Services", False))
    return rows


def _roles(settings: ClusterConfig, catalog: Mapping[str, Any] | None) -> list[tuple[tuple[str, ...], str]]:
    """(roles any of which will do, why); Swift's and Octavia's only where the cloud has them (or is not described)."""
    rows: list[tuple[tuple[str, ...], str]] = [(("member", "_member_"), "the project's resources")]
    if settings.integrated and (catalog is None or "object-store" in catalog):
        rows.append((("swiftoperator",), "the image registry on Swift (without it: a Cinder volume)"))
    if settings.integrated and (catalog is None or "load-balancer" in catalog):
        rows.append((("load-balancer_member", "member"), "LoadBalancer Services in Octavia (Octavia's default policy)"))
    return rows


def rhcos_stream(binary: Path | None) -> dict[str, str] | None:
    """The OpenStack RHCOS image an installer pins (x86_64; the plan's: the user's, else the toolchain's): its URL, checksum and release."""
    if binary is None:
        return None
    try:
        done = subprocess.run([str(binary), "coreos", "print-stream-json"], capture_output=True, text=True, timeout=120)
        artifact = json.loads(done.stdout)["architectures"]["x86_64"]["artifacts"]["openstack"]
        disk = artifact["formats"]["qcow2.gz"]["disk"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return None
    return {"release": artifact["release"], "location": disk["location"], "sha256": disk["sha256"]}


def _upload(image: str, stream: Mapping[str, str] | None) -> list[str]:
    location = stream["location"] if stream else f"<architectures.x86_64.artifacts.openstack.formats[\"qcow2.gz\"].disk.location of `{STREAM_COMMAND}`>"
    checksum = stream["sha256"] if stream else "<its sha256>"
    return [
        f"curl -L -o {image}.qcow2.gz {location}",
        f"echo '{checksum}  {image}.qcow2.gz' | sha256sum -c",
        f"gunzip {image}.qcow2.gz",
        f"openstack image create --container-format bare --disk-format qcow2 --file {image}.qcow2 {image}",
    ]


def _also(settings: ClusterConfig) -> list[str]:
    """What the stack and its cluster make beyond the quota rows."""
    made = []
    if settings.uses_glance:
        made.append("a private Glance image <infraID>-ignition, the bootstrap's config, while the bootstrap exists (Glance's own quotas, where set)")
        if settings.bootstrap.credential == "applicationCredential":
            made.append("a Keystone application credential <infraID>-bootstrap-ignition, as long as the image")
    if settings.integrated:
        made.append(
            "after install, the cluster itself: Cinder volumes for PVCs, the image registry's Swift container (or a 100 GB volume), "
            "an Octavia load balancer and floating IP per LoadBalancer Service, MachineSet servers and ports"
        )
    return made


def _dns(settings: ClusterConfig, outputs: Mapping[str, Any]) -> list[dict[str, str]]:
    domain = f"{settings.cluster_name}.{settings.base_domain}"
    openstack = settings.openstack
    rows = []
    for name, choice, output, vip, what in (
        (f"api.{domain}", openstack.api_floating_ip if openstack else "none", "apiFloatingIp", "apiVip", "the API"),
        (f"*.apps.{domain}", openstack.ingress_floating_ip if openstack else "none", "ingressFloatingIp", "ingressVip", "Ingress"),
    ):
        if isinstance(choice, IPv4Address):
            address, note = str(choice), "the floating IP the stack names"
        elif choice == "create":
            address, note = f"`pulumi stack output {output}`", "the floating IP `pulumi up` allocates: make the record right after it"
        else:
            address, note = str(outputs.get(vip)), f"{what}'s VIP: reachable from the machine network only"
        rows.append({"name": name, "address": address, "note": note})
    return rows


def _mtu(settings: ClusterConfig) -> str:
    openstack = settings.openstack
    network = (
        f"the network ocp:openstack.existingNetwork names ({openstack.existing_network.network_id})"
        if openstack and openstack.existing_network
        else "the network the stack makes (<infraID>-openshift), which takes Neutron's default: 1450 over VXLAN, 1442 over Geneve"
    )
    return (
        f"{network}: at least {MINIMUM_NETWORK_MTU} (OVN-Kubernetes' Geneve takes {GENEVE_OVERHEAD}, pods need 1280); "
        "see it with `openstack network show <network> -c mtu`"
    )


def of_stack(
    settings: ClusterConfig,
    plan: AddressPlan,
    outputs: Mapping[str, Any],
    description: Mapping[str, Any] | None,
    stream: Mapping[str, str] | None,
) -> dict[str, Any]:
    """needs.yaml: what the stack needs of its cloud, with the description's verdicts where one is given."""
    rows: list[QuotaNeed] = quota_needs(settings, plan, _flavors(description), _quotas(description) if description else None)
    catalog = description.get("catalog") if description else None
    have_roles = description.get("roles") if description else None
    images = (description or {}).get("images", {})
    image_names = sorted({settings.masters.openstack_image, settings.workers.openstack_image, settings.bootstrap_image})
    document: dict[str, Any] = {
        "quotas": {
            row.key: {
                "need": row.need,
                "unit": row.unit,
                "limit": row.quota.limit if row.quota else None,
                "inUse": row.quota.used if row.quota else None,
                "free": row.free,
                "verdict": row.verdict,
                "raise": f"{row.raise_with} <n> <project>",
            }
            for row in rows
        },
        "roles": [
            {
                "role": " or ".join(names),
                "for": why,
                "have": "not described" if have_roles is None else ("yes" if set(names) & set(have_roles) else "no"),
            }
            for names, why in _roles(settings, catalog)
        ],
        "services": [
            {
                "service": " or ".join(types),
                "for": why,
                "have": "not described" if catalog is None else ("yes" if set(types) & set(catalog) else "no"),
            }
            for types, why, _ in _services(settings)
        ],
        "image": {
            "names": image_names,
            "have": {name: ("not described" if description is None else "active" if _active(images.get(name)) else "not active" if name in images else "missing") for name in image_names},
            "rhcos": dict(stream) if stream else f"run `{STREAM_COMMAND}` with the installer you install with",
            "upload": _upload(settings.masters.openstack_image, stream),
        },
        "alsoMakes": _also(settings),
        "dns": _dns(settings, outputs),
        "mtu": _mtu(settings),
    }
    short = [row for row in rows if row.short]
    missing = [r["service"] for r in document["services"] if r["have"] == "no" and not r["service"].startswith(("object-store", "load-balancer"))]
    missing_images = [name for name, have in document["image"]["have"].items() if have in ("missing", "not active")]
    no_member = [r["role"] for r in document["roles"] if r["have"] == "no" and r["role"].startswith("member")]
    if description is None:
        verdict = "not checked: no cloud description (python -m tools.describe_cloud --os-cloud NAME --out FILE, then --cloud FILE)"
    elif short or missing or missing_images or no_member:
        verdict = "short: " + "; ".join(
            [f"{row.key} {row.verdict}" for row in short]
            + [f"no {name} service" for name in missing]
            + [f"image {name} {document['image']['have'][name]}" for name in missing_images]
            + [f"no role {role}" for role in no_member]
        )
    else:
        verdict = "the cloud has what this stack needs"
    return {"verdict": verdict, **document}


def render(document: Mapping[str, Any], against: str) -> str:
    header = (
        "# What this stack needs from its cloud (python -m tools.plan), against " + against + ".\n"
        "# Quotas: what the stack takes on day 1 (bootstrap included) and what the cloud has free.\n"
    )
    # A quota a line; the rest as blocks.
    quotas = yaml.safe_dump({"quotas": document["quotas"]}, sort_keys=False, default_flow_style=None, width=1000)
    rest = {key: value for key, value in document.items() if key != "quotas"}
    first = yaml.safe_dump({"verdict": rest.pop("verdict")}, sort_keys=False, width=1000)
    return header + first + quotas + yaml.safe_dump(rest, sort_keys=False, width=1000)


def summary_lines(document: Mapping[str, Any]) -> list[str]:
    lines = [f"  {'quota':<34} {'need':>7} {'free':>8}  verdict"]
    for quota in document["quotas"].values():
        free = "-" if quota["free"] is None else str(quota["free"])
        need = "?" if quota["need"] is None else str(quota["need"])
        lines.append(f"  {quota['unit']:<34} {need:>7} {free:>8}  {quota['verdict']}")
    lines.append("  roles: " + ", ".join(f"{r['role']} ({r['have']})" for r in document["roles"]))
    lines.append("  services: " + ", ".join(f"{s['service'].split(' or ')[0]} ({s['have']})" for s in document["services"]))
    image = document["image"]
    rhcos = image["rhcos"]
    lines.append(
        "  image: " + ", ".join(f"{name} ({have})" for name, have in image["have"].items())
        + (f"; the installer's RHCOS {rhcos['release']} (needs.yaml: how to upload it)" if isinstance(rhcos, dict) else f"; {rhcos}")
    )
    lines += [f"  DNS: {record['name']} -> {record['address']}" for record in document["dns"]]
    lines.append(f"  MTU: {document['mtu']}")
    lines.append(f"  verdict: {document['verdict']}")
    return lines
