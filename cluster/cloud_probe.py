"""What the OpenStack preflight reads beyond the provider's invokes, with openstacksdk in one
process and one authentication: `OS_CLOUD=NAME python -m cluster.cloud_probe`.

pulumi-openstack 5.5.3 has no invoke for Neutron's extensions nor for Nova's hypervisors, so
components/openstack/preflight.py runs this module (cluster/cloud_facts.py PROBE_COMMAND) from the
program's own virtualenv, where openstacksdk is (requirements.txt). It prints one JSON line:

    {"extensions": [aliases, sorted], "hosts": [hypervisor states, sorted] or null}

and, where OCP_PROBE_NETWORKS names flavors ("flavors": [name, ...]), "flavorEphemeral": {name: GiB}, each
one's ephemeral disk (pulumi-openstack's flavor invoke has none); where it names networks and subnets (JSON: {"networks": [name or ID, ...],
"subnets": [...]}), what each matches: "networks": {ref: [{id, name, portSecurity, subnets, mtu,
project}, ...]}, "subnets": {ref: [{id, name, network, cidr}, ...]} (pulumi-openstack's network
data source gives no port security and refuses a name two networks have without naming them).
Where it names security groups too ("groups": [ID, ...]), each one's rules: "groups": {ID: {id,
name, rules: [Neutron's rule fields, ...]} or null where the project sees no such group}
(cluster/preflight_groups.py measures them). Each subnet says which routers have an interface on it
and where each one's gateway is: "routers": {router ID: external network ID, "" for none, or null
where the router is another project's, which Neutron does not show} (a floating IP on a port of that
subnet needs one whose gateway is on the floating IP's network). Where it names images ("images":
[name, ...]), every image Glance lists under each name to this project, whatever its status, its own,
public and shared ones alike, as the installer and the Machine API count them: "images": {name:
[{id, status, visibility, project, created}, ...]}, newest first.

`hosts` is null where Nova refuses the caller the hypervisors (403: its default policy keeps them
to admins). Any other failure prints {"error": "why"} instead, with exit status 0 so that the
preflight reads the reason; never a traceback, never a secret (the credentials stay in clouds.yaml).
tools/describe_cloud.py connects through `connect` here too.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import uuid
from collections.abc import Iterable
from typing import Any

# The networks and subnets to read (JSON), as cluster/cloud_facts.py PROBE_NETWORKS names it.
NETWORKS_VARIABLE = "OCP_PROBE_NETWORKS"


class CloudError(Exception):
    """The cloud could not be reached or read, in one line without secrets."""


class NoEntry(CloudError):
    """clouds.yaml has no such entry (or there is no clouds.yaml)."""


def answer(
    extensions: Any, hosts: Any, networks: Any = None, subnets: Any = None, groups: Any = None, zone_hosts: Any = None, images: Any = None,
    ephemeral: Any = None,
) -> str:
    """The probe's line: sorted, so that an unchanged cloud gives the same bytes."""
    line: dict[str, Any] = {"extensions": sorted(extensions), "hosts": None if hosts is None else sorted(hosts)}
    if ephemeral is not None:
        line["flavorEphemeral"] = dict(sorted(ephemeral.items()))
    if zone_hosts is not None:
        line["zoneHosts"] = dict(sorted(zone_hosts.items()))
    if networks is not None or subnets is not None:
        line["networks"], line["subnets"] = networks or {}, subnets or {}
    if groups is not None:
        line["groups"] = groups
    if images is not None:
        line["images"] = images
    return json.dumps(line)


def failed(why: str) -> str:
    return json.dumps({"error": why})


def _no_entry(cloud: str, error: Exception) -> str:
    """Which entries the clouds.yaml openstacksdk read has, and where it is."""
    from openstack import config

    try:
        loader = config.OpenStackConfig()
        names, where = [name for name in loader.get_cloud_names() if name != "defaults"], loader.config_filename
    except Exception:  # noqa: BLE001 - only for the message
        return str(error)
    if where is None:
        return "no clouds.yaml found (./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml, or OS_CLIENT_CONFIG_FILE)"
    return f"no entry {cloud!r} in {where} (its entries: {', '.join(names) or 'none'})"


