"""The OpenStack resource graph of the real program under mocks."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
import subprocess
import sys
from collections import Counter
from ipaddress import ip_network
from urllib.parse import urlsplit

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.firewall import exposure_table
from cluster.installer import render_install_config, upi_manifests
from ignition import assembly
from tests.certs import OTHER_CA
from tests.conftest import (
    PULL_SECRET,
    ROOT,
    STACK_FILES,
    deploy,
    diff,
    inputs_by_name,
    preview,
    run,
    run_recording,
    stack_config,
    with_helper,
    with_section,
)
from tools import sample_installer, toolchain
from tools.mock_cloud import described
from tools.mock_run import ProgramRun, deployed_from, is_secret, run_program, unwrap

PORT = "openstack:networking/port:Port"
INSTANCE = "openstack:compute/instance:Instance"
VOLUME = "openstack:blockstorage/volume:Volume"
RULE = "openstack:networking/secGroupRule:SecGroupRule"
GROUP = "openstack:networking/secGroup:SecGroup"
COMMAND = "command:local:Command"
ASSOCIATE = "openstack:networking/portSecGroupAssociate:PortSecGroupAssociate"
WORLD = "0.0.0.0/0"
CIDR = "10.0.0.0/16"


def planned_name(program_run: ProgramRun, name: str) -> str:
    """A node's planned name (ocp4-master-0) for its server or port name, which in integrated
    mode is the UPI name <infraID>-master-0 (cluster.addresses.server_name)."""
    infra_id = program_run.outputs["infraId"]
    node = re.fullmatch(rf"{re.escape(infra_id)}-(bootstrap|master-\d+|worker-\d+)", name)
    return f"ocp4-{node.group(1)}" if node else name


def by_input_name(program_run: ProgramRun, type_: str) -> dict[str, dict]:
    return {planned_name(program_run, unwrap(r.inputs["name"])): unwrap(r.inputs) for r in program_run.of_type(type_)}


def rules(program_run: ProgramRun, group: str) -> set[tuple]:
    """(protocol, min, max, source) of one security group's rules, by the group's logical name."""
    return {
        (i["protocol"], i.get("portRangeMin"), i.get("portRangeMax"), i["remoteIpPrefix"])
        for r in program_run.of_type(RULE)
        if r.name.startswith(f"{group}-") and (i := unwrap(r.inputs))
    }


def test_the_bootstrap_config_is_a_private_glance_image_fetched_with_the_providers_token(dev_run):
    (image,) = dev_run.of_type("openstack:images/image:Image")
    inputs = unwrap(image.inputs)
    infra = dev_run.outputs["infraId"]
    assert (inputs["name"], inputs["containerFormat"], inputs["diskFormat"], inputs["visibility"]) == (f"{infra}-ignition", "bare", "raw", "private")
    assert inputs["tags"] == [f"openshiftClusterID={infra}"]
    # The file it uploads is written from the served config by a command before it, and goes with it.
    (written,) = [r for r in dev_run.of_type("command:local:Command") if r.name == "ocp4-bootstrap-config-file"]
    assert written.urn in image.dependencies and is_secret(written.inputs["stdin"])
    assert unwrap(written.inputs["environment"])["FILE"] == inputs["localFilePath"]
    bootstrap = dev_run.by_name("ocp4-bootstrap-node")
    assert image.urn in bootstrap.dependencies and is_secret(bootstrap.inputs["userData"])
    assert urlsplit(shim_url(dev_run)).path == f"/v2/images/{image.name}-{hashlib.sha256(f'{image.type}/{image.name}'.encode()).hexdigest()[:12]}/file"
    # No helper, no SSH upload.
    assert dev_run.of_type("command:remote:Command") == []
    assert not any("helper" in r.name for r in dev_run.resources)


def test_resource_counts_of_the_dev_stack(dev_helper_run):
    counts = Counter(r.type for r in dev_helper_run.resources)
    assert counts[INSTANCE] == 7  # bootstrap, helper, 3 masters, 2 workers
    assert counts[PORT] == 9  # 2 VIP ports + helper + bootstrap + 5 nodes
    assert counts["openstack:networking/floatingIp:FloatingIp"] == 4  # API, Ingress, helper, bootstrap
    assert counts["openstack:compute/serverGroup:ServerGroup"] == 2
    assert counts["openstack:networking/secGroup:SecGroup"] == 5  # master, worker, ingress, helper, bootstrap
    for type_ in ("network:Network", "subnet:Subnet", "router:Router", "routerInterface:RouterInterface"):
        assert counts[f"openstack:networking/{type_}"] == 1
    # the installer, the destroy cleanup and each worker's pointer (among others); the helper's upload
    local = {r.name for r in dev_helper_run.of_type("command:local:Command")}
    assert {"installer-run", "ocp4-cleanup-on-destroy", "ocp4-worker-pointers-worker-0", "ocp4-worker-pointers-worker-1"} <= local
    assert "ocp4-bootstrap-helper-ssh-upload" in local and counts["command:remote:Command"] == 0


def test_components_and_parents(dev_run):
    components = {r.name: r.type for r in dev_run.resources if r.type.startswith("ocp:")}
    assert components == {
        "ocp4": "ocp:openstack:Cluster",
        "installer": "ocp:installer:Installer",
        "ocp4-network": "ocp:openstack:Network",
        "ocp4-security": "ocp:openstack:SecurityGroups",
        "ocp4-vips": "ocp:openstack:VipPorts",
        "ocp4-cleanup": "ocp:openstack:Cleanup",
        "ocp4-bootstrap": "ocp:openstack:Bootstrap",
        "ocp4-bootstrap-config": "ocp:openstack:BootstrapImage",
        "ocp4-control-plane": "ocp:openstack:NodePool",
        "ocp4-workers": "ocp:openstack:NodePool",
        "ocp4-master-pointers": "ocp:openstack:MasterPointers",
        "ocp4-worker-pointers": "ocp:openstack:WorkerPointers",
    }
    urns = {r.urn: r for r in dev_run.resources}
    for resource in dev_run.resources:
        if resource.parent not in urns:
            continue  # children of the stack: the cluster, the installer and its provider
        parent = urns[resource.parent]
        # Every child is named after its component; the providers by what they provide.
        assert resource.name.startswith(parent.name) or resource.type.startswith("pulumi:providers:"), (resource.name, parent.name)


def test_openstack_names_follow_the_installer(dev_run):
    infra_id = dev_run.outputs["infraId"]
    assert unwrap(dev_run.of_type("openstack:networking/network:Network")[0].inputs["name"]) == f"{infra_id}-openshift"
    assert unwrap(dev_run.of_type("openstack:networking/subnet:Subnet")[0].inputs["name"]) == f"{infra_id}-nodes"
    ports = by_input_name(dev_run, PORT)
    assert {f"{infra_id}-api-port", f"{infra_id}-ingress-port"} <= set(ports)
    for resource in dev_run.resources:
        if "tags" in resource.inputs:
            assert f"openshiftClusterID={infra_id}" in unwrap(resource.inputs["tags"])


def test_subnet_and_router(dev_run):
    subnet = unwrap(dev_run.of_type("openstack:networking/subnet:Subnet")[0].inputs)
    assert subnet["cidr"] == CIDR and subnet["gatewayIp"] == "10.0.0.1"
    assert subnet["allocationPools"] == [{"start": "10.0.0.130", "end": "10.0.255.254"}]
    assert subnet["dnsNameservers"] == ["10.20.0.1"]
    router = unwrap(dev_run.of_type("openstack:networking/router:Router")[0].inputs)
    assert router["externalNetworkId"] == "network-external"


def test_every_floating_ip_waits_for_the_router_interface(dev_run):
    """Neutron refuses a floating IP for a port on a subnet not yet routed to the external network
    (ExternalGatewayForFloatingIPNotFound: the first real `pulumi up` met it)."""
    (interface,) = [r.urn for r in dev_run.resources if r.type == "openstack:networking/routerInterface:RouterInterface"]
    floating = [r for r in dev_run.resources if r.type == "openstack:networking/floatingIp:FloatingIp"]
    assert floating and all(interface in r.dependencies for r in floating), [(r.name, r.dependencies) for r in floating]


def test_vip_ports_hold_the_vips(dev_run):
    ports = {name.rsplit("-", 2)[-2]: port for name, port in by_input_name(dev_run, PORT).items() if name.endswith("-port")}
    assert ports["api"]["fixedIps"][0]["ipAddress"] == "10.0.0.5"
    assert ports["ingress"]["fixedIps"][0]["ipAddress"] == "10.0.0.7"


def test_allowed_address_pairs(dev_run):
    ports = by_input_name(dev_run, PORT)
    pairs = {name: sorted(p["ipAddress"] for p in port.get("allowedAddressPairs", [])) for name, port in ports.items()}
    for index in range(3):
        assert pairs[f"ocp4-master-{index}"] == ["10.0.0.5", "10.0.0.7"]
    for index in range(2):
        assert pairs[f"ocp4-worker-{index}"] == ["10.0.0.7"]
    assert pairs["ocp4-bootstrap"] == ["10.0.0.5"]
    assert ports["ocp4-master-1"]["fixedIps"][0]["ipAddress"] == "10.0.0.21"


def test_master_port_matrix(dev_run):
    master = rules(dev_run, "ocp4-security-master")
    world = {(p, lo, hi) for p, lo, hi, source in master if source == WORLD}
    assert world == {("icmp", None, None), ("tcp", 6443, 6443)}
    from_cidr = {(p, lo, hi) for p, lo, hi, source in master if source == CIDR}
    assert {
        ("tcp", 22623, 22623), ("tcp", 53, 53), ("udp", 53, 53), ("udp", 4789, 4789),
        ("udp", 6081, 6081), ("udp", 500, 500), ("udp", 4500, 4500), ("esp", None, None), ("tcp", 6641, 6642),
        ("tcp", 9000, 9999), ("udp", 9000, 9999), ("tcp", 10250, 10250), ("tcp", 10257, 10257),
        ("tcp", 10259, 10259), ("tcp", 2379, 2380), ("vrrp", None, None), ("tcp", 22, 22), ("tcp", 6443, 6443),
        ("tcp", 30000, 32767), ("udp", 30000, 32767),
    } == from_cidr
    assert {source for *_, source in master} == {WORLD, CIDR}
    # The MCS's plain-HTTP port only in standalone mode, where first boot fetches by VIP over it.
    standalone = rules(run(stack_config("standalone")), "ocp4-security-master")
    assert standalone - master == {("tcp", 22624, 22624, CIDR)}


def test_worker_port_matrix(dev_run):
    worker = rules(dev_run, "ocp4-security-worker")
    world = {(p, lo, hi) for p, lo, hi, source in worker if source == WORLD}
    assert world == {("icmp", None, None)}
    assert ("vrrp", None, None, CIDR) in worker
    assert {("tcp", 22, 22, CIDR), ("tcp", 30000, 32767, CIDR), ("udp", 30000, 32767, CIDR)} <= worker
    assert not any(lo == 6443 or lo == 2379 for _, lo, _, _ in worker)


def test_ssh_to_nodes_is_from_the_machine_network_whatever_ssh_allowed_cidr_says():
    # The widest source allowed (/8; wider is refused, tests/cluster/test_config.py).
    program_run = run(with_helper(with_section(stack_config("dev"), "openstack", sshAllowedCidr="1.0.0.0/8")))
    for group in ("ocp4-security-master", "ocp4-security-worker"):
        assert {source for p, lo, _, source in rules(program_run, group) if (p, lo) == ("tcp", 22)} == {CIDR}
    assert ("tcp", 22, 22, "1.0.0.0/8") in rules(program_run, "ocp4-bootstrap-helper-helper")


def test_ingress_port_matrix(dev_run):
    # A group of its own, carried by the router nodes' ports (and the Ingress VIP's).
    assert rules(dev_run, "ocp4-security-ingress") == {
        ("tcp", 80, 80, WORLD), ("tcp", 443, 443, WORLD), ("tcp", 80, 80, CIDR), ("tcp", 443, 443, CIDR), ("tcp", 1936, 1936, CIDR)
    }


def test_helper_serves_the_bootstrap_alone_and_admits_ssh_from_ssh_allowed_cidr(dev_helper_run):
    helper = rules(dev_helper_run, "ocp4-bootstrap-helper-helper")
    assert helper == {("tcp", 8080, 8080, "10.0.0.10/32"), ("tcp", 22, 22, "192.168.122.0/24")}


def test_servers(dev_helper_run):
    servers = by_input_name(dev_helper_run, INSTANCE)
    helper = f"{dev_helper_run.outputs['infraId']}-bootstrap-helper"  # unique in the project, like the nodes
    assert set(servers) == {
        "ocp4-bootstrap", helper, "ocp4-master-0", "ocp4-master-1", "ocp4-master-2",
        "ocp4-worker-0", "ocp4-worker-1",
    }
    assert servers["ocp4-master-0"]["flavorName"] == "master" and servers["ocp4-master-0"]["imageId"] == "image-rhcos"
    assert servers["ocp4-worker-1"]["flavorName"] == "worker"
    assert servers["ocp4-bootstrap"]["flavorName"] == "master"
    # By ID, as the preflight resolved the names (the provider refuses a name two images share).
    assert servers[helper]["imageId"] == "image-centos-stream-9" and "imageName" not in servers[helper]
    assert servers[helper]["userData"].startswith("#cloud-config\n")


def test_masters_are_created_one_after_the_other(dev_run):
    masters = [r for r in dev_run.of_type(INSTANCE) if "-control-plane-master-" in r.name]
    earlier_masters = [[m.urn for m in masters if m.urn in master.dependencies] for master in masters]
    assert earlier_masters == [[], [masters[0].urn], [masters[1].urn]]
    groups = {r.urn: unwrap(r.inputs) for r in dev_run.of_type("openstack:compute/serverGroup:ServerGroup")}
    assert sorted(g["policies"] for g in groups.values()) == ["soft-anti-affinity", "soft-anti-affinity"]
    for master in masters:
        assert unwrap(master.inputs["schedulerHints"])[0]["group"]


def test_bootstrap_boots_after_its_config_is_on_the_helper(dev_helper_run):
    upload = dev_helper_run.by_name("ocp4-bootstrap-helper-ssh-upload")
    bootstrap = next(r for r in dev_helper_run.of_type(INSTANCE) if r.name == "ocp4-bootstrap-node")
    assert upload.urn in bootstrap.dependencies
    environment = unwrap(upload.inputs["environment"])
    assert environment["HELPER_USER"] == "cloud-user" and environment["HELPER_HOST"].startswith("203.0.113.")
    assert is_secret(upload.inputs["stdin"])


def test_root_volumes_without_zones_are_made_by_nova_with_the_server():
    # Without zones Nova makes each root volume from the image, with the server.
    servers = by_input_name(run(with_section(stack_config("dev"), "masters", rootVolume={"size": 120, "type": "ssd"})), INSTANCE)
    for index in range(3):
        server = servers[f"ocp4-master-{index}"]
        assert "availabilityZone" not in server
        assert "imageName" not in server and "imageId" not in server
        assert server["blockDevices"] == [
            {"bootIndex": 0, "deleteOnTermination": True, "destinationType": "volume", "sourceType": "image",
             "uuid": "image-rhcos", "volumeSize": 120, "volumeType": "ssd"}
        ]


def test_root_volumes_in_cinder_zones_are_made_first_and_kept_for_good():
    config = with_section(
        stack_config("dev"), "workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1", "storage-2"]},
        availabilityZones=["az1", "az2"], count=3, maxCount=4,
    )
    program_run = run(config)
    infra_id = program_run.outputs["infraId"]
    volumes = {unwrap(r.inputs["name"]): r for r in program_run.of_type(VOLUME)}
    assert sorted(volumes) == [f"{infra_id}-worker-{index}-root" for index in range(3)]
    servers = {unwrap(r.inputs["name"]): r for r in program_run.of_type(INSTANCE)}
    for index, (compute, storage) in enumerate([("az1", "storage-1"), ("az2", "storage-2"), ("az1", "storage-1")]):
        volume, server = volumes[f"{infra_id}-worker-{index}-root"], servers[f"{infra_id}-worker-{index}"]
        assert {key: unwrap(volume.inputs[key]) for key in ("availabilityZone", "size", "volumeType", "imageId")} == {
            "availabilityZone": storage, "size": 120, "volumeType": "ssd", "imageId": "image-rhcos"
        }
        assert unwrap(server.inputs["availabilityZone"]) == compute
        # The server boots from that volume; Pulumi, not Nova, deletes it (after the server).
        assert unwrap(server.inputs["blockDevices"]) == [
            {"bootIndex": 0, "deleteOnTermination": False, "destinationType": "volume", "sourceType": "volume", "uuid": volume.id}
        ]
        assert volume.urn in server.dependencies
        # Nothing a later edit changes replaces, extends or retypes a volume a node boots from.
        assert set(volume.options["ignoreChanges"]) == {"availabilityZone", "imageId", "size", "volumeType"}
    # Without volume zones Nova makes each volume from the image, as before: no volume resources.
    masters = by_input_name(program_run, INSTANCE)["ocp4-master-0"]
    assert "blockDevices" not in masters and "imageId" in masters


@pytest.mark.parametrize(
    "choice,expected_type,expected_address",
    [
        ("create", "openstack:networking/floatingIp:FloatingIp", None),
        ("192.0.2.50", "openstack:networking/floatingIpAssociate:FloatingIpAssociate", "192.0.2.50"),
        ("none", None, None),
    ],
)
def test_api_floating_ip_choices(choice, expected_type, expected_address):
    program_run = run(with_section(stack_config("dev"), "openstack", apiFloatingIp=choice))
    api = [r for r in program_run.resources if r.name.startswith("ocp4-vips-api-fip")]
    assert [r.type for r in api] == ([expected_type] if expected_type else [])
    address = program_run.outputs["apiFloatingIp"]
    if choice == "none":
        assert address is None
        assert program_run.outputs["etcHosts"].startswith("10.0.0.5 api.ocp4.osd2019.local")
    else:
        assert address == (expected_address or address) and address.count(".") == 3
        assert program_run.outputs["etcHosts"].startswith(f"{address} api.ocp4.osd2019.local")


def test_existing_network_creates_no_network():
    config = with_section(stack_config("standalone"), "openstack", existingNetwork={"networkId": NET, "subnetId": SUBNET})
    program_run = run(config, stack="standalone")
    types = {r.type for r in program_run.resources}
    assert not types & {f"openstack:networking/{t}" for t in ("network:Network", "subnet:Subnet", "router:Router")}
    assert not [r for r in program_run.of_type(COMMAND) if r.name.endswith("-primary-tag")]  # nothing of the cluster looks for it
    port = by_input_name(program_run, PORT)["ocp4-master-0"]
    assert port["networkId"] == NET and port["fixedIps"][0]["subnetId"] == SUBNET


NET, SUBNET = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"


def test_an_integrated_cluster_on_a_given_network_tags_it_as_the_installer_does_and_makes_no_router():
    config = with_section(stack_config("dev"), "openstack", existingNetwork={"networkId": NET, "subnetId": SUBNET})
    program_run = run(config)
    types = {r.type for r in program_run.resources}
    assert not types & {f"openstack:networking/{t}" for t in ("network:Network", "subnet:Subnet", "router:Router", "routerInterface:RouterInterface")}
    (tag,) = [r for r in program_run.of_type(COMMAND) if r.name.endswith("-primary-tag")]
    environment = unwrap(tag.inputs["environment"])
    assert environment == {"OS_CLOUD": "openstack", "NETWORK": NET, "TAG": f"{program_run.outputs['infraId']}-primaryClusterNetwork"}
    assert "network_tag add" in unwrap(tag.inputs["create"]) and "network_tag remove" in unwrap(tag.inputs["delete"])
    ports = by_input_name(program_run, PORT)
    master = ports["ocp4-master-0"]
    assert master["networkId"] == NET and master["fixedIps"] == [{"subnetId": SUBNET, "ipAddress": "10.0.0.20"}]
    document = yaml.safe_load(render_install_config(load_config(config), plan_addresses(load_config(config)), PULL_SECRET))
    assert document["platform"]["openstack"]["controlPlanePort"] == {"network": {"id": NET}, "fixedIPs": [{"subnet": {"id": SUBNET}}]}


def test_a_given_network_by_name_is_looked_up_and_routed_only_when_asked():
    config = with_section(
        stack_config("dev"), "openstack", existingNetwork={"networkId": "lab-internal", "subnetId": "lab-internal", "router": True}
    )
    program_run = run(config)
    (router,) = program_run.of_type("openstack:networking/router:Router")
    (interface,) = program_run.of_type("openstack:networking/routerInterface:RouterInterface")
    port = by_input_name(program_run, PORT)["ocp4-master-0"]
    assert port["networkId"] != "lab-internal" and port["fixedIps"][0]["subnetId"] == unwrap(interface.inputs["subnetId"])
    assert unwrap(router.inputs["externalNetworkId"])
    document = yaml.safe_load(render_install_config(load_config(config), plan_addresses(load_config(config)), PULL_SECRET))
    assert document["platform"]["openstack"]["controlPlanePort"] == {"network": {"name": "lab-internal"}, "fixedIPs": [{"subnet": {"name": "lab-internal"}}]}


def test_outputs(dev_run):
    outputs = dev_run.outputs
    assert outputs["apiVip"] == "10.0.0.5" and outputs["ingressVip"] == "10.0.0.7"
    assert outputs["apiUrl"] == "https://api.ocp4.osd2019.local:6443"
    assert outputs["consoleUrl"] == "https://console-openshift-console.apps.ocp4.osd2019.local"
    # Integrated mode: nodes by the names the cloud provider looks their servers up by.
    assert outputs["nodes"][f"{outputs['infraId']}-master-2"] == ["10.0.0.22"]
    assert outputs["infraId"].startswith("ocp4-")
    hosts = outputs["etcHosts"].splitlines()
    assert hosts[0] == f"{outputs['apiFloatingIp']} api.ocp4.osd2019.local api-int.ocp4.osd2019.local"
    assert f"{outputs['ingressFloatingIp']} console-openshift-console.apps.ocp4.osd2019.local" in hosts
    assert outputs["kubeconfig"].startswith("apiVersion: v1") or "clusters:" in outputs["kubeconfig"]


def test_node_created_names_every_master_and_worker_not_the_bootstrap(dev_run):
    """What the approver ties a client CSR's time to: Nova's creation time of each server
    (the mocks have no clock, so only the names show here)."""
    outputs = dev_run.outputs
    assert set(outputs["nodeCreated"]) == set(outputs["nodes"]) - {f"{outputs['infraId']}-bootstrap"}
    assert len(outputs["nodeCreated"]) == 5


def test_secret_outputs(dev_run):
    assert dev_run.secret_outputs == {"kubeconfig", "kubeadminPassword"}


def test_every_input_carrying_a_secret_is_secret(dev_run):
    password = dev_run.outputs["kubeadminPassword"]
    kubeconfig_line = next(line for line in dev_run.outputs["kubeconfig"].splitlines() if "client-key-data" in line)
    needles = {"pull secret": json.loads(PULL_SECRET)["auths"]["registry.example.com"]["auth"],
               # as /root/.docker/config.json carries it in the bootstrap config
               "pull secret file": base64.b64encode(PULL_SECRET.encode()).decode(),
               "kubeadmin password": password, "kubeconfig": kubeconfig_line.split(":", 1)[1].strip()}
    checked = 0
    for resource in dev_run.resources:
        for key, value in resource.inputs.items():
            text = json.dumps(unwrap(value))
            for what, needle in needles.items():
                if needle in text:
                    checked += 1
                    assert is_secret(value), f"{resource.name}.{key} carries the {what} in the clear"
    assert checked >= 2  # the installer's environment and the helper's upload at least


def test_stack_files_keep_no_plaintext_secrets():

    for path in STACK_FILES:
        assert "ocp:pullSecret: {" not in path.read_text() and "auths" not in path.read_text()


def test_provider_is_explicit(dev_run):
    provider = next(r for r in dev_run.resources if r.type == "pulumi:providers:openstack")
    assert unwrap(provider.inputs)["cloud"] == "openstack"


# --------------------------------------------------------------------------- exposure


def beyond_the_machine_network(program_run: ProgramRun) -> set[tuple]:
    """(group, ports, source) of every rule whose source is not inside the machine network."""
    # A group's rules are named after it: <group's logical name>-<rule key>.
    groups = {r.name: unwrap(r.inputs["name"]).rsplit("-", 1)[-1] for r in program_run.of_type(GROUP)}
    found = set()
    for rule in program_run.of_type(RULE):
        inputs = unwrap(rule.inputs)
        source = ip_network(inputs["remoteIpPrefix"])
        if source.subnet_of(ip_network(CIDR)):
            continue
        [group] = [suffix for name, suffix in groups.items() if rule.name.startswith(f"{name}-")]
        low, high = (None if inputs.get(k) is None else int(inputs[k]) for k in ("portRangeMin", "portRangeMax"))
        ports = inputs["protocol"] + ("" if low is None else f" {low}" + ("" if high == low else f"-{high}"))
        found.add((group, ports, str(source)))
    return found


# The dev stack's whole exposure: nothing else is open beyond 10.0.0.0/16.
DEV_EXPOSURE = {
    ("master", "icmp", WORLD),
    ("master", "tcp 6443", WORLD),
    ("worker", "icmp", WORLD),
    ("ingress", "tcp 80", WORLD),
    ("ingress", "tcp 443", WORLD),
    ("bootstrap", "tcp 22", "192.168.122.0/24"),
}


def test_exposure_table_of_the_dev_stack(dev_run):
    assert beyond_the_machine_network(dev_run) == DEV_EXPOSURE
    # The table the plan summary shows is the same, and says why each rule must be open.
    config = load_config(stack_config("dev"))
    table = exposure_table(config, plan_addresses(config))
    assert {(row.group, row.rule, row.source) for row in table} == DEV_EXPOSURE
    why = {(row.group, row.rule): row.why for row in table}
    assert "Kubernetes API" in why["master", "tcp 6443"] and "apiAllowedCidrs" in why["master", "tcp 6443"]
    assert "routes" in why["ingress", "tcp 443"] and "ingressAllowedCidrs" in why["ingress", "tcp 443"]
    assert "path MTU" in why["master", "icmp"]
    assert "gather bootstrap" in why["bootstrap", "tcp 22"] and "sshAllowedCidr" in why["bootstrap", "tcp 22"]


def test_allowed_cidrs_restrict_api_ingress_and_open_node_ports():
    config = with_section(
        stack_config("dev"),
        "openstack",
        apiAllowedCidrs=["198.51.100.0/24"],
        ingressAllowedCidrs=["198.51.100.0/24", "192.0.2.0/28"],
        nodePortAllowedCidrs=["192.0.2.0/28"],
    )
    assert beyond_the_machine_network(run(config)) == {
        ("master", "icmp", WORLD),
        ("master", "tcp 6443", "198.51.100.0/24"),
        ("master", "tcp 30000-32767", "192.0.2.0/28"),
        ("master", "udp 30000-32767", "192.0.2.0/28"),
        ("worker", "icmp", WORLD),
        ("ingress", "tcp 80", "198.51.100.0/24"),
        ("ingress", "tcp 443", "198.51.100.0/24"),
        ("ingress", "tcp 80", "192.0.2.0/28"),
        ("ingress", "tcp 443", "192.0.2.0/28"),
        ("worker", "tcp 30000-32767", "192.0.2.0/28"),
        ("worker", "udp 30000-32767", "192.0.2.0/28"),
        ("bootstrap", "tcp 22", "192.168.122.0/24"),
    }


def test_an_empty_list_keeps_the_api_inside_the_machine_network():
    program_run = run(with_section(stack_config("dev"), "openstack", apiAllowedCidrs=[]))
    assert ("tcp", 6443, 6443, CIDR) in rules(program_run, "ocp4-security-master")
    assert ("master", "tcp 6443", WORLD) not in beyond_the_machine_network(program_run)


def test_adding_a_source_adds_one_rule_per_port_and_changes_nothing_else(dev_run):
    config = with_section(stack_config("dev"), "openstack", apiAllowedCidrs=["0.0.0.0/0", "198.51.100.0/24"])
    added, removed, changed = diff(inputs_by_name(dev_run), inputs_by_name(run(config)))
    assert added == {"ocp4-security-master-tcp-6443-198.51.100.0_24"}
    # The installer's command records the stack's settings (for the day-2 checks), and the bootstrap's
    # credential expires 24 h after that run; nothing else changes.
    assert not removed and all(name.endswith(("installer-run", "bootstrap-config-credential")) for name in changed)


def test_compact_cluster_exposes_the_same_rules():
    # Only which ports carry the ingress group differs (test_vip_ports_...).
    assert beyond_the_machine_network(run(with_section(stack_config("dev"), "workers", count=0))) == DEV_EXPOSURE - {
        ("worker", "icmp", WORLD)
    } | {("worker", "icmp", WORLD)}


def _port_of(logical_name: str) -> str:
    """ocp4-vips-api-port -> api, ocp4-bootstrap-node-port -> bootstrap, ocp4-workers-worker-3-port -> worker-3."""
    node = re.search(r"((master|worker)-\d+)-port$", logical_name)
    if node:
        return node.group(1)
    return {"vips-api": "api", "vips-ingress": "ingress", "bootstrap-node": "bootstrap", "bootstrap-helper": "helper"}[
        logical_name.removeprefix("ocp4-").removesuffix("-port")
    ]


def test_ports_on_additional_networks_carry_the_nodes_groups_tags_and_name():
    """As the installer's machines have them; a port Nova made for a network given by ID would be in `default` alone."""
    first, second = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b", "6c1d7e3f-9b54-4e2f-8a7b-3d8e9f0a1b2c"
    program_run = run(with_section(stack_config("dev"), "openstack", additionalNetworkIds=[first, second]))
    ports = {r.name: r for r in program_run.of_type(PORT)}
    servers = {r.name: r for r in program_run.of_type(INSTANCE)}
    assert len(servers) == 6
    # The bootstrap joins no extra network (issue 49, item 1): its machine config server answers on every address it has.
    bootstrap = servers.pop("ocp4-bootstrap-node")
    assert unwrap(bootstrap.inputs["networks"]) == [{"port": ports["ocp4-bootstrap-node-port"].id}]
    assert not {f"ocp4-bootstrap-node-port-{n}" for n in (1, 2)} & set(ports)
    for name, instance in servers.items():
        primary, *additional = (ports[f"{name}-port"], ports[f"{name}-port-1"], ports[f"{name}-port-2"])
        assert [unwrap(port.inputs["networkId"]) for port in additional] == [first, second]
        for port in additional:
            for key in ("name", "tags", "securityGroupIds"):
                assert unwrap(port.inputs[key]) == unwrap(primary.inputs[key]), (port.name, key)
            assert not port.inputs.get("fixedIps") and not port.inputs.get("allowedAddressPairs")
            # What the cluster adds stays (issue 35).
            assert set(port.options["ignoreChanges"]) == set(primary.options["ignoreChanges"]) == {"allowedAddressPairs", "securityGroupIds"}
        assert unwrap(instance.inputs["networks"]) == [{"port": port.id} for port in (primary, *additional)]


