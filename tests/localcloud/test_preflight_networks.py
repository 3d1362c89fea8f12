"""The preflight's network, image and flavor checks against the real local Neutron, Glance and Nova,
through the real engine (`pulumi preview` of the dev and standalone stacks, which stops before any
resource): networks made here as the tenant (port security off, no subnet, MTU 1300, two of one name)
and as the admin (another project's shared one), images of one name (the tenant's, and a public one of
the admin's), the admin's flavors with and without the extra spec baremetal=true and one with an ephemeral
disk. Neutron's own answers ground the messages. Everything made here is deleted by its ID."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import structured
from tests.localcloud.openstack_stack import openstack_stack

MAKE = """
import time
made = {"networks": [], "admin_networks": [], "images": []}
def net(conn, key, **fields):
    network = conn.network.create_network(**fields)
    made[key].append(network.id)
    return network
nosec = net(tenant, "networks", name="pf-nosec", port_security_enabled=False)
tenant.network.create_subnet(network_id=nosec.id, name="pf-nosec-v4", ip_version=4, cidr="10.91.0.0/24")
net(tenant, "networks", name="pf-nosubnet")
small = net(tenant, "networks", name="pf-small", mtu=1300)
tenant.network.create_subnet(network_id=small.id, name="pf-small-v4", ip_version=4, cidr="10.0.0.0/16")
dups = [net(tenant, "networks", name="pf-dup") for _ in range(2)]
shared = net(admin, "admin_networks", name="pf-shared", shared=True)
shared_v4 = admin.network.create_subnet(network_id=shared.id, name="pf-shared-v4", ip_version=4, cidr="10.0.0.0/16")
shared_nosec = net(admin, "admin_networks", name="pf-shared-nosec", shared=True, port_security_enabled=False)
admin.network.create_subnet(network_id=shared_nosec.id, name="pf-shared-nosec-v4", ip_version=4, cidr="10.92.0.0/24")
# Two active images of one name a second apart (Glance's created_at counts seconds), then a newer queued one.
for data in (b"older", b"newer", None):
    fields = dict(name="pf-twin", disk_format="raw", container_format="bare", visibility="private", allow_duplicates=True)
    image = tenant.image.create_image(data=data, wait=True, **fields) if data else tenant.image.create_image(**fields)
    made["images"].append(image.id)
    time.sleep(1.1)
# Issue 50: one name, the tenant's active image and a public one an admin made (the installer and the Machine API
# count both); an Ironic-like flavor (placeholder sizes, baremetal=true) and one of the same sizes without the spec.
own = tenant.image.create_image(data=b"own", name="pf-public-twin", disk_format="raw", container_format="bare", visibility="private", allow_duplicates=True, wait=True)
made["images"].append(own.id)
public = admin.image.create_image(data=b"public", name="pf-public-twin", disk_format="raw", container_format="bare", visibility="public", allow_duplicates=True, wait=True)
made["admin_images"] = [public.id]
made["admin_project"] = admin.current_project_id
metal = admin.compute.create_flavor(name="pf-metal", vcpus=1, ram=512, disk=0)
admin.compute.create_flavor_extra_specs(metal, {"baremetal": "true"})
tiny = admin.compute.create_flavor(name="pf-tiny", vcpus=1, ram=512, disk=0)
made["flavors"] = [metal.id, tiny.id]
made["small_mtu"] = tenant.network.get_network(small.id).mtu
made["dup_ids"] = sorted(d.id for d in dups)
made["shared"], made["shared_v4"] = shared.id, shared_v4.id
made["project"] = tenant.current_project_id
result = made
"""

# What Neutron answers the ports the preflight refuses before they are asked for.
NEUTRON = """
from openstack import exceptions
group = tenant.network.find_security_group("default", project_id=tenant.current_project_id)
answers = {}
def attempt(key, conn, **fields):
    try:
        port = conn.network.create_port(**fields)
    except exceptions.HttpException as error:
        answers[key] = f"{error.status_code} {error.details or error}"
    else:
        answers[key] = "made"
        conn.network.delete_port(port)