def connect(cloud: str) -> Any:
    """A connection to the clouds.yaml entry with its token: NoEntry or CloudError says why not."""
    import keystoneauth1.exceptions as ks
    import openstack
    from openstack import exceptions

    try:
        connection = openstack.connect(cloud=cloud)
    except exceptions.ConfigException as error:
        raise NoEntry(_no_entry(cloud, error)) from None
    try:
        auth_url = connection.config.get_auth_args().get("auth_url", "?")
    except Exception:  # noqa: BLE001 - only for the message
        auth_url = "?"
    try:
        connection.session.get_token()
    except ks.http.Unauthorized:
        raise CloudError(f"Keystone at {auth_url} refused its credentials (401): check the entry's auth in clouds.yaml") from None
    except ks.connection.ConnectionError as error:
        # keystoneauth's message, without urllib3's pool details after it
        reason = (str(error).splitlines() or [""])[0].split(": HTTPConnectionPool")[0].split(": HTTPSConnectionPool")[0]
        raise CloudError(f"cannot reach Keystone at {auth_url} ({type(error).__name__}: {reason[:200]})") from None
    except (ks.ClientException, exceptions.SDKException) as error:
        raise CloudError(f"no token from Keystone at {auth_url}: {first_line(error)}") from None
    return connection


def first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _is_id(ref: str) -> bool:
    try:
        uuid.UUID(ref)
    except ValueError:
        return False
    return True


def _by_ref(get: Any, listed: Any, ref: str) -> list[Any]:
    """What a name or ID matches: an ID the one it names (else, as a name, what has that name)."""
    from openstack import exceptions

    if _is_id(ref):
        try:
            return [get(ref)]
        except exceptions.NotFoundException:
            pass
    return sorted(listed(name=ref), key=lambda found: found.id)