def test_extra_networks_are_made_as_described_per_pool():
    """Port security off: no groups at all (Neutron refuses them there), not even `default`, and the workers only
    unless the stack says unfilteredMasterPorts; a network for the workers only; listed groups; a vNIC type. Port N
    is on extra network N whatever the pool; the bootstrap joins none."""
    listed = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
    storage = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
    program_run = run(
        with_section(
            stack_config("dev"),
            "openstack",
            additionalNetworks=[
                {"network": "lab-internal", "portSecurity": False},
                {"network": storage, "pools": ["workers"], "securityGroups": [listed]},
                {"network": storage.replace("5b", "7d", 1), "pools": ["masters"], "vnicType": "direct"},
            ],
        )
    )
    ports = {r.name: r for r in program_run.of_type(PORT)}
    associations = {r.name for r in program_run.of_type(ASSOCIATE)}
    assert not associations  # no additional groups: nothing to associate
    for name, instance in {r.name: r for r in program_run.of_type(INSTANCE)}.items():
        role = re.search(r"-(master|worker|bootstrap)", name)[1]
        numbers = {"worker": (1, 2), "master": (3,), "bootstrap": ()}[role]
        extra = [ports[f"{name}-port-{number}"] for number in numbers]
        assert not {f"{name}-port-{number}" for number in (1, 2, 3)} - {f"{name}-port-{number}" for number in numbers} & set(ports)
        assert unwrap(instance.inputs["networks"]) == [{"port": port.id} for port in (ports[f"{name}-port"], *extra)]
        if role == "worker":
            l2 = unwrap(extra[0].inputs)
            assert l2["portSecurityEnabled"] is False and l2["noSecurityGroups"] is True and not l2.get("securityGroupIds")
            assert unwrap(extra[0].inputs["networkId"]) != "lab-internal"  # looked up by name
            second = unwrap(extra[1].inputs)
            assert second["networkId"] == storage and second["securityGroupIds"] == [listed] and "portSecurityEnabled" not in second
        elif role == "master":
            third = unwrap(extra[0].inputs)
            assert third["binding"] == {"vnicType": "direct"} and third["securityGroupIds"] == unwrap(ports[f"{name}-port"].inputs["securityGroupIds"])
    # Said in so many words, the masters get their unfiltered port too.
    said = run(with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "lab-internal", "portSecurity": False, "unfilteredMasterPorts": True}]))
    names = {r.name for r in said.of_type(PORT)}
    assert {"ocp4-control-plane-master-0-port-1", "ocp4-workers-worker-0-port-1"} <= names and "ocp4-bootstrap-node-port-1" not in names