attempt("groups, no port security", tenant, network_id=ids["nosec"], security_group_ids=[group.id])
attempt("groups, no subnet", tenant, network_id=ids["nosubnet"], security_group_ids=[group.id])
attempt("fixed address, another project's network", tenant, network_id=ids["shared"], fixed_ips=[{"subnet_id": ids["shared_v4"], "ip_address": "10.0.0.50"}])
attempt("address pairs, another project's network", tenant, network_id=ids["shared"], allowed_address_pairs=[{"ip_address": "10.0.0.5"}])
attempt("groups, another project's network", tenant, network_id=ids["shared"], security_group_ids=[group.id])
attempt("port security off, another project's network", tenant, network_id=ids["shared"], port_security_enabled=False)
attempt("port security off, another project's network without it", tenant, network_id=ids["shared_nosec"], port_security_enabled=False)
attempt("no field, another project's network without it", tenant, network_id=ids["shared_nosec"])
result = answers
"""

REMOVE = """
for image in made["images"]:
    tenant.image.delete_image(image, ignore_missing=True)
for image in made.get("admin_images", []):
    admin.image.delete_image(image, ignore_missing=True)
for flavor in made.get("flavors", []):
    admin.compute.delete_flavor(flavor, ignore_missing=True)
for network in made["networks"]:
    tenant.network.delete_network(network, ignore_missing=True)
for network in made["admin_networks"]:
    admin.network.delete_network(network, ignore_missing=True)
