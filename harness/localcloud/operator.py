"""What an operator does to a fresh cloud before a tenant installs OpenShift on it.

Runs with the services' virtualenv's Python (it needs openstacksdk, which the project's venv
does not carry): `<venv>/bin/python harness/localcloud/operator.py identity|prepare|describe`,
with OS_CLIENT_CONFIG_FILE naming the clouds.yaml `up` wrote (and LOCALCLOUD_PASSWORD for `identity`). Imports nothing of the project.

- `identity`: the service users, the catalog, the tenant's project and user (idempotent).
- `prepare DESCRIPTION.json`: makes the cloud what the description (samples/cloud/dev.yaml,
  the mock cloud the offline plan reads) says: flavors, images, networks with
  documentation-range subnets, floating IPs, zones, volume types, quotas, and what other
  things in the project use. Every step is idempotent.
- `tidy DESCRIPTION.json [PROJECT]`: removes from project lab (or PROJECT, the second one) whatever
  `prepare` did not make there: what a test run that was killed or failed before its destroy left (a
  stack's servers, networks, image...).
- `state-store`: each tenant project's bucket for Pulumi state (a Swift container) and its user's EC2
  credential for s3api, made where missing; prints them as JSON.
- `describe`: prints, as JSON, the same facts read back through the APIs.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import time

import openstack

CLOUD, ADMIN_CLOUD = "openstack", "localcloud-admin"
# The tenant projects (harness/localcloud/layout.py): lab, which the description describes, and the
# second one, which gets lab's quotas only; its tenant is `localcloud-<name>` in the main clouds.yaml.
PROJECTS = ("lab", "lab2")
HOST = "http://127.0.0.1"
SERVICES = {  # service type: (name, URL)
    "image": ("glance", f"{HOST}:9292"),
    "placement": ("placement", f"{HOST}:8778"),
    "compute": ("nova", f"{HOST}:8774/v2.1"),
    "network": ("neutron", f"{HOST}:9696"),
    "volumev3": ("cinderv3", f"{HOST}:8776/v3"),
    "block-storage": ("cinder", f"{HOST}:8776/v3"),
    "load-balancer": ("octavia", f"{HOST}:9876"),
    "shared-file-system": ("manila", f"{HOST}:8786/v2"),
    "object-store": ("swift", f"{HOST}:8080/v1/AUTH_%(project_id)s"),
}
SERVICE_USERS = ("glance", "placement", "nova", "neutron", "cinder", "octavia", "manila", "swift")
# Octavia's policy takes `member` under Keystone's default roles, and on many clouds (those that
# enforce its older rules) only its own role: the tenant has both, as such a cloud's users do.
# Swift's operator role too, as clouds whose keystoneauth lists only it give it to their users.
TENANT_ROLES = ("member", "load-balancer_member", "swiftoperator")
# Documentation ranges (RFC 5737) for the external networks; the described floating IPs fall in them.
EXTERNAL_SUBNETS = {"external": ["192.0.2.0/24", "198.51.100.0/24"], "public": ["203.0.113.0/24"]}
INTERNAL_CIDR = "172.31.0.0/24"
# Other things in the project (what the description counts as used): servers of this flavor.
OTHER_FLAVOR = "m1.medium"
OTHER_IMAGE = "centos-stream-9"
COMPUTE_HOSTS = {"az1": "localcloud-compute-az1", "az2": "localcloud-compute-az2"}
VOLUME_DEFAULT_TYPE = "__DEFAULT__"
# A volume type per zone, as clouds with `rootVolume.types` have them: each held to its Cinder zone
# (`RESKEY:availability_zones`, which Cinder's API enforces), so that a volume of the wrong type for its zone is
# refused. (The backends' driver reports one backend name for all, so `volume_backend_name` cannot tell them.)
VOLUME_TYPE_ZONES = {"ssd-az1": "storage-1", "ssd-az2": "storage-2"}
SHARE_TYPE = "default"
STATE_BUCKET = "pulumi-state"  # layout.STATE_BUCKET


def say(message: str) -> None:
    print(f"localcloud: {message}", flush=True)


def identity(password: str, rehash: bool) -> None:
    """The users, roles, catalog and projects, made where missing. `rehash`: every user's password set
    again (when the hash cost changed). Keystone revokes a user's tokens when its password is set, so
    not on every `up`: the services started before would present revoked tokens (Nova's scheduler then
    finds no host: placement answers 401)."""
    admin = openstack.connect(cloud=ADMIN_CLOUD)
    service_project = admin.identity.find_project("service") or admin.identity.create_project(name="service", domain_id="default")
    roles = {}
    for role in ("admin", "service", *TENANT_ROLES):
        roles[role] = admin.identity.find_role(role) or admin.identity.create_role(name=role)
    for name in SERVICE_USERS:
        user = _user(admin, name, password, rehash)
        for role in ("admin", "service"):  # `service` satisfies the service-to-service RBAC defaults
            admin.identity.assign_project_role_to_user(service_project, user, roles[role])
    existing = {service.type: service for service in admin.identity.services()}
    for type_, (name, url) in SERVICES.items():
        service = existing.get(type_) or admin.identity.create_service(name=name, type=type_)
        if not list(admin.identity.endpoints(service_id=service.id)):
            for interface in ("public", "internal", "admin"):
                admin.identity.create_endpoint(service_id=service.id, interface=interface, url=url, region_id="RegionOne")
    for name in PROJECTS:  # each tenant project with a user of the same name
        project = admin.identity.find_project(name) or admin.identity.create_project(name=name, domain_id="default")
        user = _user(admin, name, password, rehash, default_project_id=project.id)
        for role in TENANT_ROLES:
            admin.identity.assign_project_role_to_user(project, user, roles[role])
    _user(admin, "admin", password, rehash)  # made by `keystone-manage bootstrap`; last, as it ends this session's token
    say(f"identity: service users, catalog, projects {' and '.join(PROJECTS)}, each with its user ({', '.join(TENANT_ROLES)})")


def _user(admin, name: str, password: str, rehash: bool, **fields):
    """The user, made or found; with `rehash`, its password set again so that Keystone stores it at the
    hash cost configured now (a home made before keeps the cost its users were made with)."""
    user = admin.identity.find_user(name, domain_id="default")
    if user is None:
        return admin.identity.create_user(name=name, password=password, domain_id="default", **fields)
    return admin.identity.update_user(user, password=password) if rehash else user


def _wait(what: str, check, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"localcloud: timed out waiting for {what}")
        time.sleep(1)


def prepare(description: dict) -> None:
    admin = openstack.connect(cloud=ADMIN_CLOUD)
    tenant = openstack.connect(cloud=CLOUD)
    lab = admin.identity.find_project("lab")

    for name, (vcpus, ram, disk) in description["flavors"].items():
        flavor = admin.compute.find_flavor(name)
        if flavor and (flavor.vcpus, flavor.ram, flavor.disk) != (vcpus, ram, disk):
            admin.compute.delete_flavor(flavor)
            flavor = None
        if not flavor:
            admin.compute.create_flavor(name=name, vcpus=vcpus, ram=ram, disk=disk, is_public=True)
    say(f"flavors: {', '.join(description['flavors'])}")

    for name, active in description["images"].items():
        image = admin.image.find_image(name)
        if image and (image.status == "active") != active:
            admin.image.delete_image(image)
            image = None
        if not image:
            # Nothing boots here: the content only has to exist.
            fields = dict(name=name, disk_format="raw", container_format="bare", visibility="public")
            if active:
                admin.image.create_image(data=f"local cloud image {name}\n".encode(), **fields)
            else:
                admin.image.create_image(**fields)
    say(f"images: {', '.join(description['images'])}")

    networks = {}
    for name, external in description["networks"].items():
        if external:
            network = admin.network.find_network(name) or admin.network.create_network(
                name=name,
                is_router_external=True,
                provider_network_type="flat",
                provider_physical_network=name,
            )
            for cidr in EXTERNAL_SUBNETS[name]:
                if not list(admin.network.subnets(network_id=network.id, cidr=cidr)):
                    admin.network.create_subnet(network_id=network.id, name=f"{name}-{cidr.split('/')[0]}", ip_version=4, cidr=cidr, enable_dhcp=False)
        else:
            network = tenant.network.find_network(name) or tenant.network.create_network(name=name)
            if not list(tenant.network.subnets(network_id=network.id)):
                tenant.network.create_subnet(network_id=network.id, name=name, ip_version=4, cidr=INTERNAL_CIDR)
        networks[name] = network
    say(f"networks: {', '.join(f'{n} (external)' if e else n for n, e in description['networks'].items())}")

    for address, port in description["floatingIps"].items():
        if port:
            raise SystemExit(f"localcloud: floating IP {address} is described in use by {port!r}; only free ones can be made")
        if list(admin.network.ips(floating_ip_address=address)):
            continue
        ip = ipaddress.ip_address(address)
        owner = next(name for name, cidrs in EXTERNAL_SUBNETS.items() if name in networks and any(ip in ipaddress.ip_network(cidr) for cidr in cidrs))
        # Choosing the address is an admin's right in Neutron's default policy.
        admin.network.create_ip(floating_network_id=networks[owner].id, floating_ip_address=address, project_id=lab.id)
    say(f"floating IPs for project lab: {', '.join(description['floatingIps'])}")

    _zones(admin, description)
    existing_types = {volume_type.name for volume_type in admin.block_storage.types()}
    for name in description["volumeTypes"]:
        if name not in existing_types:
            zone = VOLUME_TYPE_ZONES.get(name)
            admin.block_storage.create_type(name=name, **({"extra_specs": {"RESKEY:availability_zones": zone}} if zone else {}))
    say(f"volume types: {', '.join(description['volumeTypes'])}")

    quotas = {name: value[0] if isinstance(value, list) else value for name, value in description["quotas"].items()}
    for name in PROJECTS:
        project = admin.identity.find_project(name, ignore_missing=False)
        admin.set_compute_quotas(
            project.id,
            instances=quotas["instances"],
            cores=quotas["cores"],
            ram=quotas["ram"],
            server_groups=quotas["serverGroups"],
            server_group_members=quotas["serverGroupMembers"],
        )
        admin.set_network_quotas(
            project.id,
            port=quotas["ports"],
            security_group=quotas["securityGroups"],
            security_group_rule=quotas["securityGroupRules"],
            floatingip=quotas["floatingIps"],
        )
        admin.set_volume_quotas(project.id, volumes=quotas["volumes"], gigabytes=quotas["gigabytes"])
    # Manila's default share type (manila.conf default_share_type): no share servers, snapshots (Manila CSI takes them).
    if not any(t.name == SHARE_TYPE for t in admin.shared_file_system.share_types()):
        admin.shared_file_system.create_share_type(
            name=SHARE_TYPE, extra_specs={"driver_handles_share_servers": "False", "snapshot_support": "True"}
        )
    say(f"quotas of projects {' and '.join(PROJECTS)}: " + ", ".join(f"{name} {value}" for name, value in quotas.items()))

    _others(admin, tenant, description, networks)


def _zones(admin, description: dict) -> None:
    for zone in description["computeZones"]:
        host = COMPUTE_HOSTS.get(zone)
        if host is None:
            continue  # Nova's default zone
        _wait(f"compute host {host}", lambda: any(s.host == host for s in admin.compute.services(binary="nova-compute")))
        aggregate = next((a for a in admin.compute.aggregates() if a.name == zone), None) or admin.compute.create_aggregate(name=zone, availability_zone=zone)
        if host not in (aggregate.hosts or []):
            admin.compute.add_host_to_aggregate(aggregate, host)
    say(f"compute zones: {', '.join(description['computeZones'])}")


def _others(admin, tenant, description: dict, networks: dict) -> None:
    """What other things in the project use (the description's second numbers): servers, ports."""
    quotas = description["quotas"]
    internal = next(name for name, external in description["networks"].items() if not external)
    external = next(name for name, external in description["networks"].items() if external)
    network = networks[internal]
    router = tenant.network.find_router("lab-router")
    if router is None:
        router = tenant.network.create_router(name="lab-router", external_gateway_info={"network_id": networks[external].id})
        subnet = next(tenant.network.subnets(network_id=network.id))
        tenant.network.add_interface_to_router(router, subnet_id=subnet.id)
    flavor = description["flavors"][OTHER_FLAVOR]
    servers = quotas["instances"][1]
    if (servers * flavor[0], servers * flavor[1]) != (quotas["cores"][1], quotas["ram"][1]):
        raise SystemExit(f"localcloud: the used cores and RAM are not {servers} servers of flavor {OTHER_FLAVOR}")
    image = tenant.image.find_image(OTHER_IMAGE)
    for index in range(servers):
        name = f"lab-bastion-{index}"
        if tenant.compute.find_server(name) is None:
            server = tenant.compute.create_server(
                name=name, flavor_id=tenant.compute.find_flavor(OTHER_FLAVOR).id, image_id=image.id, networks=[{"uuid": network.id}]
            )
            tenant.compute.wait_for_server(server, wait=180)
    project = tenant.current_project_id
    used = [port for port in tenant.network.ports(project_id=project) if not port.name.startswith("lab-reserved-")]
    for index in range(quotas["ports"][1] - len(used)):
        name = f"lab-reserved-{index}"
        if tenant.network.find_port(name) is None:
            tenant.network.create_port(name=name, network_id=network.id)
    say(f"in use by other things in project lab: {servers} servers of {OTHER_FLAVOR}, {quotas['ports'][1]} ports")


def tidy(description: dict, project_name: str = PROJECTS[0]) -> list[str]:
    """Deletes the project's resources that `prepare` did not make, dependents first; returns
    what it deleted and exits naming what it could not. In the second project `prepare` made nothing."""
    admin = openstack.connect(cloud=ADMIN_CLOUD)
    tenant = _tenant(project_name)
    if project_name != PROJECTS[0]:
        description = {**description, "floatingIps": {}, "networks": {}, "images": {}}
    project = tenant.current_project_id
    deleted, failed = [], []

    def delete(kind: str, resource, action, *args, wait=None, **kwargs) -> None:
        try:
            action(*args, **kwargs)
            if wait is not None:
                wait(resource, interval=1, wait=180)
            deleted.append(f"{kind} {resource.name or resource.id}")
        except openstack.exceptions.NotFoundException:
            pass
        except Exception as error:  # the rest still goes; what failed is named at the end
            failed.append(f"{kind} {resource.name or resource.id}: {type(error).__name__}: {error}"[:300])

    kept_servers = set()
    for lb in list(tenant.load_balancer.load_balancers(project_id=project)):
        delete("load balancer", lb, tenant.load_balancer.delete_load_balancer, lb, cascade=True, wait=tenant.load_balancer.wait_for_delete)
    servers = []
    for server in tenant.compute.servers():
        if server.name.startswith("lab-bastion-"):
            kept_servers.add(server.id)
        else:
            servers.append(server)
            delete("server", server, tenant.compute.delete_server, server)
    for server in servers:
        try:
            tenant.compute.wait_for_delete(server, interval=1, wait=180)
        except Exception as error:
            failed.append(f"server {server.name}: {error}"[:300])
    for trunk in list(tenant.network.trunks(project_id=project)):
        delete("trunk", trunk, tenant.network.delete_trunk, trunk)
    files = tenant.shared_file_system
    for snapshot in list(files.share_snapshots()):
        delete("share snapshot", snapshot, files.delete_share_snapshot, snapshot, wait=files.wait_for_delete)
    for share in list(files.shares()):
        delete("share", share, files.delete_share, share, wait=files.wait_for_delete)
    for snapshot in list(tenant.block_storage.snapshots()):
        delete("volume snapshot", snapshot, tenant.block_storage.delete_snapshot, snapshot, wait=tenant.block_storage.wait_for_delete)
    for volume in list(tenant.block_storage.volumes()):
        # One still attaching when its test stopped: the operator's force delete.
        delete("volume", volume, admin.block_storage.delete_volume, volume.id, force=True, wait=tenant.block_storage.wait_for_delete)
    described_ips = set(description["floatingIps"])
    for ip in list(tenant.network.ips(project_id=project)):
        if ip.floating_ip_address not in described_ips:
            delete("floating IP", ip, tenant.network.delete_ip, ip)
        elif ip.port_id:
            tenant.network.update_ip(ip, port_id=None)
    kept_routers = set()
    for router in list(tenant.network.routers(project_id=project)):
        if router.name == "lab-router":
            kept_routers.add(router.id)
            continue
        for port in tenant.network.ports(device_id=router.id, device_owner="network:router_interface"):
            for fixed in port.fixed_ips:
                tenant.network.remove_interface_from_router(router, subnet_id=fixed["subnet_id"])
        delete("router", router, tenant.network.delete_router, router)
    kept = kept_servers | kept_routers
    for port in list(tenant.network.ports(project_id=project)):
        if port.name.startswith("lab-reserved-") or port.device_id in kept:
            continue
        delete("port", port, tenant.network.delete_port, port)
    described_networks = set(description["networks"])
    for network in list(tenant.network.networks(project_id=project)):
        if network.name not in described_networks:
            delete("network", network, tenant.network.delete_network, network)
    for group in list(tenant.network.security_groups(project_id=project)):
        if group.name != "default":
            delete("security group", group, tenant.network.delete_security_group, group)
    for group in list(tenant.compute.server_groups()):
        delete("server group", group, tenant.compute.delete_server_group, group)
    described_images = set(description["images"])
    for image in list(tenant.image.images(owner=project)):
        if image.name not in described_images:
            delete("image", image, tenant.image.delete_image, image)
    credentials = f"/users/{tenant.current_user_id}/application_credentials"
    for credential in tenant.identity.get(credentials).json()["application_credentials"]:
        answer = tenant.identity.delete(f"{credentials}/{credential['id']}", raise_exc=False)
        (deleted if answer.ok else failed).append(f"application credential {credential['name']}" + ("" if answer.ok else f": {answer.status_code}"))
    try:
        deleted += _empty_bucket(tenant)
    except Exception as error:
        failed.append(f"bucket {STATE_BUCKET}: {type(error).__name__}: {error}"[:300])
    if failed:
        raise SystemExit("localcloud: could not remove " + "; ".join(failed))
    return deleted


def _tenant(project_name: str):
    return openstack.connect(cloud=CLOUD if project_name == PROJECTS[0] else f"localcloud-{project_name}")


def state_store() -> dict:
    """Each project's state bucket and its user's EC2 credential (Keystone's OS-EC2 API), made where missing."""
    found = {}
    for name in PROJECTS:
        tenant = _tenant(name)
        tenant.object_store.create_container(name=STATE_BUCKET)  # a PUT: idempotent
        project, path = tenant.current_project_id, f"/users/{tenant.current_user_id}/credentials/OS-EC2"
        credential = next((c for c in tenant.identity.get(path).json()["credentials"] if c["tenant_id"] == project), None)
        if credential is None:
            answer = tenant.identity.post(path, json={"tenant_id": project})
            answer.raise_for_status()
            credential = answer.json()["credential"]
        found[name] = {"access": credential["access"], "secret": credential["secret"], "bucket": STATE_BUCKET}
    return found


def _empty_bucket(tenant) -> list[str]:
    """The state bucket emptied (what a killed run's stack left), kept; made again if someone deleted it."""
    tenant.object_store.create_container(name=STATE_BUCKET)
    objects = list(tenant.object_store.objects(STATE_BUCKET))
    for item in objects:
        tenant.object_store.delete_object(item, container=STATE_BUCKET, ignore_missing=True)
    return [f"{len(objects)} objects from bucket {STATE_BUCKET}"] if objects else []


def describe() -> dict:
    """The cloud as the tenant and its preflight see it, in the description's shape."""
    tenant = openstack.connect(cloud=CLOUD)
    admin = openstack.connect(cloud=ADMIN_CLOUD)
    project = tenant.current_project_id
    limits = tenant.compute.get_limits().absolute
    network_quota = admin.network.get_quota(project)
    volume_quota = admin.block_storage.get_quota_set(project)
    region = tenant.config.get_region_name()
    return {
        "project": tenant.identity.get_project(project).name,
        "region": region,
        # The catalog's public endpoints by type, as the preflight reads them from the provider's token.
        "catalog": {kind: tenant.endpoint_for(kind, interface="public", region_name=region) for kind in ("compute", "identity", "image", "network", "volumev3")},
        "flavors": {f.name: [f.vcpus, f.ram, f.disk] for f in tenant.compute.flavors()},
        "images": {i.name: i.status == "active" for i in tenant.image.images()},
        "networks": {n.name: bool(n.is_router_external) for n in tenant.network.networks()},
        "floatingIps": {ip.floating_ip_address: ip.port_id or "" for ip in tenant.network.ips(project_id=project)},
        "computeZones": sorted(z.name for z in tenant.compute.availability_zones() if z.state["available"]),
        "volumeZones": sorted(z.name for z in tenant.block_storage.availability_zones() if z.state["available"]),
        "volumeTypes": sorted(t.name for t in tenant.block_storage.types()),
        "networkExtensions": sorted(e.alias for e in tenant.network.extensions()),
        "quotas": {
            "instances": [limits.instances, limits.instances_used],
            "cores": [limits.total_cores, limits.total_cores_used],
            "ram": [limits.total_ram, limits.total_ram_used],
            "serverGroups": [limits.server_groups, limits.server_groups_used],
            "serverGroupMembers": limits.server_group_members,
            "ports": [network_quota.ports, len(list(tenant.network.ports(project_id=project)))],
            "securityGroups": network_quota.security_groups,
            "securityGroupRules": network_quota.security_group_rules,
            "floatingIps": network_quota.floating_ips,
            "volumes": volume_quota.volumes,
            "gigabytes": volume_quota.gigabytes,
        },
    }


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "identity":
        identity(os.environ["LOCALCLOUD_PASSWORD"], rehash=sys.argv[2:] == ["--rehash"])
    elif command == "prepare":
        with open(sys.argv[2]) as file:
            prepare(json.load(file))
    elif command == "tidy":
        project_name = sys.argv[3] if len(sys.argv) > 3 else PROJECTS[0]
        with open(sys.argv[2]) as file:
            removed = tidy(json.load(file), project_name)
        say(f"project {project_name}: " + (f"removed what `prepare` did not make: {', '.join(removed)}" if removed else "nothing to remove: the project is as prepared"))
    elif command == "state-store":
        json.dump(state_store(), sys.stdout, sort_keys=True)
        print()
    elif command == "describe":
        json.dump(describe(), sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        raise SystemExit(f"usage: {sys.argv[0]} identity [--rehash] | prepare DESCRIPTION.json | tidy DESCRIPTION.json [PROJECT] | state-store | describe")