def test_sr_iov_ports_are_bound_as_described():
    """Issue 50, finding 10: direct-physical and vdpa vNICs, and a binding profile (switchdev offload, a trusted VF)
    as the JSON object terraform-provider-openstack v3.4.0 takes in binding.profile (a string it validates as a JSON
    object). Its binding.vnic_type list lacks vdpa (resource_openstack_networking_port_v2.go, also at master): vdpa
    goes as the port's own binding:vnic_type in valueSpecs. The profile is never updated: Nova writes the VF's PCI
    address into it, and Neutron shows it to admins only (get_port:binding:profile) and lets only its service role
    change it (update_port:binding:profile)."""
    program_run = run(with_section(stack_config("dev"), "openstack", additionalNetworks=[
        {"network": "lab-internal", "pools": ["workers"], "portSecurity": False, "vnicType": "direct", "profile": {"capabilities": ["switchdev"], "trusted": True}},
        {"network": "passthrough", "pools": ["workers"], "portSecurity": False, "vnicType": "direct-physical"},
        {"network": "accelerated", "pools": ["workers"], "portSecurity": False, "vnicType": "vdpa"},
        {"network": "plain", "pools": ["workers"], "portSecurity": False},
    ]))
    ports = {r.name: r for r in program_run.of_type(PORT)}
    offload, passthrough, vdpa, plain = (ports[f"ocp4-workers-worker-0-port-{n}"] for n in (1, 2, 3, 4))
    assert unwrap(offload.inputs["binding"]) == {"vnicType": "direct", "profile": '{"capabilities":["switchdev"],"trusted":true}'}
    assert "binding.profile" in offload.options["ignoreChanges"]
    assert unwrap(passthrough.inputs["binding"]) == {"vnicType": "direct-physical"} and "binding.profile" not in passthrough.options["ignoreChanges"]
    assert "binding" not in unwrap(vdpa.inputs) and unwrap(vdpa.inputs["valueSpecs"]) == {"binding:vnic_type": "vdpa"}
    assert "binding" not in unwrap(plain.inputs) and "valueSpecs" not in unwrap(plain.inputs)