result = {
    "networks": [n.id for n in admin.network.networks() if n.id in made["networks"] + made["admin_networks"]],
    "images": [i.id for i in admin.image.images() if i.id in made["images"] + made.get("admin_images", [])],
    "flavors": [f.id for f in admin.compute.flavors() if f.id in made.get("flavors", [])],
}
"""


@pytest.fixture(scope="module")
def made(cloud):
    found = sdk(cloud, MAKE)
    try:
        yield found
    finally:
        assert sdk(cloud, REMOVE, made=found) == {"networks": [], "images": [], "flavors": []}


@pytest.fixture(scope="module")
def dev_stack(cloud, cloud_env, tmp_path_factory):
    yield from openstack_stack("dev", tmp_path_factory.mktemp("dev-networks"), cloud, cloud_env)


@pytest.fixture(scope="module")
def standalone_stack(cloud, cloud_env, tmp_path_factory):
    yield from openstack_stack("standalone", tmp_path_factory.mktemp("standalone-images"), cloud, cloud_env)


def _preview(stack, **sections):
    edited = dict(stack.base)
    for section, fields in sections.items():
        edited[f"ocp:{section}"] = json.dumps({**structured(stack.base[f"ocp:{section}"]), **fields})
    stack.write_config(edited)
    try:
        done = stack.pulumi("preview")
    finally:
        stack.write_config(stack.base)
    assert done.returncode != 0 and stack.state() == [], done.stdout[-3000:]
    return done.stdout + done.stderr


def test_neutron_refuses_what_the_preflight_refuses(cloud, made):
    ids = {
        "nosec": made["networks"][0], "nosubnet": made["networks"][1], "shared": made["admin_networks"][0],
        "shared_nosec": made["admin_networks"][1], "shared_v4": made["shared_v4"],
    }
    answers = sdk(cloud, NEUTRON, ids=ids)
    print(json.dumps(answers, indent=1))
    # PortSecurityAndIPRequiredForSecurityGroups for a network without port security. A port with groups on a
    # network without a subnet is made (no fixed IP asked for, none checked): the preflight warns of that one.
    assert answers["groups, no port security"].startswith("400"), answers
    assert "port security must be enabled and port must have an ip address" in answers["groups, no port security"].lower()
    assert answers["groups, no subnet"] == "made", answers
    # Neutron's default policy on another project's (shared) network: a member's port may carry groups, but
    # neither a fixed address, nor address pairs, nor port_security_enabled, whatever its value.
    assert answers["groups, another project's network"] == "made", answers
    for case in ("fixed address", "address pairs", "port security off"):
        assert answers[f"{case}, another project's network"].startswith("403"), answers
    assert answers["port security off, another project's network without it"].startswith("403"), answers
    assert answers["no field, another project's network without it"] == "made", answers


def test_the_real_preflight_refuses_each_network_and_an_image_name_several_share(dev_stack, made):
    assert made["small_mtu"] == 1300
    output = _preview(
        dev_stack,
        openstack={
            "existingNetwork": {"networkId": "pf-small", "subnetId": "pf-small-v4"},
            "additionalNetworks": [{"network": "pf-nosec"}, {"network": "pf-nosubnet"}, {"network": "pf-dup", "portSecurity": False}],
        },
        masters={"image": "pf-twin"},
    )
    lines = [" ".join(line.split()) for line in output.splitlines()]
    expected = [
        'ocp:openstack.additionalNetworks[0].network: network "pf-nosec" has port security off, and the entry has portSecurity '
        "true (the default), so its ports carry security groups: Neutron would refuse the node's security groups on its ports "
        "(PortSecurityAndIPRequiredForSecurityGroups): write portSecurity: false for it (its ports carry no groups, and go to the workers only)",
        # a warning, beside the refusals
        'ocp:openstack.additionalNetworks[1].network: network "pf-nosubnet" has no subnet, and the entry has portSecurity true '
        "(the default), so its ports carry security groups: Neutron makes such a port with no address, and the groups' rules, "
        "which admit traffic by address, drop whatever else the network carries: write portSecurity: false for it (its ports "
        "carry no groups, and go to the workers only), unless that is meant",
        f'ocp:openstack.additionalNetworks[2].network: 2 networks are named "pf-dup" in cloud "openstack" ({", ".join(made["dup_ids"])}): '
        "write the ID of the one meant",
        # issue 49, item 1: no subnet, and the masters in the default pools
        'ocp:openstack.additionalNetworks[1].network: network "pf-nosubnet" has no subnet, and its pools name the masters: nothing '
        "holds a port there to an address (RHCOS gives the NIC an IPv6 link-local one) while the node's groups admit the machine "
        'network by address, so anything on "pf-nosubnet" could reach the masters\' machine config server and etcd: write '
        "ocp:openstack.additionalNetworks[1].pools: [workers]; or, if the masters must be on it, say so: unfilteredMasterPorts: true",
        'ocp:openstack.existingNetwork.networkId: network "pf-small" has MTU 1300, and OVN-Kubernetes needs at least 1380 on '
        "the nodes' network: its Geneve overlay takes 100 bytes of it and pods need IPv6's minimum of 1280. Ask the network's "
        "owner to raise it (`openstack network set --mtu 1380 pf-small`) or name a network with a larger MTU",
    ]
    for message in expected:
        assert any(message in line for line in lines), (message, output[-4000:])
    # Integrated mode (issue 50, finding 4): the installer and the Machine API list the name as the real Glance does,
    # the queued upload too, which the provider's active-only lookup never showed: refused, every ID named.
    older, newer, queued = made["images"][:3]
    refusal = (
        f'ocp:masters.image: 3 images are named "pf-twin" in cloud "openstack" as Glance lists them to this project (every '
        f"status, public and shared ones too: {queued} (queued), {newer} (active), {older} (active)). In integrated mode the "
        "installer finds the cluster's image (clusterOSImage) by that name"
    )
    assert any(refusal in line for line in lines), output[-4000:]
    assert "active images are named" not in output


def test_the_real_preflight_refuses_another_projects_network_in_integrated_mode(dev_stack, made):
    output = " ".join(_preview(dev_stack, openstack={"existingNetwork": {"networkId": "pf-shared", "subnetId": "pf-shared-v4"}}).split())
    assert 'ocp:openstack.existingNetwork.networkId: network "pf-shared" belongs to project ' in output, output[-4000:]
    assert f"not to this stack's ({made['project']}): the nodes' ports on it take fixed addresses and address pairs, and in integrated mode" in output


PACK = ROOT / "policy" / "run"


def test_an_unfiltered_network_reaches_the_workers_only_and_is_listed(dev_stack, made):
    """Issue 49, item 1, through the real engine, the real preflight and the pack: a network without port
    security (pf-nosec, 10.91.0.0/24) goes to the workers alone, without groups; the masters and the bootstrap
    get no port there (before, all six nodes did); the pack lists each such port and passes; the same
    network said for the masters, the bootstrap still none. Node groups on a network inside the machine
    network (pf-small, 10.0.0.0/16), refused before anything."""
    config = dict(dev_stack.base)
    section = structured(config["ocp:openstack"])
    unfiltered = {**config, "ocp:openstack": json.dumps({**section, "additionalNetworks": [{"network": "pf-nosec", "portSecurity": False}]})}
    dev_stack.write_config(unfiltered)
    try:
        planned = dev_stack.pulumi("preview", "--json")
        judged = dev_stack.pulumi("preview", "--policy-pack", str(PACK))  # the pack's listing is in the text output alone
    finally:
        dev_stack.write_config(dev_stack.base)
    assert planned.returncode == 0 and judged.returncode == 0, (planned.stdout + judged.stdout + judged.stderr)[-4000:]
    ports = {
        step["urn"].rsplit("::", 1)[1]: step["newState"]["inputs"]
        for step in json.loads(planned.stdout)["steps"]
        if step["urn"].split("::")[2].endswith("openstack:networking/port:Port") and step.get("newState")
    }
    extra = {name: inputs for name, inputs in ports.items() if name.endswith("-port-1")}
    assert sorted(extra) == ["ocp4-workers-worker-0-port-1", "ocp4-workers-worker-1-port-1"], sorted(ports)
    nosec = made["networks"][0]
    for inputs in extra.values():
        # The network has port security off itself: its ports inherit it (not sent); no groups, not even `default`.
        assert inputs["networkId"] == nosec and inputs.get("noSecurityGroups") is True and not inputs.get("securityGroupIds"), inputs
        assert "portSecurityEnabled" not in inputs
    # The pack lists each (advisory: the preview passes), and nothing else.
    text = " ".join(judged.stdout.split())
    for name in extra:
        assert (
            f"{name} carries no security group (on a network with port security off, nothing filters it): every port of its node, "
            f"from anything on {nosec}."
        ) in text, judged.stdout[-4000:]
    assert "mandatory" not in text, judged.stdout[-4000:]
    said = {**config, "ocp:openstack": json.dumps({**section, "additionalNetworks": [{"network": "pf-nosec", "portSecurity": False, "unfilteredMasterPorts": True}]})}
    steps, output = dev_stack.steps(said)
    assert steps is not None, output[-4000:]
    assert {name for name in steps if name.endswith("-port-1")} == {
        *extra, "ocp4-control-plane-master-0-port-1", "ocp4-control-plane-master-1-port-1", "ocp4-control-plane-master-2-port-1"
    }
    dev_stack.write_config(dev_stack.base)
    refused = " ".join(_preview(dev_stack, openstack={"additionalNetworks": [{"network": "pf-small", "pools": ["workers"]}]}).split())
    assert (
        'ocp:openstack.additionalNetworks[0].network: network "pf-small" has subnet 10.0.0.0/16, which overlaps ocp:machineNetwork, '
        "and its ports carry the node's groups, which admit the machine network by address"
    ) in refused, refused[-4000:]


def test_images_glance_lists_under_one_name_and_bare_metal_flavors_as_the_installer_counts_them(dev_stack, standalone_stack, made):
    """Issue 50, findings 4 and 5, with the real Glance and Nova. Integrated: a name under which Glance lists the
    tenant's image and an admin's public one is refused before the installer runs (its validation counts both,
    and the Machine API refuses "too many images with the name"); the flavor with baremetal=true passes with its
    placeholder sizes, the same sizes without the spec do not. Standalone keeps booting the newest active image."""
    own, public = made["images"][3], made["admin_images"][0]
    output = _preview(dev_stack, masters={"image": "pf-public-twin"}, workers={"image": "pf-public-twin", "flavor": "pf-metal"})
    text = " ".join(output.split())
    assert (
        'ocp:masters.image, ocp:workers.image: 2 images are named "pf-public-twin" in cloud "openstack" as Glance lists them to '
        "this project (every status, public and shared ones too: "
    ) in text, output[-4000:]
    assert f"{own} (active)" in text and f"{public} (active, public, project {made['admin_project']}'s)" in text
    assert "pf-metal" not in text  # held to no minimum
    tiny = " ".join(_preview(dev_stack, workers={"flavor": "pf-tiny"}).split())
    assert 'ocp:workers.flavor: flavor "pf-tiny" has 1 vCPUs; a worker needs at least 2' in tiny, tiny[-4000:]
    # Standalone: platform none has no Machine API there; the newest active is booted, by ID, and said.
    older, newer = made["images"][:2]
    edited = dict(standalone_stack.base)
    edited["ocp:masters"] = json.dumps({**structured(standalone_stack.base["ocp:masters"]), "image": "pf-twin"})
    steps, output = standalone_stack.steps(edited)
    standalone_stack.write_config(standalone_stack.base)
    assert steps is not None, output[-4000:]
    assert f'ocp:masters.image: 2 active images are named "pf-twin" in cloud "openstack": the servers boot the newest, {newer} (not {older})' in " ".join(output.split())


# Issue 50, finding 10: three networks for SR-IOV ports, without port security as such networks usually are.
SRIOV_MAKE = """
made = {}
for name, cidr in (("pf-offload", "10.93.0.0/24"), ("pf-physical", "10.94.0.0/24"), ("pf-vdpa", "10.95.0.0/24")):
    network = tenant.network.create_network(name=name, port_security_enabled=False)
    tenant.network.create_subnet(network_id=network.id, name=f"{name}-v4", ip_version=4, cidr=cidr)
    made[name] = network.id