def networks_of(connection: Any, refs: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    return {
        ref: [
            {
                "id": found.id,
                "name": found.name or "",
                # Neutron without the port-security extension has none: every port may carry groups.
                "portSecurity": found.is_port_security_enabled is not False,
                "subnets": sorted(found.subnet_ids or ()),
                "mtu": found.mtu,
                "project": found.project_id or "",
                # What its ports' addresses may be: the preflight holds node groups off a network inside the machine network.
                "cidrs": sorted(subnet.cidr for subnet in connection.network.subnets(network_id=found.id) if subnet.cidr),
            }
            for found in _by_ref(connection.network.get_network, connection.network.networks, ref)
        ]
        for ref in refs
    }


def subnets_of(connection: Any, refs: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    return {
        ref: [
            {
                "id": found.id, "name": found.name or "", "network": found.network_id, "cidr": found.cidr,
                "pools": [[pool["start"], pool["end"]] for pool in found.allocation_pools or ()],
                **({"ipv6AddressMode": found.ipv6_address_mode} if ":" in (found.cidr or "") else {}),
                "routers": routers_on(connection, found.network_id, found.id),
            }
            for found in _by_ref(connection.network.get_subnet, connection.network.subnets, ref)
        ]
        for ref in refs
    }


# The device owners of a router's interface ports, as Neutron's floating IP association looks for them
# (neutron_lib.constants.ROUTER_INTERFACE_OWNERS; neutron/db/l3_db.py get_router_for_floatingip).
ROUTER_INTERFACE_OWNERS = ("network:router_interface", "network:ha_router_replicated_interface", "network:router_interface_distributed")


def routers_on(connection: Any, network: str, subnet: str) -> dict[str, str | None]:
    """The routers with an interface on `subnet`, each with its gateway's network ID ("": none; None: a
    router Neutron does not show this project, whose gateway is then unknown)."""
    from openstack import exceptions

    ids = sorted({
        port.device_id
        for owner in ROUTER_INTERFACE_OWNERS
        for port in connection.network.ports(network_id=network, device_owner=owner)
        if port.device_id and any(fixed.get("subnet_id") == subnet for fixed in port.fixed_ips or ())
    })
    found: dict[str, str | None] = {}
    for router_id in ids:
        try:
            gateway = connection.network.get_router(router_id).external_gateway_info or {}
        except exceptions.NotFoundException:
            found[router_id] = None
            continue
        found[router_id] = str(gateway.get("network_id") or "")
    return found


def images_of(connection: Any, names: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Every image Glance lists under each name (GET /v2/images?name=: any status but killed or deleted,
    not hidden; the project's own, public, community ones it owns and shared ones it accepted), newest first:
    what gophercloud's images.IDFromName counts for the installer and the Machine API."""
    return {
        name: [
            {
                "id": image.id, "status": image.status or "", "visibility": image.visibility or "",
                "project": image.owner_id or "", "created": image.created_at or "",
            }
            for image in sorted(connection.image.images(name=name), key=lambda image: (image.created_at or "", image.id), reverse=True)
        ]
        for name in names
    }


# What of a rule cluster/preflight_groups.py measures, as Neutron names it.
RULE_FIELDS = (
    "id", "direction", "ethertype", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id",
    "remote_address_group_id",
)


def groups_of(connection: Any, refs: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    """Each security group by ID with its rules (in ID order); None where the project sees none."""
    from openstack import exceptions

    found: dict[str, dict[str, Any] | None] = {}
    for ref in refs:
        try:
            group = connection.network.get_security_group(ref)
        except exceptions.NotFoundException:
            found[ref] = None
            continue
        rules = [{key: rule.get(key) for key in RULE_FIELDS} for rule in group.security_group_rules or ()]
        found[ref] = {"id": group.id, "name": group.name or "", "rules": sorted(rules, key=lambda rule: str(rule["id"]))}
    return found


def probe(connection: Any, wanted: dict[str, Any] | None = None) -> str:
    """The line for this connection's user: Neutron's extensions, Nova's hypervisors where it lets
    them be listed, and the networks, subnets, security groups and image names `wanted` names."""
    from openstack import exceptions

    extensions = [extension.alias for extension in connection.network.extensions()]
    try:
        hosts = [hypervisor.state or "" for hypervisor in connection.compute.hypervisors()]
    except exceptions.ForbiddenException:
        hosts = None
    zone_hosts = _zone_hosts(connection) if hosts is not None else None
    if not wanted:
        return answer(extensions, hosts, zone_hosts=zone_hosts)
    networks = networks_of(connection, wanted.get("networks") or ())
    subnets = subnets_of(connection, wanted.get("subnets") or ())
    groups = groups_of(connection, wanted["groups"]) if wanted.get("groups") else None
    images = images_of(connection, wanted["images"]) if wanted.get("images") else None
    ephemeral = ephemeral_of(connection, wanted["flavors"]) if wanted.get("flavors") else None
    return answer(extensions, hosts, networks, subnets, groups, zone_hosts, images, ephemeral)


def ephemeral_of(connection: Any, names: Iterable[str]) -> dict[str, int]:
    """Each flavor's ephemeral disk in GiB (Nova's OS-FLV-EXT-DATA:ephemeral), by the name or ID the stack gives;
    a flavor the project cannot see is left out (the preflight's flavor check names it)."""
    found = {}
    for name in names:
        flavor = connection.compute.find_flavor(name, ignore_missing=True)
        if flavor is not None:
            found[name] = int(flavor.ephemeral or 0)
    return found


def _zone_hosts(connection: Any) -> dict[str, int] | None:
    """Each compute zone's hosts whose nova-compute is available and enabled (Nova's zone details,
    which its default policy keeps to admins: None where refused)."""
    from openstack import exceptions

    try:
        zones = list(connection.compute.availability_zones(details=True))
    except exceptions.ForbiddenException:
        return None
    found = {}
    for zone in zones:
        services = [host.get("nova-compute") for host in (zone.hosts or {}).values()]
        if any(service is not None for service in services):
            found[zone.name] = sum(bool(s and s.get("available") and s.get("active")) for s in services)
    return found


def main() -> int:
    cloud = os.environ.get("OS_CLOUD", "")
    if not cloud:
        print(failed("OS_CLOUD names no clouds.yaml entry"))
        return 0
    # keystoneauth warns on stderr while it falls back between API versions: the line says what failed.
    logging.getLogger("keystoneauth").setLevel(logging.ERROR)
    try:
        import openstack  # noqa: F401 - the program's venv has it (requirements.txt)
    except ImportError:
        print(failed(f"no openstacksdk in {sys.executable}: install the program's requirements.txt into its venv"))
        return 0
    try:
        wanted = json.loads(os.environ.get(NETWORKS_VARIABLE) or "null")
    except ValueError:
        print(failed(f"{NETWORKS_VARIABLE} is not JSON"))
        return 0
    try:
        line = probe(connect(cloud), wanted if isinstance(wanted, dict) else None)
    except CloudError as error:
        line = failed(str(error))
    except Exception as error:  # noqa: BLE001 - a read the cloud refused or failed: one line, no traceback
        line = failed(f"{type(error).__name__}: {first_line(error)}")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
