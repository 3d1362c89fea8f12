"""Describe your own OpenStack cloud: the file `python -m tools.plan --cloud FILE` checks a stack against.

    python -m tools.describe_cloud --os-cloud NAME                    # prints it
    python -m tools.describe_cloud --os-cloud NAME --out cloud.yaml   # writes it

Reads, as the clouds.yaml entry NAME (OS_CLIENT_CONFIG_FILE names another clouds.yaml), with
openstacksdk and GETs only: flavors (with their extra specs), images, networks (which are external), the project's floating
IPs, compute and volume zones, volume types, Neutron's extensions, the token's service catalog and
roles, the project's quotas with what is in use, and the networks and subnets in detail (port
security, MTU, owner, CIDR, the routers on each subnet and where their gateways are). Writes them in the shape of
samples/cloud/dev.yaml, sorted, so that two runs against an unchanged cloud give the same bytes.
No secret goes into it: the token is a fixed stand-in. An unknown cloud name, refused credentials or
an unreachable cloud exit 2 with one line.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from cluster import cloud_probe

# Stands in for the provider's Keystone token, which the plan only copies into the bootstrap's shim:
# the real one is a secret, and changes on every run.
STAND_IN_TOKEN = "described-cloud-stand-in-token"
HEADER = (
    "# The cloud description of clouds.yaml entry {cloud!r}, written by `python -m tools.describe_cloud`\n"
    "# (its format: samples/cloud/dev.yaml). Check a stack against it, before anything is made:\n"
    "#   python -m tools.plan --config-file Pulumi.<stack>.yaml --cloud {out}\n"
    "# Quotas are [limit, in use] (-1: unlimited). The token is a stand-in: no secret is written here.\n"
)


class DescribeError(Exception):
    """The cloud could not be described, in one line."""


def _sorted(mapping: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(mapping.items()))


def _forbidden(read: Callable[[], Any]) -> Any:
    """What a read gives, or None where the cloud's policy refuses it to this user."""
    from openstack import exceptions

    try:
        return read()
    except exceptions.ForbiddenException:
        return None


def _images(images: Iterable[Any], project: str) -> dict[str, Any]:
    """name -> active; where several images have one name, each ({id, active, created}, newest
    first, with Glance's status where not active, its visibility where not private and its owner where
    another project): the servers boot the newest active one, and the plan says so; in integrated mode the
    preflight refuses the name, as the installer and the Machine API count them all."""
    named: dict[str, list[Any]] = {}
    for image in images:
        if image.name:
            named.setdefault(image.name, []).append(image)
    described: dict[str, Any] = {}
    for name, copies in sorted(named.items()):
        if len(copies) == 1:
            described[name] = copies[0].status == "active"
            continue
        copies.sort(key=lambda image: (image.created_at or "", image.id), reverse=True)
        described[name] = [_image_copy(image, project) for image in copies]
    return described


def _image_copy(image: Any, project: str) -> dict[str, Any]:
    copy: dict[str, Any] = {"id": image.id, "active": image.status == "active", "created": image.created_at or ""}
    if image.status != "active":
        copy["status"] = image.status or ""
    if (image.visibility or "private") != "private":
        copy["visibility"] = image.visibility
    if image.owner_id and image.owner_id != project:
        copy["project"] = image.owner_id
    return copy