def test_pool_security_groups_go_to_that_pools_ports_beside_the_stacks():
    everyone, masters_only, workers_only = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f", "7c1d9e2f-3a4b-4c5d-8e6f-0a1b2c3d4e5f", "8d2e0f3a-4b5c-4d6e-9f7a-1b2c3d4e5f6a"
    config = with_section(stack_config("dev"), "openstack", additionalSecurityGroupIds=[everyone])
    config = with_section(with_section(config, "masters", additionalSecurityGroupIds=[masters_only]), "workers", additionalSecurityGroupIds=[workers_only])
    program_run = run(config)
    added = {r.name: unwrap(r.inputs["securityGroupIds"]) for r in program_run.of_type(ASSOCIATE)}
    assert len(added) == 5 and all(
        groups == ([everyone, masters_only] if "-master-" in name else [everyone, workers_only]) for name, groups in added.items()
    ), added
    bootstrap = by_input_name(program_run, PORT)["ocp4-bootstrap"]["securityGroupIds"]
    assert bootstrap[-2:] == [everyone, masters_only] or set(bootstrap) >= {everyone, masters_only}
    document = yaml.safe_load(render_install_config(load_config(config), plan_addresses(load_config(config)), PULL_SECRET))
    pools = {"masters": document["controlPlane"], "workers": document["compute"][0]}
    assert pools["masters"]["platform"]["openstack"]["additionalSecurityGroupIDs"] == [everyone, masters_only]
    assert pools["workers"]["platform"]["openstack"]["additionalSecurityGroupIDs"] == [everyone, workers_only]


