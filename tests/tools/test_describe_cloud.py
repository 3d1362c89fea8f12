"""`python -m tools.describe_cloud`: the cloud description written from a cloud (tests/localcloud/
test_describe_cloud.py reads the local OpenStack with it; here canned openstacksdk-shaped answers
and the errors a user meets before any cloud answers)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from types import SimpleNamespace as Of

import yaml
from openstack import exceptions

from tests.conftest import ROOT
from tools import mock_cloud
from tools.describe_cloud import STAND_IN_TOKEN, describe, render


def _forbidden(*args, **kwargs):
    raise exceptions.ForbiddenException("Policy doesn't allow os_compute_api:limits:other_project to be performed.")


class _Compute:
    def __init__(self, admin: bool):
        self.admin = admin

    def get_limits(self, **query):
        if query and not self.admin:
            _forbidden()
        absolute = Of(instances=40, instances_used=2, total_cores=200, total_cores_used=4, total_ram=524288, total_ram_used=8192,
                      server_groups=10, server_groups_used=0, server_group_members=10)
        return Of(absolute=absolute)

    def hypervisors(self):
        if not self.admin:
            _forbidden()
        return [Of(state="up"), Of(state="down"), Of(state="up")]

    def flavors(self):
        return [
            Of(name="worker", vcpus=2, ram=8192, disk=40, ephemeral=0, extra_specs={}),
            # An ephemeral disk beside the root (ocp:masters.etcdDisk's): a fourth number.
            Of(name="master", vcpus=4, ram=16384, disk=40, ephemeral=20, extra_specs={}),
            # An Ironic flavor: placeholder sizes, and the extra spec the installer reads.
            Of(name="bm", vcpus=1, ram=512, disk=0, ephemeral=0, extra_specs={"baremetal": "true", "resources:VCPU": "0"}),
        ]

    def availability_zones(self):
        return [Of(name="nova", state={"available": True}), Of(name="az9", state={"available": False}), Of(name="az1", state={"available": True})]


def _connection(admin: bool = False) -> Of:
    quota = {"limit": 500, "used": 6}
    network = Of(
        networks=lambda: [
            Of(id="n-3", name="public", is_router_external=True, is_port_security_enabled=True, mtu=1500, project_id="p-admin", subnet_ids=["s-3"]),
            Of(id="n-1", name="lab", is_router_external=False, is_port_security_enabled=True, mtu=1450, project_id="p-1", subnet_ids=["s-1"]),
            Of(id="n-2", name="", is_router_external=False, is_port_security_enabled=False, mtu=9000, project_id="p-1", subnet_ids=[]),
        ],
        subnets=lambda: [Of(id="s-3", name="public-v4", network_id="n-3", cidr="198.51.100.0/24", allocation_pools=[]), Of(id="s-1", name="", network_id="n-1", cidr="10.0.0.0/16", allocation_pools=[{"start": "10.0.200.0", "end": "10.0.200.99"}])],
        # s-1 has the project's router r-1 (its gateway on public) and another project's r-2, which Neutron does not list.
        routers=lambda: [Of(id="r-1", external_gateway_info={"network_id": "n-3"})],
        ports=lambda device_owner: [
            Of(device_id=router, device_owner=device_owner, fixed_ips=[{"subnet_id": "s-1", "ip_address": address}])
            for router, owner, address in (("r-1", "network:router_interface", "10.0.0.1"), ("r-2", "network:router_interface_distributed", "10.0.0.2"))
            if owner == device_owner
        ],
        ips=lambda project_id: [Of(floating_ip_address="198.51.100.8", port_id=None), Of(floating_ip_address="192.0.2.50", port_id="port-1")],
        extensions=lambda: [Of(alias="standard-attr-tag"), Of(alias="router")],
        get_quota=lambda project, details=False: Of(
            ports=quota, security_groups={"limit": 20, "used": 1}, security_group_rules={"limit": 400, "used": 4},
            floating_ips={"limit": 10, "used": 2}, networks={"limit": 100, "used": 1}, subnets={"limit": 100, "used": 1},
            routers={"limit": 10, "used": 1},
        ),
    )
    images = [
        Of(id="i-2", name="rhcos", status="active", created_at="2026-11-01T00:00:00Z", visibility="private", owner_id="p-1"),
        Of(id="i-3", name="rhcos", status="queued", created_at="2026-11-02T00:00:00Z", visibility="private", owner_id="p-1"),
        Of(id="i-4", name="rhcos", status="active", created_at="2026-09-01T00:00:00Z", visibility="public", owner_id="p-admin"),
        Of(id="i-1", name="centos", status="active", created_at="2026-10-01T00:00:00Z", visibility="public", owner_id="p-admin"),
    ]
    catalog = [
        {"type": "image", "endpoints": [{"interface": "internal", "region_id": "RegionOne", "url": "http://glance.internal"},
                                        {"interface": "public", "region_id": "RegionOne", "url": "https://glance.example"}]},
        {"type": "compute", "endpoints": [{"interface": "public", "region_id": "RegionTwo", "url": "https://nova.two"},
                                          {"interface": "public", "region_id": "RegionOne", "url": "https://nova.one"}]},
    ]
    access = Of(project_id="p-1", project_name="lab", role_names=["reader", "member"], service_catalog=Of(catalog=catalog))
    session = Of(auth=Of(get_access=lambda session: access))
    return Of(
        session=session,
        config=Of(get_region_name=lambda: "RegionOne"),
        compute=_Compute(admin),
        network=network,
        image=Of(images=lambda: images),
        block_storage=Of(
            get_quota_set=lambda project, usage: Of(volumes=40, gigabytes=4000, usage={"volumes": 3, "gigabytes": 60}),
            availability_zones=lambda: [Of(name="storage-1", state={"available": True}), Of(name="nova", state={"available": True})],
            types=lambda: [Of(name="ssd"), Of(name="__DEFAULT__")],
        ),
    )


def test_the_description_is_what_the_sdk_reads_sorted_and_without_secrets(tmp_path):
    described = describe(_connection())
    assert described["flavors"] == {"bm": [1, 512, 0], "master": [4, 16384, 40, 20], "worker": [2, 8192, 40]}
    assert list(described["flavors"]) == ["bm", "master", "worker"]
    assert described["flavorExtraSpecs"] == {"bm": {"baremetal": "true", "resources:VCPU": "0"}}
    # Several images of one name: each, newest first (the servers boot the newest active one), with what the
    # installer and the Machine API count too: one not active, one public of another project's.
    assert described["images"] == {
        "centos": True,
        "rhcos": [
            {"id": "i-3", "active": False, "created": "2026-11-02T00:00:00Z", "status": "queued"},
            {"id": "i-2", "active": True, "created": "2026-11-01T00:00:00Z"},
            {"id": "i-4", "active": True, "created": "2026-09-01T00:00:00Z", "visibility": "public", "project": "p-admin"},
        ],
    }
    # Every network and subnet, the owner only where it is another project.
    assert described["neutronNetworks"] == [
        {"id": "n-1", "name": "lab", "mtu": 1450, "subnets": ["s-1"]},
        {"id": "n-2", "name": "", "portSecurity": False, "mtu": 9000, "subnets": []},
        {"id": "n-3", "name": "public", "mtu": 1500, "project": "p-admin", "subnets": ["s-3"]},
    ]
    assert described["subnets"] == [
        {"id": "s-1", "name": "", "network": "n-1", "cidr": "10.0.0.0/16", "pools": [["10.0.200.0", "10.0.200.99"]], "routers": {"r-1": "n-3", "r-2": None}},
        {"id": "s-3", "name": "public-v4", "network": "n-3", "cidr": "198.51.100.0/24", "pools": [], "routers": {}},
    ]
    assert described["networks"] == {"lab": False, "public": True}
    assert described["floatingIps"] == {"192.0.2.50": "port-1", "198.51.100.8": ""}
    assert (described["computeZones"], described["volumeZones"], described["volumeTypes"]) == (["az1", "nova"], ["nova", "storage-1"], ["__DEFAULT__", "ssd"])
    assert described["catalog"] == {"compute": {"RegionOne": "https://nova.one", "RegionTwo": "https://nova.two"}, "image": "https://glance.example"}
    assert described["quotas"] == {
        "instances": [40, 2], "cores": [200, 4], "ram": [524288, 8192], "serverGroups": [10, 0], "serverGroupMembers": 10,
        "ports": [500, 6], "securityGroups": [20, 1], "securityGroupRules": [400, 4], "floatingIps": [10, 2],
        "networks": [100, 1], "subnets": [100, 1], "routers": [10, 1], "volumes": [40, 3], "gigabytes": [4000, 60],
    }
    assert described["roles"] == ["member", "reader"] and described["token"] == STAND_IN_TOKEN
    # A member: Nova refuses the limits asked by project ID (as the provider asks) and the hypervisors.
    assert described["computeLimitsForbidden"] is True and "computeHosts" not in described
    admin = describe(_connection(admin=True))
    assert "computeLimitsForbidden" not in admin and admin["computeHosts"] == 2
    # The file tools.plan --cloud reads, the same bytes every run.
    path = tmp_path / "cloud.yaml"
    path.write_text(render(described, "mycloud", str(path)))
    assert mock_cloud.read(path) == yaml.safe_load(path.read_text())
    assert render(describe(_connection()), "mycloud", str(path)) == path.read_text()
    assert f"python -m tools.plan --config-file Pulumi.<stack>.yaml --cloud {path}" in path.read_text()


def describe_cloud(*args: str, clouds: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OS_CLIENT_CONFIG_FILE": clouds}
    return subprocess.run([sys.executable, "-m", "tools.describe_cloud", *args], cwd=ROOT, capture_output=True, text=True, env=environment)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unknown_cloud_or_an_unreachable_one_is_one_line_and_exit_2(tmp_path):
    clouds = tmp_path / "clouds.yaml"
    auth = {"auth_url": f"http://127.0.0.1:{_closed_port()}/v3", "username": "u", "password": "p", "project_name": "x",
            "user_domain_name": "Default", "project_domain_name": "Default"}
    clouds.write_text(yaml.safe_dump({"clouds": {"mine": {"auth": auth, "region_name": "RegionOne"}}}))
    for args, says in (
        (["--os-cloud", "nosuch"], f"error: --os-cloud nosuch: no entry 'nosuch' in {clouds} (its entries: mine)"),
        (["--os-cloud", "mine"], f"error: cloud mine: cannot reach Keystone at {auth['auth_url']} (ConnectFailure"),
    ):
        result = describe_cloud(*args, "--out", str(tmp_path / "cloud.yaml"), clouds=str(clouds))
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(says) and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "p" not in result.stderr.split(": ", 1)[1].split() and not (tmp_path / "cloud.yaml").exists()