def _neutron(network: Any, project: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The networks and subnets this user sees, as the preflight reads those a stack names; a
    network's owner written only where it is another project."""
    networks = []
    for found in sorted(network.networks(), key=lambda each: each.id):
        entry: dict[str, Any] = {"id": found.id, "name": found.name or ""}
        if found.is_port_security_enabled is False:
            entry["portSecurity"] = False
        entry["mtu"] = found.mtu
        if found.project_id and found.project_id != project:
            entry["project"] = found.project_id
        entry["subnets"] = sorted(found.subnet_ids or ())
        networks.append(entry)
    routers = _routers(network)
    subnets = [
        {
            "id": found.id, "name": found.name or "", "network": found.network_id, "cidr": found.cidr,
            "pools": [[pool["start"], pool["end"]] for pool in found.allocation_pools or ()],
            **({"ipv6AddressMode": found.ipv6_address_mode} if ":" in (found.cidr or "") else {}),
            "routers": _sorted(routers.get(found.id, {})),
        }
        for found in sorted(network.subnets(), key=lambda each: each.id)
    ]
    return networks, subnets


def _routers(network: Any) -> dict[str, dict[str, str | None]]:
    """subnet ID -> {router ID: its gateway's network ID ("": none; None: another project's router)}, from
    the router interfaces this user sees, as cluster/cloud_probe.py reads them for one subnet."""
    gateways = {router.id: str((router.external_gateway_info or {}).get("network_id") or "") for router in network.routers()}
    found: dict[str, dict[str, str | None]] = {}
    for owner in cloud_probe.ROUTER_INTERFACE_OWNERS:
        for port in network.ports(device_owner=owner):
            for fixed in port.fixed_ips or ():
                if port.device_id and fixed.get("subnet_id"):
                    found.setdefault(fixed["subnet_id"], {})[port.device_id] = gateways.get(port.device_id)
    return found


def _catalog(catalog: Iterable[dict[str, Any]], region: str) -> dict[str, Any]:
    """The token's public endpoints by service type: a URL where the one endpoint is in the
    provider's region, else {region: URL}."""
    described: dict[str, Any] = {}
    for service in catalog:
        public = sorted(
            (endpoint.get("region_id") or endpoint.get("region") or "", endpoint["url"])
            for endpoint in service.get("endpoints") or ()
            if endpoint.get("interface") == "public" and endpoint.get("url")
        )
        if not public or not service.get("type"):
            continue
        if len(public) == 1 and public[0][0] in ("", region):
            described[service["type"]] = public[0][1]
        else:
            described[service["type"]] = dict(public)
    return _sorted(described)


def _pair(limit: Any, used: Any) -> Any:
    return [int(limit), int(used)] if used is not None else int(limit)


def _network_quotas(network: Any, project: str) -> dict[str, Any]:
    names = {"ports": "ports", "securityGroups": "security_groups", "securityGroupRules": "security_group_rules",
             "floatingIps": "floating_ips", "networks": "networks", "subnets": "subnets", "routers": "routers"}
    details = _forbidden(lambda: network.get_quota(project, details=True))
    if details is not None:
        return {key: _pair(getattr(details, attr)["limit"], getattr(details, attr)["used"]) for key, attr in names.items()}
    quota = network.get_quota(project)
    return {key: int(getattr(quota, attr)) for key, attr in names.items()}


def _compute(compute: Any, project: str) -> tuple[dict[str, Any], bool]:
    """Nova's limits with usage, and whether Nova refuses them when asked for the project by ID, as
    the provider asks (Nova's default policy keeps that to admins, even for the caller's own)."""
    absolute = compute.get_limits().absolute
    forbidden = _forbidden(lambda: compute.get_limits(tenant_id=project)) is None
    quotas = {
        "instances": [absolute.instances, absolute.instances_used],
        "cores": [absolute.total_cores, absolute.total_cores_used],
        "ram": [absolute.total_ram, absolute.total_ram_used],
        "serverGroups": [absolute.server_groups, absolute.server_groups_used],
        "serverGroupMembers": absolute.server_group_members,
    }
    return quotas, forbidden


def describe(connection: Any) -> dict[str, Any]:
    """The cloud as this connection's user sees it, in the cloud description's shape."""
    access = connection.session.auth.get_access(connection.session)
    project = access.project_id
    region = connection.config.get_region_name() or ""
    compute_quotas, limits_forbidden = _compute(connection.compute, project)
    volume_quota = connection.block_storage.get_quota_set(project, usage=True)
    usage = volume_quota.usage or {}
    hypervisors = _forbidden(lambda: list(connection.compute.hypervisors()))
    flavors = list(connection.compute.flavors())
    networks: dict[str, bool] = {}
    for network in connection.network.networks():
        if network.name:
            networks[network.name] = networks.get(network.name, False) or bool(network.is_router_external)
    neutron_networks, subnets = _neutron(connection.network, project)
    description: dict[str, Any] = {
        "project": access.project_name,
        "region": region,
        "catalog": _catalog(access.service_catalog.catalog or (), region),
        "token": STAND_IN_TOKEN,
        # An ephemeral disk as a fourth number (ocp:masters.etcdDisk's preflight reads it), none where there is none.
        "flavors": _sorted({f.name: [f.vcpus, f.ram, f.disk, *([f.ephemeral] if f.ephemeral else [])] for f in flavors}),
        # Nova lists them from microversion 2.61, which openstacksdk asks for: baremetal "true" lifts the minimums.
        "flavorExtraSpecs": _sorted({f.name: _sorted({str(k): str(v) for k, v in f.extra_specs.items()}) for f in flavors if f.extra_specs}),
        "images": _images(connection.image.images(), project),
        "networks": _sorted(networks),
        "floatingIps": _sorted({ip.floating_ip_address: ip.port_id or "" for ip in connection.network.ips(project_id=project)}),
        "computeZones": sorted(z.name for z in connection.compute.availability_zones() if (z.state or {}).get("available")),
        "volumeZones": sorted(z.name for z in connection.block_storage.availability_zones() if (z.state or {}).get("available")),
        "volumeTypes": sorted(t.name for t in connection.block_storage.types()),
        "networkExtensions": sorted(e.alias for e in connection.network.extensions()),
        # What ocp:openstack.existingNetwork and the extra networks are held against.
        "neutronNetworks": neutron_networks,
        "subnets": subnets,
        "quotas": {
            **compute_quotas,
            **_network_quotas(connection.network, project),
            "volumes": _pair(volume_quota.volumes, usage.get("volumes")),
            "gigabytes": _pair(volume_quota.gigabytes, usage.get("gigabytes")),
        },
        # The token's roles: what the stack needs of them is in the plan's needs.yaml.
        "roles": sorted(access.role_names or ()),
    }
    if limits_forbidden:
        description["computeLimitsForbidden"] = True
    if hypervisors is not None:  # an admin's view: the hosts hard anti-affinity can spread over
        description["computeHosts"] = sum(1 for host in hypervisors if host.state == "up")
    return description


def connect(cloud: str) -> Any:
    """A connection to the clouds.yaml entry, its token fetched: a DescribeError says why not."""
    try:
        return cloud_probe.connect(cloud)
    except cloud_probe.NoEntry as error:
        raise DescribeError(f"--os-cloud {cloud}: {error}") from None
    except cloud_probe.CloudError as error:
        raise DescribeError(f"cloud {cloud}: {error}") from None


class _Dumper(yaml.SafeDumper):
    """Mappings as blocks, a list of plain values on one line (as samples/cloud/dev.yaml writes them)."""

    def represent_list(self, data: list[Any]) -> yaml.Node:
        flow = all(not isinstance(item, (dict, list)) for item in data)
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _Dumper.represent_list)


