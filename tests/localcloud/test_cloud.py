"""The local cloud holds what the committed stacks expect, exactly as the mock cloud describes it
(samples/cloud/dev.yaml, which the offline plan's preflight reads): read back through the real
APIs, as the tenant the stacks name (clouds.yaml entry `openstack`)."""

from __future__ import annotations

import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

import pytest
import yaml

from cluster.config import load_config
from cluster.preflight import PROBE_COMMAND, TAG_EXTENSIONS, Probe, parse_probe
from harness.localcloud.cloud import answering
from harness.localcloud.layout import HOST, PORTS, url
from harness.localcloud.processes import members, recorded, running
from harness.localcloud.services import process_names
from tests.conftest import stack_config
from tests.localcloud.conftest import ROOT, localcloud, sdk
from tools.mock_cloud import DEFAULT, load


def described_by_the_cloud(cloud) -> dict:
    done = subprocess.run(
        [str(cloud.bin("python")), str(ROOT / "harness/localcloud/operator.py"), "describe"],
        env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_local_cloud_is_what_the_mock_cloud_describes(cloud):
    mock = load(DEFAULT)
    real = described_by_the_cloud(cloud)
    # Neutron lists many more extensions than the description names; the named ones must be there.
    assert set(mock.pop("networkExtensions")) <= set(real.pop("networkExtensions"))
    # The token is the mock's stand-in; the catalog names the same services, at this machine's addresses.
    mock.pop("token")
    assert real.pop("catalog").keys() == mock.pop("catalog").keys()
    for key in ("computeZones", "volumeZones", "volumeTypes"):
        mock[key] = sorted(mock[key])
    assert real == mock


# What a stack killed before its destroy leaves, and what the cluster would have made beside it.
LEFT_BEHIND = """
network = tenant.network.create_network(name="ocp4-t1dy0-openshift")
subnet = tenant.network.create_subnet(network_id=network.id, ip_version=4, cidr="10.199.0.0/24")
router = tenant.network.create_router(name="ocp4-t1dy0-external-router", external_gateway_info={"network_id": tenant.network.find_network("external").id})
tenant.network.add_interface_to_router(router, subnet_id=subnet.id)
group = tenant.network.create_security_group(name="ocp4-t1dy0-master")
port = tenant.network.create_port(name="ocp4-t1dy0-api-port", network_id=network.id, security_group_ids=[group.id])
tenant.network.create_ip(floating_network_id=tenant.network.find_network("external").id, port_id=port.id)
tenant.compute.create_server_group(name="ocp4-t1dy0-master", policies=["soft-anti-affinity"])
server = tenant.compute.create_server(name="ocp4-master-0", flavor_id=tenant.compute.find_flavor("m1.small").id,
    image_id=tenant.image.find_image("centos-stream-9").id, networks=[{"uuid": network.id}])
tenant.compute.wait_for_server(server, interval=1, wait=180)
tenant.image.create_image(name="ocp4-t1dy0-ignition", container_format="bare", disk_format="raw", data=b"{}", visibility="private")
volume = tenant.block_storage.create_volume(name="pvc-t1dy0", size=1)
tenant.block_storage.wait_for_status(volume, "available", interval=1, wait=120)
tenant.block_storage.create_snapshot(volume_id=volume.id, name="snapshot-t1dy0")
tenant.identity.post(f"/users/{tenant.current_user_id}/application_credentials", json={"application_credential": {"name": "ocp4-t1dy0-bootstrap-ignition"}})
"""


def test_tidy_takes_the_project_back_to_what_the_mock_cloud_describes(cloud):
    sdk(cloud, LEFT_BEHIND)
    tidied = localcloud("tidy")
    assert tidied.returncode == 0, tidied.stdout + tidied.stderr
    for what in ("server ocp4-master-0", "router ocp4-t1dy0-external-router", "port ocp4-t1dy0-api-port", "network ocp4-t1dy0-openshift",
                 "security group ocp4-t1dy0-master", "server group ocp4-t1dy0-master", "image ocp4-t1dy0-ignition", "volume pvc-t1dy0",
                 "volume snapshot snapshot-t1dy0", "application credential ocp4-t1dy0-bootstrap-ignition", "floating IP "):
        assert what in tidied.stdout, (what, tidied.stdout)
    test_the_local_cloud_is_what_the_mock_cloud_describes(cloud)
    left = sdk(cloud, "result = [len(list(tenant.block_storage.volumes())), len(list(tenant.block_storage.snapshots())), "
                      "len(tenant.identity.get(f'/users/{tenant.current_user_id}/application_credentials').json()['application_credentials'])]")
    assert left == [0, 0, 0]
    again = localcloud("tidy")
    assert again.returncode == 0 and "nothing to remove" in again.stdout, again.stdout + again.stderr


def test_the_cloud_has_what_the_committed_stacks_name(cloud):
    real = described_by_the_cloud(cloud)
    for stack in ("dev", "standalone"):
        config = load_config(stack_config(stack))
        for pool in (config.masters, config.workers):
            assert pool.flavor in real["flavors"] and real["images"][pool.image] is True
        helper = config.bootstrap.helper
        assert helper.flavor in real["flavors"] and real["images"][helper.image] is True
        assert real["networks"][config.openstack.external_network] is True


def probed(cloud_env: dict[str, str], cloud: str) -> subprocess.CompletedProcess:
    """The preflight's probe as the program runs it (components/openstack/preflight.py): its command,
    the program's Python, the project directory, OS_CLOUD naming the clouds.yaml entry."""
    environment = {**cloud_env, "OS_CLOUD": cloud, "OCP_PYTHON": sys.executable}
    return subprocess.run(["bash", "-c", PROBE_COMMAND], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)


def test_the_preflight_lists_neutron_extensions_with_openstacksdk(cloud_env):
    done = probed(cloud_env, "openstack")
    assert done.returncode == 0 and "error" not in json.loads(done.stdout), done.stdout + done.stderr
    assert set(TAG_EXTENSIONS) & set(parse_probe(done.stdout).extensions or ())


def test_the_preflight_reads_compute_hosts_where_nova_lets_the_caller(cloud_env):
    # Nova's default policy keeps the hypervisors to admins: a member's preflight sees no hosts.
    member = probed(cloud_env, "openstack")
    assert json.loads(member.stdout)["hosts"] is None and parse_probe(member.stdout).hosts is None, member.stdout + member.stderr
    admin = probed(cloud_env, "localcloud-admin")
    states = json.loads(admin.stdout)["hosts"]
    assert states and set(states) == {"up"}, admin.stdout + admin.stderr
    # And each compute zone's hosts (Nova's zone details, admin-only too): one host per zone here.
    assert parse_probe(member.stdout).zone_hosts is None
    assert parse_probe(admin.stdout) == Probe(parse_probe(member.stdout).extensions, len(states), zone_hosts={"az1": 1, "az2": 1, "nova": 1})


# Every API a client (openstacksdk, the Pulumi plugin's gophercloud) polls, with a path that needs no token.
API_PATHS = {"keystone": "/v3", "placement": "/", "glance": "/", "neutron": "/", "nova": "/", "cinder": "/", "octavia": "/", "manila": "/"}


def _closed_by_server(connection: http.client.HTTPConnection) -> bool:
    readable, _, _ = select.select([connection.sock], [], [], 0)
    return bool(readable) and connection.sock.recv(1, socket.MSG_PEEK) == b""


def test_the_apis_keep_an_idle_connection_longer_than_a_client_polls(cloud):
    """With gunicorn's default keep-alive (2 s, openstacksdk's poll interval) the server closed
    idle connections just as clients reused them: RemoteDisconnected mid-wait. An idle gap longer
    than that default and its 1 s close tick leaves every API's connection open and reusable."""
    connections = {}
    for name, path in API_PATHS.items():
        connection = connections[name] = http.client.HTTPConnection(HOST, PORTS[name], timeout=30)
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        assert response.status < 500 and not response.will_close, (name, response.status)
    time.sleep(3.5)
    try:
        for name, connection in connections.items():
            assert not _closed_by_server(connection), f"{name} closed an idle connection after 3.5 s"
            first = connection.sock
            connection.request("GET", API_PATHS[name])
            response = connection.getresponse()
            response.read()
            assert response.status < 500 and connection.sock is first, name
    finally:
        for connection in connections.values():
            connection.close()


@pytest.mark.alone  # restarts services: the other group's stacks would fail
def test_up_again_is_a_no_op_for_running_processes(cloud):
    before = {name: running(cloud, name) for name in process_names()}
    again = localcloud("up")
    assert again.returncode == 0, again.stdout[-3000:]
    assert {name: running(cloud, name) for name in process_names()} == before
    assert all(before.values())
    assert answering(cloud) == cloud.clouds_yaml
    entries = yaml.safe_load(cloud.clouds_yaml.read_text())["clouds"]
    assert all(entry["auth"]["auth_url"].startswith("http://127.0.0.1:") for entry in entries.values())


@pytest.mark.alone  # restarts services: the other group's stacks would fail
def test_up_after_a_crash_restarts_what_died(cloud):
    # Placement dies as in a crash: its whole session, KILLed (processes `up` started, by PID file).
    session, started = recorded(cloud, "placement")
    for pid in members(session, started):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10  # a KILLed process is gone once the kernel has torn it down
    while running(cloud, "placement") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running(cloud, "placement") is None
    others = {name: running(cloud, name) for name in process_names() if name != "placement"}
    again = localcloud("up")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "placement: was not running (stale PID file cleared)" in again.stdout
    assert running(cloud, "placement") not in (None, session)
    assert {name: running(cloud, name) for name in others} == others


@pytest.mark.alone  # a regression would revoke the running services' tokens under the other group's stacks
def test_the_identity_step_of_a_restarted_service_revokes_no_token(cloud):
    """`up` runs the identity step again for a service it starts on a home made before (Octavia, Manila):
    users made where missing, no password set again. Keystone revokes a user's tokens when its password
    is set: Nova's scheduler then held a revoked token and found no host for the next servers (placement
    answered 401)."""
    token = sdk(cloud, "result = tenant.auth_token")
    again = subprocess.run(
        [str(cloud.bin("python")), str(ROOT / "harness/localcloud/operator.py"), "identity"],
        env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml), "LOCALCLOUD_PASSWORD": cloud.password()},
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    validated = 'result = admin.identity.get("/auth/tokens", headers={"X-Subject-Token": token}, raise_exc=False).status_code'
    assert sdk(cloud, validated, token=token) == 200