def test_vip_ports_carry_the_groups_of_the_nodes_that_hold_them(dev_run):
    def groups(program_run: ProgramRun) -> dict[str, list[str]]:
        # By logical name, whatever the naming mode: ocp4-vips-api-port -> api, ...-master-0-port -> master-0.
        return {_port_of(r.name): unwrap(r.inputs)["securityGroupIds"] for r in program_run.of_type(PORT)}

    ids = {unwrap(r.inputs["name"]).rsplit("-", 1)[-1]: r.id for r in dev_run.of_type(GROUP)}
    ports = groups(dev_run)
    assert ports["api"] == ports["master-0"] == [ids["master"]]
    assert ports["bootstrap"] == [ids["master"], ids["bootstrap"]]  # and SSH for the gather, to it alone
    assert ports["ingress"] == [ids["ingress"]]
    assert ports["worker-0"] == ports["worker-1"] == [ids["worker"], ids["ingress"]]  # router slots
    beyond = groups(run(with_section(stack_config("dev"), "workers", count=4)))
    assert beyond["worker-3"] == [ids["worker"]]  # not a router slot: no 80/443
    compact = run(with_section(stack_config("dev"), "workers", count=0))
    compact_ids = {unwrap(r.inputs["name"]).rsplit("-", 1)[-1]: r.id for r in compact.of_type(GROUP)}
    assert groups(compact)["master-0"] == [compact_ids["master"], compact_ids["ingress"]]


# --------------------------------------------------------------------------- the Glance delivery path

TOKEN = "gAAAAA-mock-cloud-token"  # the mock cloud's (samples/cloud/dev.yaml)
IMAGE = "openstack:images/image:Image"


def test_the_image_is_uploaded_once_from_a_private_file_the_command_writes(dev_run, tmp_path):
    image = dev_run.by_name("ocp4-bootstrap-config-image")
    # Both paths are this machine's (the provider defaults the cache's to $HOME): never a new upload for them.
    assert sorted(image.options["ignoreChanges"]) == ["imageCachePath", "localFilePath"]
    written = dev_run.by_name("ocp4-bootstrap-config-file")
    assert sorted(written.options["ignoreChanges"]) == ["create", "delete", "environment", "stdin"]
    assert unwrap(written.inputs["environment"])["FILE"] == str(ROOT / "assets" / "dev" / "bootstrap-glance.ign")
    # Its create and delete, run here as pulumi-command runs them.
    inputs = unwrap(written.inputs)
    target = tmp_path / "assets" / "bootstrap-glance.ign"
    subprocess.run(["/bin/sh", "-c", inputs["create"]], input=inputs["stdin"], text=True, env={"FILE": str(target), "PATH": "/usr/bin:/bin"}, check=True)
    assert target.read_text() == inputs["stdin"] and target.stat().st_mode & 0o777 == 0o600
    assert [path.name for path in target.parent.iterdir()] == ["bootstrap-glance.ign"]  # no part file left
    subprocess.run(["/bin/sh", "-c", inputs["delete"]], env={"FILE": str(target)}, check=True)
    assert not target.exists()


def test_the_config_file_is_written_anew_never_through_a_link_left_beside_it(dev_run, tmp_path):
    """A name known beforehand (the file's, with .part) is never written through: a link left there stays untouched."""
    inputs = unwrap(dev_run.by_name("ocp4-bootstrap-config-file").inputs)
    target = tmp_path / "assets" / "bootstrap-glance.ign"
    target.parent.mkdir()
    (target.parent / "bootstrap-glance.ign.part").symlink_to(tmp_path / "stolen")
    subprocess.run(["/bin/sh", "-c", inputs["create"]], input=inputs["stdin"], text=True, env={"FILE": str(target), "PATH": "/usr/bin:/bin"}, check=True)
    assert not (tmp_path / "stolen").exists()
    assert not target.is_symlink() and target.read_text() == inputs["stdin"] and target.stat().st_mode & 0o777 == 0o600