result = made
"""

# What the local cloud does with such ports: which Neutron makes (a binding profile, as the tenant and as an admin),
# and whether Nova boots a server on each (the fake driver has no PCI devices).
SRIOV_NEUTRON = """
import time
from openstack import exceptions
answers = {}
made_ports = []
def attempt(key, conn, **fields):
    try:
        port = conn.network.create_port(**fields)
    except exceptions.HttpException as error:
        answers[key] = f"{error.status_code} {error.details or error}"
        return None
    made_ports.append(port.id)
    answers[key] = f"made {port.binding_vnic_type}"
    return port
profile = {"capabilities": ["switchdev"], "trusted": True}
direct = attempt("direct, profile, tenant", tenant, network_id=ids["pf-offload"], binding_vnic_type="direct", binding_profile=profile)
attempt("direct, profile, admin", admin, network_id=ids["pf-offload"], project_id=tenant.current_project_id, binding_vnic_type="direct", binding_profile=profile)
physical = attempt("direct-physical, tenant", tenant, network_id=ids["pf-physical"], binding_vnic_type="direct-physical")
vdpa = attempt("vdpa, tenant", tenant, network_id=ids["pf-vdpa"], binding_vnic_type="vdpa")
flavor = tenant.compute.find_flavor("worker")
image = tenant.image.find_image("rhcos")
for key, port in (("server on direct-physical", physical), ("server on vdpa", vdpa)):
    if port is None:
        continue
    server = tenant.compute.create_server(name=f"pf-{key.split()[-1]}", flavor_id=flavor.id, image_id=image.id, networks=[{"port": port.id}])
    for _ in range(120):
        server = tenant.compute.get_server(server.id)
        if server.status in ("ACTIVE", "ERROR"):
            break
        time.sleep(1)
    answers[key] = server.status + (f": {server.fault.get('message')}" if server.status == "ERROR" and server.fault else "")
    tenant.compute.delete_server(server)
    tenant.compute.wait_for_delete(server, wait=120)