# What real clouds have and a live cluster uses (issue 35): each made, checked and removed as the tenant.
LOAD_BALANCER = """
subnet = next(tenant.network.subnets(network_id=tenant.network.find_network("lab-internal").id))
made = tenant.load_balancer.create_load_balancer(name="localcloud-probe-lb", vip_subnet_id=subnet.id)
try:
    lb = tenant.load_balancer.wait_for_load_balancer(made.id, status="ACTIVE", failures=["ERROR"], interval=1, wait=180)
    listener = tenant.load_balancer.create_listener(name="localcloud-probe", protocol="TCP", protocol_port=80, load_balancer_id=lb.id)
    tenant.load_balancer.wait_for_load_balancer(lb.id, status="ACTIVE", failures=["ERROR"], interval=1, wait=180)
    port = tenant.network.get_port(lb.vip_port_id)
    result = {"status": lb.provisioning_status, "vip": [port.fixed_ips[0]["ip_address"], port.network_id, port.project_id],
              "lb": [lb.vip_address, subnet.network_id, tenant.current_project_id], "owner": port.device_owner,
              "listeners": [l["id"] for l in tenant.load_balancer.get_load_balancer(lb.id).listeners] == [listener.id]}
finally:
    tenant.load_balancer.delete_load_balancer(made.id, cascade=True)
    tenant.load_balancer.wait_for_delete(made, interval=1, wait=120)
result["vip port after delete"] = tenant.network.find_port(made.vip_port_id) is not None
"""