def test_a_new_token_on_every_run_changes_nothing():
    """Keystone gives the provider a new token on every run: the running bootstrap keeps the
    user_data it booted with (first boot only), and nothing else holds the token."""
    state = deploy(stack_config("dev"))
    engine = deployed_from(state)
    again = run_program(stack_config("dev"), engine=engine, cloud=described(token="gAAAAA-the-next-runs-token"))
    changes = engine.all_changes()
    assert {change.action for change in changes} == {"same"}, [(c.name, c.action, c.fields) for c in changes if c.action != "same"]
    node = next(change for change in changes if change.name == "ocp4-bootstrap-node")
    assert node.ignored == ("userData",)
    kept = next(r for r in again.state() if r["name"] == "ocp4-bootstrap-node")["inputs"]["userData"]
    assert TOKEN in kept and "the-next-runs-token" not in kept


def test_a_new_bootstrap_gets_the_token_of_its_run():
    """The recovery when the bootstrap did not fetch its config in time (docs/troubleshooting.md): bootstrap.enabled
    false, then true; the new server, image and credential are made, with a token of that run."""
    installed = deploy(stack_config("dev"))
    torn_down = run_program(with_section(stack_config("dev"), "bootstrap", enabled=False), engine=deployed_from(installed)).state()
    assert not [r for r in torn_down if r["name"].startswith("ocp4-bootstrap")]
    engine = deployed_from(torn_down)
    again = run_program(stack_config("dev"), engine=engine, cloud=described(token="gAAAAA-a-fresh-token"))
    made = {change.name for change in engine.all_changes() if change.action == "create"}
    assert {"ocp4-bootstrap-node", "ocp4-bootstrap-config-image", "ocp4-bootstrap-config-file", "ocp4-bootstrap-config-credential"} <= made
    shim = json.loads(unwrap(again.by_name("ocp4-bootstrap-node").inputs["userData"]))
    # The mock cloud's token for the bootstrap's credential: `<token>-bootstrap`.
    assert shim["ignition"]["config"]["merge"][0]["httpHeaders"] == [{"name": "X-Auth-Token", "value": "gAAAAA-a-fresh-token-bootstrap"}]
    assert all(c.name.startswith("ocp4-bootstrap") for c in engine.all_changes() if c.action != "same")


def test_the_token_stays_out_of_what_the_plan_shows(tmp_path):
    first, second = tmp_path / "plan", tmp_path / "plan-next"
    planned = plan("--stack", "dev", "--out", str(first))
    assert planned.returncode == 0, planned.stderr
    again = plan("--stack", "dev", "--from", str(first), "--out", str(second))
    assert again.returncode == 0, again.stderr
    shown = [planned.stdout, planned.stderr, again.stdout, again.stderr]
    shown += [(directory / name).read_text() for directory in (first, second) for name in ("resources.json", "outputs.json")]
    shown.append((second / "changes.json").read_text())
    assert not [text for text in shown if TOKEN in text]
    # Only the private files: the server's user_data, as it receives it, and the state (secrets in the clear).
    holding = sorted(str(path.relative_to(first)) for path in first.rglob("*") if path.is_file() and TOKEN in path.read_text())
    infra_id = json.loads((first / "outputs.json").read_text())["infraId"]
    assert holding == [f"nodes/{infra_id}-bootstrap/user_data", "state.json"]
    assert first.stat().st_mode & 0o777 == 0o700 and (first / "state.json").stat().st_mode & 0o777 == 0o600


@pytest.fixture(scope="module")
def many_cas() -> list[str]:
    """64 distinct self-signed CAs: what a clouds.yaml cacert naming a whole system bundle gives."""
    blocks = []
    for number in range(64):
        made = subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", "/dev/null", "-subj", f"/CN=ocp-tests-ca-{number}", "-days", "2"],
            capture_output=True, text=True, check=True,
        )
        blocks.append(made.stdout)
    return blocks


