"""The destroy cleanup script (cluster/cleanup.py) run for real against the local cloud, as the
local Command's delete runs it (components/openstack/cleanup.py): bash -c, OS_CLOUD and INFRA_ID
in its environment, the real `openstack` CLI on PATH.

What the cluster would have made itself goes: a MachineSet's server (tagged and named by the
infra ID) and one named by it only, a PVC's Cinder volume (CSI metadata) attached to it, the
Machine API's tagged port and a server group it made by name. What must stay stays: what
Pulumi deletes itself (the program's network, subnet, router and its interface, security group,
server group, a master, the API VIP port and floating IP, all tagged like the cluster's);
another cluster whose infra ID starts with this one's; the project's own servers, ports,
volumes and floating IPs."""

from __future__ import annotations

import subprocess

import pytest

from cluster.cleanup import cleanup_script
from tests.localcloud.conftest import sdk

INFRA = "ocp4-cl3an"
OTHER = f"{INFRA}x"  # another cluster: its infra ID starts with this one's
TAG = f"openshiftClusterID={INFRA}"
CSI = "cinder.csi.openstack.org/cluster"

MAKE = """
def tagged(resource, tag):
    tenant.network.set_tags(resource, [tag])
    return resource.id

def server(name, tags=()):
    made = tenant.compute.create_server(name=name, flavor_id=flavor, image_id=image, networks=[{"uuid": network.id}], tags=list(tags))
    return tenant.compute.wait_for_server(made, wait=180).id

def volume(name, metadata):
    made = tenant.block_storage.create_volume(name=name, size=1, metadata=metadata)
    return tenant.block_storage.wait_for_status(made, "available", wait=120).id

flavor = tenant.compute.find_flavor("m1.small").id
image = tenant.image.find_image("centos-stream-9").id
external = tenant.network.find_network("external")
tag = f"openshiftClusterID={infra}"
# The program's own (Pulumi state holds them): the cleanup never touches these.
network = tenant.network.create_network(name=f"{infra}-network")
subnet = tenant.network.create_subnet(network_id=network.id, name=f"{infra}-nodes", ip_version=4, cidr="10.0.0.0/16")
router = tenant.network.create_router(name=f"{infra}-router", external_gateway_info={"network_id": external.id})
tenant.network.add_interface_to_router(router, subnet_id=subnet.id)
group = tenant.network.create_security_group(name=f"{infra}-master")
server_group = tenant.compute.create_server_group(name=f"{infra}-master", policy="soft-anti-affinity")
keep = {
    "network": tagged(network, tag), "subnet": subnet.id, "router": router.id, "security group": tagged(group, tag),
    "server group": server_group.id,
    "master server": server(f"{infra}-master-0", [tag]),
    "API VIP port": tagged(tenant.network.create_port(name=f"{infra}-api-port", network_id=network.id), tag),
    "API floating IP": tagged(tenant.network.create_ip(floating_network_id=external.id), tag),
    # Another cluster, whose infra ID starts with this one's.
    "other cluster's server": server(f"{other}-worker-0-abcde", [f"openshiftClusterID={other}"]),
    "other cluster's volume": volume("pvc-other", {csi: other}),
    "project's volume": volume("project-data", {}),
}
# What the cluster made itself.
machine = server(f"{infra}-worker-0-x7k2p", [tag])
gone = {
    "MachineSet server": machine,
    "infra-ID-named server": server(f"{infra}-infra-0-q8w4z"),
    "PVC volume": volume("pvc-0a1b2c", {csi: infra}),
    "tagged port": tagged(tenant.network.create_port(name=f"{infra}-worker-0-x7k2p-0", network_id=network.id), tag),
    "Machine API's server group": tenant.compute.create_server_group(name=f"{infra}-infra", policy="soft-anti-affinity").id,
}
attachment = tenant.compute.create_volume_attachment(machine, volume_id=gone["PVC volume"])
tenant.block_storage.wait_for_status(tenant.block_storage.get_volume(gone["PVC volume"]), "in-use", wait=120)
result = {"keep": keep, "gone": gone}
"""