TRUNK = """
network = tenant.network.find_network("lab-internal")
parent = tenant.network.create_port(name="localcloud-probe-parent", network_id=network.id)
child = tenant.network.create_port(name="localcloud-probe-subport", network_id=network.id)
trunk = server = None
try:
    trunk = tenant.network.create_trunk(name="localcloud-probe", port_id=parent.id,
        sub_ports=[{"port_id": child.id, "segmentation_type": "vlan", "segmentation_id": 101}])
    try:
        tenant.network.delete_port(parent)
        refused = None
    except openstack.exceptions.ConflictException:
        refused = 409
    made = tenant.compute.create_server(name="localcloud-probe-trunk", flavor_id=tenant.compute.find_flavor("m1.small").id,
        image_id=tenant.image.find_image("centos-stream-9").id, networks=[{"port": parent.id}])
    server = tenant.compute.wait_for_server(made, interval=1, wait=180)
    trunk = tenant.network.get_trunk(trunk.id)
    result = {"trunk": trunk.status, "subports": [(s["port_id"], s["segmentation_id"]) for s in trunk.sub_ports],
              "child": child.id, "parent delete": refused, "server": server.status,
              "trunk on the parent": tenant.network.get_port(parent.id).trunk_details["trunk_id"] == trunk.id}
finally:
    if server:
        tenant.compute.delete_server(server)
        tenant.compute.wait_for_delete(server, interval=1, wait=120)
    if trunk:
        tenant.network.delete_trunk(trunk)
    for port in (parent, child):
        tenant.network.delete_port(port)
"""