for port in made_ports:
    admin.network.delete_port(port, ignore_missing=True)
result = answers
"""

SRIOV_REMOVE = """
for network in made.values():
    tenant.network.delete_network(network, ignore_missing=True)
result = [n.id for n in tenant.network.networks() if n.id in made.values()]
"""


def test_sr_iov_ports_through_the_real_engine_and_what_the_local_cloud_does_with_them(cloud, dev_stack):
    """A real `pulumi preview` of the dev stack with SR-IOV networks: the provider's own Check takes every port as the
    program sends it (a binding profile as a JSON object, direct-physical in binding, vdpa as valueSpecs). Then what
    the local cloud does with such ports, asked directly: which Neutron makes, and whether Nova boots on them."""
    ids = sdk(cloud, SRIOV_MAKE)
    try:
        config = dict(dev_stack.base)
        section = structured(config["ocp:openstack"])
        networks = [
            {"network": "pf-offload", "portSecurity": False, "vnicType": "direct", "profile": {"capabilities": ["switchdev"], "trusted": True}},
            {"network": "pf-physical", "portSecurity": False, "vnicType": "direct-physical"},
            {"network": "pf-vdpa", "portSecurity": False, "vnicType": "vdpa"},
        ]
        dev_stack.write_config({**config, "ocp:openstack": json.dumps({**section, "additionalNetworks": networks})})
        try:
            done = dev_stack.pulumi("preview", "--json")
        finally:
            dev_stack.write_config(dev_stack.base)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        ports = {
            step["urn"].rsplit("::", 1)[1]: step["newState"]["inputs"]
            for step in json.loads(done.stdout)["steps"]
            if step["urn"].split("::")[2].endswith("openstack:networking/port:Port") and step.get("newState")
        }
        offload, physical, vdpa = (ports[f"ocp4-workers-worker-0-port-{n}"] for n in (1, 2, 3))
        assert offload["networkId"] == ids["pf-offload"]
        assert offload["binding"]["vnicType"] == "direct"
        assert json.loads(offload["binding"]["profile"]) == {"capabilities": ["switchdev"], "trusted": True}
        assert physical["binding"]["vnicType"] == "direct-physical"
        assert vdpa["valueSpecs"] == {"binding:vnic_type": "vdpa"} and vdpa.get("binding", {}).get("vnicType") in (None, "normal")
        assert not [name for name in ports if "master" in name and name[-7:-1] == "port-"]  # no port security: workers only
        answers = sdk(cloud, SRIOV_NEUTRON, ids=ids)
        print(json.dumps(answers, indent=1))
        # Neutron's default policy (29.0.0, new defaults): create_port:binding:profile is the service role's alone,
        # so neither a member nor an admin may set it; the cloud must grant it (Nova's service user sets it).
        for who in ("tenant", "admin"):
            assert answers[f"direct, profile, {who}"].startswith("403") and "rule:create_port:binding:profile" in answers[f"direct, profile, {who}"], answers
        assert answers["direct-physical, tenant"] == "made direct-physical", answers
        assert answers["vdpa, tenant"] == "made vdpa", answers
        # Nova asks the scheduler for a PCI device for such a port, and the fake driver reports none.
        for key in ("server on direct-physical", "server on vdpa"):
            assert answers[key].startswith("ERROR") and "Claim pci failed" in answers[key], answers
    finally:
        assert sdk(cloud, SRIOV_REMOVE, made=ids) == []


# Issue 50, item 10: a diskless flavor with an ephemeral disk, as openshift-docs' etcd-on-local-disk guide makes one
# (`openstack flavor create --ephemeral 10 ...`), made by the operator and deleted again by its ID.
ETCD_FLAVOR = """
made = admin.compute.create_flavor(name=name, vcpus=4, ram=16384, disk=0, ephemeral=10, is_public=True)
result = {"id": made.id, "ephemeral": admin.compute.get_flavor(made.id).ephemeral}
"""


@pytest.fixture(scope="module")
def etcd_flavor(cloud):
    name = "pf-master-etcd"
    sdk(cloud, "old = admin.compute.find_flavor(name)\nif old: admin.compute.delete_flavor(old)", name=name)
    made = sdk(cloud, ETCD_FLAVOR, name=name)
    try:
        yield name, made
    finally:
        sdk(cloud, "admin.compute.delete_flavor(flavor, ignore_missing=True)", flavor=made["id"])


def test_etcd_on_a_local_disk_through_the_real_preview(cloud, dev_stack, etcd_flavor):
    """masters.etcdDisk through the real engine and preflight: with the flavor's 10 GiB ephemeral disk (Nova's
    OS-FLV-EXT-DATA:ephemeral, read by the probe) each master boots from its volume with a blank local disk of
    10 GiB (the bootstrap and workers none); 12 GiB, or a flavor with none, is refused before anything. (The
    MachineConfig rides in the installer command's secret environment: tests/ignition/test_etcd_disk.py reads it.)"""
    name, made = etcd_flavor
    assert made["ephemeral"] == 10
    masters = structured(dev_stack.base["ocp:masters"])
    disk = {"flavor": name, "rootVolume": {"size": 30, "type": "ssd"}, "etcdDisk": {"size": 10}}
    config = {**dev_stack.base, "ocp:masters": json.dumps({**masters, **disk})}
    dev_stack.write_config(config)
    try:
        done = dev_stack.pulumi("preview", "--json")
    finally:
        dev_stack.write_config(dev_stack.base)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    preview = json.loads(done.stdout)
    servers = {
        step["urn"].rsplit("::", 1)[1]: step["newState"]["inputs"]
        for step in preview["steps"]
        if step["urn"].split("::")[2].endswith("openstack:compute/instance:Instance") and step.get("newState")
    }
    masters_planned = {key: inputs for key, inputs in servers.items() if "-control-plane-" in key}
    assert len(masters_planned) == 3, sorted(servers)
    for key, inputs in masters_planned.items():
        root, local = inputs["blockDevices"]
        assert (root["sourceType"], root["destinationType"], root["bootIndex"]) == ("image", "volume", 0), key
        assert (local["sourceType"], local["destinationType"], local["volumeSize"], local["bootIndex"]) == ("blank", "local", 10, -1), key
        assert local["deleteOnTermination"] is True and inputs["flavorName"] == name
    for key, inputs in servers.items():
        if key not in masters_planned:
            assert not [d for d in inputs.get("blockDevices") or () if d.get("destinationType") == "local"], key
    too_large = " ".join(_preview(dev_stack, masters={**disk, "etcdDisk": {"size": 12}}).split())
    assert f'ocp:masters.etcdDisk.size: 12 GiB, but flavor "{name}" (ocp:masters.flavor) has an ephemeral disk of 10 GiB' in too_large, too_large[-4000:]
    none = " ".join(_preview(dev_stack, masters={**disk, "flavor": masters["flavor"]}).split())
    assert f'ocp:masters.etcdDisk.size: 10 GiB, but flavor "{masters["flavor"]}" (ocp:masters.flavor) has no ephemeral disk' in none, none[-4000:]
    # tools.describe_cloud writes the ephemeral disk as the flavor's fourth number, which the offline plan's mock cloud answers.
    described = dev_stack.work / "described.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "tools.describe_cloud", "--os-cloud", "openstack", "--out", str(described)],
        cwd=ROOT, env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml)}, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    flavors = yaml.safe_load(described.read_text())["flavors"]
    assert flavors[name] == [4, 16384, 0, 10] and len(flavors[masters["flavor"]]) == 3