def render(description: dict[str, Any], cloud: str, out: str) -> str:
    body = yaml.dump(description, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
    return HEADER.format(cloud=cloud, out=out) + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.describe_cloud",
        description="Write the cloud description of your own OpenStack project (GETs only), for `python -m tools.plan --cloud FILE`.",
    )
    parser.add_argument("--os-cloud", required=True, metavar="NAME", help="the clouds.yaml entry to read the cloud as (its user and project)")
    parser.add_argument("--out", metavar="FILE", help="where to write the description (default: print it)")
    args = parser.parse_args(argv)
    # keystoneauth warns on stderr while it falls back between API versions: the one line below says what failed.
    logging.getLogger("keystoneauth").setLevel(logging.ERROR)
    try:
        connection = connect(args.os_cloud)
        description = describe(connection)
    except DescribeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - a read the cloud refused or failed: one line, no traceback
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"error: cloud {args.os_cloud}: reading it failed: {first[:300]}", file=sys.stderr)
        return 2
    text = render(description, args.os_cloud, args.out or "FILE")
    if args.out is None:
        sys.stdout.write(text)
        return 0
    Path(args.out).write_text(text)
    print(
        f"wrote {args.out}: {len(description['flavors'])} flavors, {len(description['images'])} images, "
        f"{sum(description['networks'].values())} external networks, the quotas of project {description['project']}; "
        f"check a stack against it: python -m tools.plan --config-file Pulumi.<stack>.yaml --cloud {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