FIND = """
kinds = {
    "network": tenant.network.find_network, "subnet": tenant.network.find_subnet, "router": tenant.network.find_router,
    "security group": tenant.network.find_security_group, "server group": tenant.compute.find_server_group,
    "server": tenant.compute.find_server, "volume": tenant.block_storage.find_volume, "port": tenant.network.find_port,
    "floating IP": lambda id_: tenant.network.get_ip(id_) if any(ip.id == id_ for ip in tenant.network.ips()) else None,
}
def exists(what, id_):
    kind = next(kind for kind in sorted(kinds, key=len, reverse=True) if what.endswith(kind))
    return kinds[kind](id_) is not None
result = {what: exists(what, id_) for what, id_ in ids.items()}
"""

PROJECT = """
result = sorted(
    [f"server {s.name}" for s in tenant.compute.servers()] + [f"port {p.name or p.id}" for p in tenant.network.ports()]
    + [f"floating IP {ip.floating_ip_address}" for ip in tenant.network.ips()] + [f"volume {v.name}" for v in tenant.block_storage.volumes()]
)
"""

REMOVE = """
for server in tenant.compute.servers():
    if server.name.startswith(infra):
        tenant.compute.delete_server(server)
        tenant.compute.wait_for_delete(server, wait=120)
for volume in tenant.block_storage.volumes():
    if volume.name in ("pvc-other", "project-data", "pvc-0a1b2c"):
        tenant.block_storage.delete_volume(volume)
for port in tenant.network.ports():
    if (port.name or "").startswith(infra):
        tenant.network.delete_port(port)
for ip in tenant.network.ips():
    if f"openshiftClusterID={infra}" in (ip.tags or []):  # the program's, left by the test
        tenant.network.delete_ip(ip)
router = tenant.network.find_router(f"{infra}-router")
if router:
    for subnet in tenant.network.subnets(name=f"{infra}-nodes"):
        tenant.network.remove_interface_from_router(router, subnet_id=subnet.id)
    tenant.network.delete_router(router)
for name, find, delete in (("network", tenant.network.find_network, tenant.network.delete_network),
                           ("master", tenant.network.find_security_group, tenant.network.delete_security_group),
                           ("master", tenant.compute.find_server_group, tenant.compute.delete_server_group),
                           ("infra", tenant.compute.find_server_group, tenant.compute.delete_server_group)):
    found = find(f"{infra}-{name}")
    if found:
        delete(found)
"""


@pytest.fixture(scope="module")
def cleaned(cloud, cloud_env):
    """Makes the cluster's and the program's resources, runs the script as the Command does,
    and reads back through the API which of them still exist."""
    sdk(cloud, REMOVE, infra=INFRA)  # what an earlier, interrupted run left
    before = sdk(cloud, PROJECT)
    made = sdk(cloud, MAKE, infra=INFRA, other=OTHER, csi=CSI)
    try:
        environment = {**cloud_env, "OS_CLOUD": "openstack", "INFRA_ID": INFRA}
        ran = subprocess.run(["/bin/bash", "-c", cleanup_script()], env=environment, capture_output=True, text=True, timeout=900)
        gone = sdk(cloud, FIND, ids=made["gone"])
        kept = sdk(cloud, FIND, ids=made["keep"])
    finally:
        sdk(cloud, REMOVE, infra=INFRA)
    return ran, gone, kept, before, sdk(cloud, PROJECT)


def test_the_destroy_cleanup_removes_what_the_cluster_made_and_nothing_else(cleaned):
    ran, gone, kept, before, after = cleaned
    assert ran.returncode == 0, ran.stderr
    report = ran.stdout + ran.stderr
    assert gone == {what: False for what in gone}, report
    assert kept == {what: True for what in kept}, report
    for what in ("server", "volume", "port", "server group"):
        assert f"cleanup: deleted {what}" in ran.stdout
    # No Swift here: the script knows it and does not try (nor say it could not list containers).
    assert "container" not in ran.stderr, ran.stderr
    # The project's own things (samples/cloud/dev.yaml's "in use") are as they were.
    assert after == before