SNAPSHOT = """
volume = tenant.block_storage.wait_for_status(tenant.block_storage.create_volume(name="localcloud-probe", size=1), "available", interval=1, wait=120)
try:
    snapshot = tenant.block_storage.create_snapshot(volume_id=volume.id, name="localcloud-probe", metadata={"cinder.csi.openstack.org/cluster": "probe"})
    snapshot = tenant.block_storage.wait_for_status(snapshot, "available", failures=["error"], interval=1, wait=120)
    try:
        tenant.block_storage.delete_volume(volume)
        refused = None
    except openstack.exceptions.BadRequestException:
        refused = 400
    listed = [s.id for s in tenant.block_storage.snapshots(details=True) if (s.metadata or {}).get("cinder.csi.openstack.org/cluster") == "probe"]
    result = {"snapshot": snapshot.status, "listed by metadata": listed == [snapshot.id], "volume delete": refused}
    tenant.block_storage.delete_snapshot(snapshot)
    tenant.block_storage.wait_for_delete(snapshot, interval=1, wait=120)
finally:
    tenant.block_storage.delete_volume(volume)
    tenant.block_storage.wait_for_delete(volume, interval=1, wait=120)
"""


SHARE = """
share = tenant.shared_file_system.create_share(name="localcloud-probe", share_proto="NFS", size=1, metadata={"manila.csi.openstack.org/cluster": "probe"})
try:
    share = tenant.shared_file_system.wait_for_status(share, "available", failures=["error"], interval=1, wait=120)
    snapshot = tenant.shared_file_system.create_share_snapshot(share_id=share.id, name="localcloud-probe")
    snapshot = tenant.shared_file_system.wait_for_status(snapshot, "available", failures=["error"], interval=1, wait=120)
    listed = [s.id for s in tenant.shared_file_system.shares() if (s.metadata or {}).get("manila.csi.openstack.org/cluster") == "probe"]
    result = {"share": share.status, "snapshot": snapshot.status, "listed by metadata": listed == [share.id]}
    tenant.shared_file_system.delete_share_snapshot(snapshot)
    tenant.shared_file_system.wait_for_delete(snapshot, interval=1, wait=120)
finally:
    tenant.shared_file_system.delete_share(share)
    tenant.shared_file_system.wait_for_delete(share, interval=1, wait=120)
"""


def test_a_share_and_its_snapshot_are_made_with_no_storage_backend(cloud):
    # Manila's own DummyDriver: bookkeeping only, as Cinder's volumes here.
    assert sdk(cloud, SHARE) == {"share": "available", "snapshot": "available", "listed by metadata": True}


def test_a_load_balancer_goes_active_with_a_real_vip_port_that_goes_with_it(cloud):
    # Octavia's amphora provider with no-op amphorae: nothing boots, the VIP port is Neutron's.
    found = sdk(cloud, LOAD_BALANCER)
    assert found["status"] == "ACTIVE" and found["listeners"] is True, found
    assert found["vip"] == found["lb"] and found["owner"] == "Octavia", found
    assert found["vip port after delete"] is False


def test_a_server_boots_on_a_trunk_whose_parent_refuses_deletion(cloud):
    found = sdk(cloud, TRUNK)
    assert (found["trunk"], found["server"], found["parent delete"]) == ("ACTIVE", "ACTIVE", 409), found
    assert found["subports"] == [[found["child"], 101]] and found["trunk on the parent"] is True


def test_a_volume_snapshot_is_made_and_keeps_its_volume(cloud):
    found = sdk(cloud, SNAPSHOT)
    assert found == {"snapshot": "available", "listed by metadata": True, "volume delete": 400}


def test_the_catalog_names_load_balancers_and_shares_and_octavias_role_is_the_tenants(cloud):
    found = sdk(cloud, 'result = [tenant.endpoint_for("load-balancer"), tenant.endpoint_for("shared-file-system"), sorted(tenant.session.auth.get_access(tenant.session).role_names)]')
    assert found[:2] == [url("octavia"), url("manila", "/v2")] and "load-balancer_member" in found[2], found