def test_a_glance_shim_nova_would_refuse_stops_the_program_before_anything(tmp_path, monkeypatch, many_cas):
    cacert = tmp_path / "ca-bundle.pem"
    cacert.write_text("".join(many_cas))
    (tmp_path / "clouds.yaml").write_text(yaml.safe_dump({"clouds": {"openstack": {"cacert": str(cacert)}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))
    for config, stack in ((stack_config("dev"), "dev"), (stack_config("standalone"), "standalone")):
        recorded, error = run_recording(config, stack)
        assert error is not None and recorded.resources == [], stack
        message = str(error)
        assert re.search(
            r"ocp:bootstrap.configSource: glance, but the bootstrap's user_data \(the shim that fetches its config from Glance\) "
            r"could be \d+ bytes in base64, over Nova's limit of 65535: it carries every CA of the clouds.yaml cacert "
            r"\(\d+ bytes\) and room for a 8192-character Keystone token. Keep only the CAs that sign the cloud's endpoints "
            r"there, or write configSource: helper", message,
        ), message
    # The helper's shim carries none of them; half the bundle fits.
    assert run_recording(with_helper(stack_config("dev")))[1] is None
    cacert.write_text("".join(many_cas[:32]))
    shim = json.loads(unwrap(run(stack_config("dev")).by_name("ocp4-bootstrap-node").inputs["userData"]))
    assert len(shim["ignition"]["security"]["tls"]["certificateAuthorities"]) == 32


# --------------------------------------------------------------------------- the helper's delivery path


def shim_url(program_run: ProgramRun, cluster: str = "ocp4") -> str:
    shim = json.loads(unwrap(program_run.by_name(f"{cluster}-bootstrap-node").inputs["userData"]))
    [source] = shim["ignition"]["config"]["merge"]
    return source["source"]


def test_the_shim_and_the_upload_name_one_secret_path(dev_helper_run):
    url = urlsplit(shim_url(dev_helper_run))
    assert (url.hostname, url.port) == ("10.0.0.11", 8080)
    token, name = url.path.strip("/").split("/")
    assert len(token) == 32 and name == "bootstrap.ign"
    upload = dev_helper_run.by_name("ocp4-bootstrap-helper-ssh-upload")
    assert is_secret(upload.inputs["create"]) and url.path in unwrap(upload.inputs["create"])
    bootstrap = next(r for r in dev_helper_run.of_type(INSTANCE) if r.name == "ocp4-bootstrap-node")
    assert is_secret(bootstrap.inputs["userData"])
    # The helper's own user_data holds no secret: the path arrives with the upload.
    helper = next(r for r in dev_helper_run.of_type(INSTANCE) if r.name == "ocp4-bootstrap-helper-server")
    assert token not in unwrap(helper.inputs["userData"])
    assert "http.server " not in unwrap(helper.inputs["userData"])  # no `python3 -m http.server`: it lists directories


def test_the_path_differs_between_clusters(dev_helper_run):
    other = run(with_helper(stack_config("dev", clusterName="ocp5")))
    assert urlsplit(shim_url(other, "ocp5")).path != urlsplit(shim_url(dev_helper_run)).path


def test_integrated_names_and_tags_the_cluster_relies_on(dev_run):
    infra_id = dev_run.outputs["infraId"]
    servers = {unwrap(r.inputs["name"]) for r in dev_run.of_type(INSTANCE)}
    assert {f"{infra_id}-master-{i}" for i in range(3)} | {f"{infra_id}-worker-{i}" for i in range(2)} <= servers
    groups = {unwrap(r.inputs["name"]) for r in dev_run.of_type(GROUP)}
    assert {f"{infra_id}-master", f"{infra_id}-worker"} <= groups
    server_groups = {unwrap(r.inputs["name"]) for r in dev_run.of_type("openstack:compute/serverGroup:ServerGroup")}
    assert server_groups == {f"{infra_id}-master", f"{infra_id}-worker"}
    network = unwrap(dev_run.of_type("openstack:networking/network:Network")[0].inputs)
    subnet = unwrap(dev_run.of_type("openstack:networking/subnet:Subnet")[0].inputs)
    assert {f"openshiftClusterID={infra_id}", f"{infra_id}-primaryClusterNetwork"} <= set(network["tags"])
    assert f"openshiftClusterID={infra_id}" in subnet["tags"]


def test_integrated_mode_opens_no_plain_http_machine_config_server(dev_run, standalone_run):
    # The installer's pointer fetches over HTTPS (22623); 22624 serves only standalone first boots.
    assert not any(lo == 22624 for _, lo, _, _ in rules(dev_run, "ocp4-security-master"))
    assert ("tcp", 22624, 22624, CIDR) in rules(standalone_run, "ocp4-security-master")


def test_nodes_read_nova_metadata_from_a_config_drive(dev_run):
    # The kubelet's node name is Nova metadata's name: from the config drive first, so a
    # subnet without a metadata service does not hold a node at first boot for ever.
    servers = dev_run.of_type(INSTANCE)
    assert len(servers) == 6
    for server in servers:
        assert unwrap(server.inputs["configDrive"]) is True, server.name
        assert "configDrive" in server.options["ignoreChanges"], server.name


def test_servers_deployed_without_a_config_drive_are_not_replaced_for_one():

    config = stack_config("dev")
    state = deploy(config)
    # As a stack deployed before nodes got a config drive left its servers.
    for item in state:
        if item["type"] == INSTANCE:
            item["inputs"].pop("configDrive", None)
    result = preview(state, config)
    assert result.error is None
    servers = {name: change for name, change in result.changes.items() if change.type == INSTANCE}
    assert len(servers) == 6
    assert {change.action for change in servers.values()} == {"same"}
    assert all(change.ignored == ("configDrive",) for change in servers.values())
    assert not result.disruptive


# --------------------------------------------------------------------------- bootstrap diagnosis


def test_the_bootstrap_gather_runs_from_where_pulumi_runs(dev_run):
    bootstrap_port = dev_run.by_name("ocp4-bootstrap-node-port")
    fip = dev_run.by_name("ocp4-bootstrap-fip")
    assert unwrap(fip.inputs["portId"]) == bootstrap_port.id and unwrap(fip.inputs["pool"]) == "external"
    address = fip.outputs["address"]
    assert dev_run.outputs["bootstrapGather"] == (
        f"openshift-install gather bootstrap --dir assets/dev --bootstrap {address} "
        "--master 10.0.0.20 --master 10.0.0.21 --master 10.0.0.22"
    )
    # Every flag it uses is one the real installer's `gather bootstrap` has.
    installer = toolchain.binary("openshift-install")
    if installer is None:
        pytest.skip(toolchain.missing("openshift-install"))
    usage = subprocess.run([str(installer), "gather", "bootstrap", "--help"], capture_output=True, text=True, timeout=60).stdout
    flags = {word for word in shlex.split(dev_run.outputs["bootstrapGather"]) if word.startswith("--")}
    assert flags and all(re.search(rf"^\s+{flag} ", usage, re.M) for flag in flags | {"--key"}), usage


def test_a_bootstrap_reached_from_inside_gets_no_floating_ip_and_no_group_of_its_own(tmp_path):
    config = with_section(with_section(stack_config("dev"), "bootstrap", helper={"floatingIp": False}), "openstack", sshAllowedCidr=None)
    program_run = run(config)
    assert not [r for r in program_run.resources if r.name in ("ocp4-bootstrap-fip", "ocp4-bootstrap-bootstrap")]
    assert program_run.outputs["bootstrapGather"].split(" --bootstrap ")[1].startswith("10.0.0.10 ")
    (tmp_path / "id_ed25519").write_text("a key\n")
    key = with_section(stack_config("dev"), "bootstrap", helper={"sshPrivateKeyFile": str(tmp_path / "id_ed25519")})
    assert run(key).outputs["bootstrapGather"].endswith(f" --key {tmp_path / 'id_ed25519'}")


def test_the_bootstrap_floating_ip_ssh_and_gather_go_with_the_bootstrap():

    engine = deployed_from(deploy(stack_config("dev")))
    torn_down = run_program(with_section(stack_config("dev"), "bootstrap", enabled=False), engine=engine)
    deleted = {change.name for change in engine.all_changes() if change.action == "delete"}
    assert {"ocp4-bootstrap-fip", "ocp4-bootstrap-bootstrap", "ocp4-bootstrap-bootstrap-tcp-22-192.168.122.0_24"} <= deleted
    assert "bootstrapGather" not in torn_down.outputs


# --------------------------------------------------------------------------- new workers' pointer (MCS CA rotation, 4.19+)


STAND_IN_OC = """#!/bin/sh
# Stands in for `oc get secret` against the running cluster: checks the kubeconfig it is given,
# records the call, answers with the test's secret or its failure.
echo "$*" >> {log}
for a in "$@"; do case "$a" in --kubeconfig=*) kubeconfig=${{a#--kubeconfig=}};; esac; done
grep -q '^clusters:' "$kubeconfig" || {{ echo "stand-in oc: no kubeconfig" >&2; exit 1; }}
if [ -f {failure} ]; then cat {failure} >&2; exit 1; fi
cat {answer}
"""
UNREACHABLE = "Unable to connect to the server: dial tcp: lookup api.ocp4.osd2019.local on 127.0.0.53:53: no such host"


def rotated_pointer() -> dict:
    """What the 4.19 MCO writes into worker-user-data-managed once it rotated the MCS CA: the
    pointer at the API VIP, trusting its own machine-config-server-ca bundle."""

    ca = "data:text/plain;charset=utf-8;base64," + base64.b64encode(OTHER_CA.encode()).decode()
    return {
        "ignition": {
            "config": {"merge": [{"source": "https://10.0.0.5:22623/config/worker"}]},
            "security": {"tls": {"certificateAuthorities": [{"source": ca}]}},
            "version": "3.2.0",
        }
    }


@pytest.fixture
def cluster_api(tmp_path):
    """A stand-in `oc` (path, calls log, answer file, failure file) the test controls."""
    files = {name: tmp_path / name for name in ("oc", "calls", "answer", "failure")}
    files["answer"].write_text(base64.b64encode(json.dumps(rotated_pointer()).encode()).decode())
    files["oc"].write_text(STAND_IN_OC.format(log=files["calls"], failure=files["failure"], answer=files["answer"]))
    files["oc"].chmod(0o755)
    return files


def stack_file(tmp_path, step: str, config: dict[str, str]) -> str:
    """The dev stack's file as edited at one step (one stack: the name is in every URN)."""
    path = tmp_path / step / "Pulumi.dev.yaml"
    path.parent.mkdir()
    # The pull secret is set with --secret, encrypted there: the offline plan uses a sample (pulumi refuses it in clear).
    path.write_text(yaml.safe_dump({"config": {key: yaml.safe_load(value) for key, value in config.items() if key != "ocp:pullSecret"}}))
    return str(path)


def plan(*args: str) -> subprocess.CompletedProcess:

    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=ROOT, capture_output=True, text=True)


def installer_configs(tmp_path, release: str | None, monkeypatch) -> str:
    """The dev stack's configs as `openshift-install` of that release leaves them after the UPI
    edits (the fake installer, shaped like 4.19.0-ec.5 but for its channel), for installer.assetsDir."""

    if release:
        monkeypatch.setenv("SAMPLE_INSTALLER_RELEASE", release)
    settings = load_config(stack_config("dev"))
    text = render_install_config(settings, plan_addresses(settings), PULL_SECRET)
    directory = tmp_path / "assets"
    sample_installer.write_files(sample_installer.ignition_configs(text, upi_manifests(sample_installer.manifests(text))), directory)
    return str(directory)


def day2_scale_up(tmp_path, cluster_api, release: str | None, monkeypatch) -> tuple[subprocess.CompletedProcess, dict, str]:
    """Install the dev stack (2 workers) from configs of that release, remove the bootstrap, then
    add worker-2: with the offline plan, as a user would preview it."""
    assets = installer_configs(tmp_path, release, monkeypatch)
    installed = stack_config("dev", installer={"assetsDir": assets, "oc": str(cluster_api["oc"])})
    deployed = tmp_path / "plan-installed"
    first = plan("--config-file", stack_file(tmp_path, "installed", installed), "--out", str(deployed))
    assert first.returncode == 0, first.stderr
    torn_down = with_section(installed, "bootstrap", enabled=False)
    second = plan("--config-file", stack_file(tmp_path, "torn", torn_down), "--from", str(deployed), "--out", str(tmp_path / "plan-torn"))
    assert second.returncode == 0, second.stderr
    scaled = with_section(torn_down, "workers", count=3)
    result = plan("--config-file", stack_file(tmp_path, "scaled", scaled), "--from", str(tmp_path / "plan-torn"), "--out", str(tmp_path / "plan-scaled"))
    infra_id = json.loads((deployed / "outputs.json").read_text())["infraId"]
    return result, json.loads((deployed / "nodes" / f"{infra_id}-worker-0" / "user_data").read_text()), infra_id


@pytest.mark.parametrize("release", [None, "4.17.3"])
def test_a_worker_added_on_day_2_boots_from_the_pointer_the_cluster_serves(tmp_path, cluster_api, monkeypatch, release):
    """4.19 (the real installer's release), and a cluster installed at 4.17: once upgraded to 4.19 its MCO
    rotates the config server's CA as well, and the configs name only the release it was installed at."""
    result, installed_worker, infra_id = day2_scale_up(tmp_path, cluster_api, release, monkeypatch)
    assert result.returncode == 0, result.stderr
    new = json.loads((tmp_path / "plan-scaled/nodes" / f"{infra_id}-worker-2/user_data").read_text())
    # The cluster's pointer as the secret holds it, plus the hostname; not the installer's.
    assert new["ignition"]["security"] == rotated_pointer()["ignition"]["security"]
    assert new["ignition"]["config"] == rotated_pointer()["ignition"]["config"]
    assert new["ignition"]["security"] != installed_worker["ignition"]["security"]
    hostname = next(f for f in new["storage"]["files"] if f["path"] == "/etc/hostname")
    assert assembly.file_contents(hostname) == f"{infra_id}-worker-2\n".encode()
    # Read once, through the cluster's API, for the new worker alone: the running ones never ask.
    calls = cluster_api["calls"].read_text().splitlines()
    assert len(calls) == 1
    assert re.fullmatch(
        r"--kubeconfig=\S+ --request-timeout=30s get secret worker-user-data-managed -n openshift-machine-api -o jsonpath=\{\.data\.userData\}",
        calls[0],
    )
    changes = {c["name"]: c for c in json.loads((tmp_path / "plan-scaled/changes.json").read_text())}
    changed = {name for name, c in changes.items() if c["action"] != "same"}
    assert {"ocp4-workers-worker-2", "ocp4-worker-pointers-worker-2"} <= changed
    assert all(name.startswith("ocp4-workers-worker-2") or name == "ocp4-worker-pointers-worker-2" for name in changed), changed
    assert "nothing replaces, rebuilds, resizes or deletes a node or the network" in result.stdout
    # The pointer is a secret: never in the plan's resources, only in the node's own user_data.
    resources = (tmp_path / "plan-scaled/resources.json").read_text()
    assert rotated_pointer()["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"] not in resources


def test_a_4_19_scale_up_that_cannot_read_the_cluster_is_refused_with_what_to_do(tmp_path, cluster_api, monkeypatch):
    cluster_api["failure"].write_text(UNREACHABLE + "\n")
    result, _, infra_id = day2_scale_up(tmp_path, cluster_api, None, monkeypatch)
    assert result.returncode == 2 and not (tmp_path / "plan-scaled").exists()
    message = result.stderr
    assert f"ocp:workers.count: {infra_id}-worker-2 cannot be created" in message
    assert "secret openshift-machine-api/worker-user-data-managed" in message and UNREACHABLE in message
    assert "Make the API (https://api.ocp4.osd2019.local:6443) reachable" in message
    assert "client-key-data" not in message and "BEGIN" not in message
    # No server for it: the same edit under the mock engine registers none.

    installed = stack_config("dev", installer={"assetsDir": installer_configs(tmp_path / "mock", None, monkeypatch), "oc": str(cluster_api["oc"])})
    torn_down = with_section(installed, "bootstrap", enabled=False)
    state = run_program(torn_down, engine=deployed_from(deploy(installed))).state()
    refused = preview(state, with_section(torn_down, "workers", count=3))
    assert refused.error is not None and "worker-2 cannot be created" in refused.error
    assert "ocp4-workers-worker-2" not in {r.name for r in refused.registered}


def test_a_master_made_again_on_day_2_of_a_4_19_cluster_boots_from_the_pointer_the_cluster_serves(tmp_path, cluster_api, monkeypatch):
    """A master's server made again once the bootstrap is gone (tools.recover taints it with its
    pointer command; both are made anew): its pointer is master-user-data-managed's, whose CA the
    4.19 MCO rotated, not the installer's (root CA only, which then fails TLS on 22623)."""
    rotated = rotated_pointer()
    rotated["ignition"]["config"]["merge"][0]["source"] = "https://10.0.0.5:22623/config/master"
    cluster_api["answer"].write_text(base64.b64encode(json.dumps(rotated).encode()).decode())
    assets = installer_configs(tmp_path, None, monkeypatch)
    installed = stack_config("dev", installer={"assetsDir": assets, "oc": str(cluster_api["oc"])})
    first = plan("--config-file", stack_file(tmp_path, "installed", installed), "--out", str(tmp_path / "plan-installed"))
    assert first.returncode == 0, first.stderr
    infra_id = json.loads((tmp_path / "plan-installed/outputs.json").read_text())["infraId"]
    installed_master = json.loads((tmp_path / "plan-installed/nodes" / f"{infra_id}-master-1/user_data").read_text())
    assert not cluster_api["calls"].exists()  # with the bootstrap there: the installer's pointer, no API
    torn_down = with_section(installed, "bootstrap", enabled=False)
    second = plan("--config-file", stack_file(tmp_path, "torn", torn_down), "--from", str(tmp_path / "plan-installed"), "--out", str(tmp_path / "plan-torn"))
    assert second.returncode == 0, second.stderr
    # The server and its pointer command gone from the state, as a taint and a replacement leave them to be made.
    state_file = tmp_path / "plan-torn/state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps([r for r in state if r["name"] not in ("ocp4-control-plane-master-1", "ocp4-master-pointers-master-1")]))
    third = plan("--config-file", stack_file(tmp_path, "again", torn_down), "--from", str(tmp_path / "plan-torn"), "--out", str(tmp_path / "plan-again"))
    assert third.returncode == 0, third.stderr
    new = json.loads((tmp_path / "plan-again/nodes" / f"{infra_id}-master-1/user_data").read_text())
    assert new["ignition"]["security"] == rotated["ignition"]["security"] != installed_master["ignition"]["security"]
    assert new["ignition"]["config"] == rotated["ignition"]["config"]
    hostname = next(f for f in new["storage"]["files"] if f["path"] == "/etc/hostname")
    assert assembly.file_contents(hostname) == f"{infra_id}-master-1\n".encode()
    calls = cluster_api["calls"].read_text().splitlines()
    assert len(calls) == 1 and " get secret master-user-data-managed -n openshift-machine-api " in calls[0]
    changes = {c["name"]: c["action"] for c in json.loads((tmp_path / "plan-again/changes.json").read_text())}
    assert {name for name, action in changes.items() if action != "same"} == {"ocp4-control-plane-master-1", "ocp4-master-pointers-master-1"}


def test_a_master_made_again_that_cannot_read_the_cluster_is_refused_saying_why(tmp_path, cluster_api, monkeypatch):
    cluster_api["failure"].write_text(UNREACHABLE + "\n")
    installed = stack_config("dev", installer={"assetsDir": installer_configs(tmp_path, None, monkeypatch), "oc": str(cluster_api["oc"])})
    torn_down = with_section(installed, "bootstrap", enabled=False)
    state = [r for r in run_program(torn_down, engine=deployed_from(deploy(installed))).state() if r["name"] not in ("ocp4-control-plane-master-1", "ocp4-master-pointers-master-1")]
    refused = preview(state, torn_down)
    assert refused.error is not None and "ocp:masters: " in refused.error and "-master-1 cannot be created" in refused.error
    assert "secret openshift-machine-api/master-user-data-managed" in refused.error and UNREACHABLE in refused.error
    assert "ocp4-control-plane-master-1" not in {r.name for r in refused.registered}


def test_workers_fill_server_groups_of_server_group_size():
    grown = run(with_section(stack_config("dev"), "workers", count=12, serverGroupSize=10))
    by_id = {r.id: unwrap(r.inputs["name"]) for r in grown.of_type("openstack:compute/serverGroup:ServerGroup")}
    infra_id = min(by_id.values()).rsplit("-", 1)[0]
    assert sorted(by_id.values()) == [f"{infra_id}-master", f"{infra_id}-worker", f"{infra_id}-worker-1"]
    placed = {r.name: by_id[unwrap(r.inputs["schedulerHints"])[0]["group"]] for r in grown.of_type(INSTANCE) if "-workers-worker-" in r.name}
    assert {name for name, group in placed.items() if group.endswith("-worker-1")} == {"ocp4-workers-worker-10", "ocp4-workers-worker-11"}
    assert len(placed) == 12
