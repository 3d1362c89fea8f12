"""Day 2: what every kind of stack edit does to a cluster that already runs.

Each case deploys a stack (the state a `pulumi up` leaves), edits it, and previews the next
`pulumi up` as the engine would run it (tools/preview.py, the providers' own replacement
rules): the same steps `python -m tools.plan --from` writes to changes.json. The day-2 table of
docs/day2.md states these effects; cluster/day2.py classifies every key.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cluster import libvirt_host
from cluster.config import ClusterConfig
from cluster.day2 import EFFECTS, effect_of
from cluster.installer import RECORD_FILE, bundle, unbundle
from tests.certs import TEST_CA
from tests.conftest import ROOT, Preview, deploy, preview, stack_config, with_section
from tools.mock_run import deployed_from, run_program

COMMAND_TYPES = {"command:local:Command", "pulumi:providers:openstack", "pulumi:providers:command", "pulumi:providers:libvirt"}
PEM = TEST_CA
# A network added by ID (the local cloud's previews put lab-internal's ID in its place: the preflight reads it).
ADDED_NETWORK = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
ADDED_GROUP = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
# A network of the local cloud's (samples/cloud/dev.yaml), its ports without port security, as on a provider VLAN.
L2_NETWORK = {"network": "lab-internal", "pools": ["workers"], "portSecurity": False}
# A network and subnet the stack is given (the mock cloud describes none: any named is there and fits).
GIVEN_NETWORK = lambda config: with_section(config, "openstack", existingNetwork={"networkId": "lab-given", "subnetId": "lab-given-v4"})  # noqa: E731
# The same network bound as an SR-IOV VF.
SRIOV_NETWORK = {**L2_NETWORK, "vnicType": "direct"}
OTHER_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEWDyWO1rE/fl49jrKS1Fa4yVR+WLJ3/X3Eak21nuHtR other@lab"


@dataclass(frozen=True)
class Edit:
    """One edit of a deployed stack and what the next `pulumi up` must do."""

    id: str
    change: Callable[[dict[str, str]], dict[str, str]]
    refused: str | None = None  # a fragment of the refusal; nothing may register
    warns: tuple[str, ...] = ()  # keys warned about
    # name prefix -> action, for resources that must change; every other resource stays `same`.
    expect: dict[str, str] = field(default_factory=dict)
    stack: str = "dev"
    base: Callable[[dict[str, str]], dict[str, str]] = lambda config: config
    hours_later: float = 0
    # A fragment of the refusal where the cloud's image endpoint is plain http, as the local cloud's is (the
    # mock cloud's is https): the real previews on the local cloud expect it instead of the offline result.
    refused_on_http_cloud: str | None = None


def key(name: str, value) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda config: {**config, f"ocp:{name}": json.dumps(value) if isinstance(value, (dict, list)) else str(value)}


def section(name: str, **changes) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda config: with_section(config, name, **changes)


def both(*edits: Callable[[dict[str, str]], dict[str, str]]) -> Callable[[dict[str, str]], dict[str, str]]:
    def apply(config: dict[str, str]) -> dict[str, str]:
        for edit in edits:
            config = edit(config)
        return config

    return apply


DEV_EDITS = [
    # install-time only: warned, nothing on a node changes
    Edit("nameservers", key("nameservers", ["10.20.0.2"]), warns=("nameservers",), expect={"ocp4-network-subnet": "update"}),
    Edit("sshKey", key("sshKey", OTHER_KEY), warns=("sshKey",)),
    Edit("sshKey comment only", key("sshKey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJQT/3l93UXWQTuEJIm564+Pzwn5EO0KwuwqWH+bl2+u new@comment"), warns=("sshKey",)),
    Edit("pullSecret", key("pullSecret", '{"auths":{"other.example.com":{"auth":"eDp5"}}}'), warns=("pullSecret",)),
    Edit("proxy", key("proxy", {"httpProxy": "http://proxy.lab:3128", "noProxy": [".lab"]}), warns=("proxy",)),
    Edit("additionalTrustBundle", key("additionalTrustBundle", PEM), warns=("additionalTrustBundle",)),
    Edit("masters.image", section("masters", image="rhcos-4.17"), warns=("masters.image",)),
    Edit("workers.image", section("workers", image="rhcos-4.17"), warns=("workers.image",)),
    Edit("masters.flavor", section("masters", flavor="master.xl"), warns=("masters.flavor",)),
    Edit("masters.rootVolume", section("masters", rootVolume={"size": 120, "type": "ssd"}), warns=("masters.rootVolume",)),
    Edit("masters.availabilityZones", section("masters", availabilityZones=["az1", "az2"]), warns=("masters.availabilityZones",)),
    Edit("workers.rootVolume", section("workers", rootVolume={"size": 120, "type": "ssd"}), warns=("workers.rootVolume",)),
    Edit("workers.availabilityZones", section("workers", availabilityZones=["az1"]), warns=("workers.availabilityZones",)),
    Edit("bootstrap.flavor", section("bootstrap", flavor="bootstrap.xl"), warns=("bootstrap.flavor",)),
    Edit("workers.maxCount", section("workers", maxCount=150), warns=("workers.maxCount",), expect={"ocp4-network-subnet": "update"}),
    Edit("bootstrap.image", section("bootstrap", image="rhcos-4.17"), warns=("bootstrap.image",)),
    Edit("capabilities", key("capabilities", {"baselineCapabilitySet": "vCurrent"}), warns=("capabilities",)),
    Edit("imageDigestSources", key("imageDigestSources", [{"source": "quay.io/openshift-release-dev", "mirrors": ["mirror.lab/ocp"]}]), warns=("imageDigestSources",)),
    Edit("openstack.caBundle", section("openstack", caBundle=PEM), warns=("openstack.caBundle",)),
    # Running servers keep their networks; each node's port on it waits for a server made again (a new node boots with it).
    Edit("openstack.additionalNetworkIds", section("openstack", additionalNetworkIds=[ADDED_NETWORK]), warns=("openstack.additionalNetworkIds",), expect={"ocp4-*-port-1": "create"}),
    Edit("openstack.additionalNetworkIds removed", section("openstack", additionalNetworkIds=[]), base=section("openstack", additionalNetworkIds=[ADDED_NETWORK]), refused=f"ocp:openstack.additionalNetworkIds: {ADDED_NETWORK} was there at install: every node's port on it would be deleted"),
    # Beside each port, never through it: an update of the port's own list would drop the lb-sg-* groups the cluster attached.
    Edit("openstack.additionalSecurityGroupIds", section("openstack", additionalSecurityGroupIds=[ADDED_GROUP]), expect={"ocp4-*-port-additional-groups": "create", "ocp4-bootstrap-node-port": "update"}),
    Edit("openstack.additionalSecurityGroupIds another", section("openstack", additionalSecurityGroupIds=["7c1d9e2f-3a4b-4c5d-8e6f-0a1b2c3d4e5f"]), base=section("openstack", additionalSecurityGroupIds=[ADDED_GROUP]), expect={"ocp4-*-port-additional-groups": "update", "ocp4-bootstrap-node-port": "update"}),
    Edit("openstack.additionalSecurityGroupIds removed", section("openstack", additionalSecurityGroupIds=[]), base=section("openstack", additionalSecurityGroupIds=[ADDED_GROUP]), expect={"ocp4-*-port-additional-groups": "delete", "ocp4-bootstrap-node-port": "update"}),
    # A network for workers only, without port security: each worker gets a port with no groups, which waits for its server made again.
    Edit("openstack.additionalNetworks", section("openstack", additionalNetworks=[L2_NETWORK]), warns=("openstack.additionalNetworks",), expect={"ocp4-workers-worker-*-port-1": "create"}),
    Edit("openstack.additionalNetworks pool added", section("openstack", additionalNetworks=[{**L2_NETWORK, "pools": ["workers", "masters"], "unfilteredMasterPorts": True}]), base=section("openstack", additionalNetworks=[L2_NETWORK]), warns=("openstack.additionalNetworks",), expect={"ocp4-control-plane-master-*-port-1": "create"}),
    Edit("openstack.additionalNetworks pool removed", section("openstack", additionalNetworks=[{**L2_NETWORK, "pools": ["masters"], "unfilteredMasterPorts": True}]), base=section("openstack", additionalNetworks=[L2_NETWORK]), refused="ocp:openstack.additionalNetworks[0].pools: workers had a port on lab-internal at install"),
    # Issue 49, item 1: masters on an unfiltered network since install. The new default (workers only) is no
    # silent delete: the run stops saying both ways; pools: [workers] in so many words takes their ports away.
    Edit("openstack.additionalNetworks unfiltered masters by default", section("openstack", additionalNetworks=[{"network": "lab-internal", "portSecurity": False}]), base=section("openstack", additionalNetworks=[{**L2_NETWORK, "pools": ["masters", "workers"], "unfilteredMasterPorts": True}]), refused="ocp:openstack.additionalNetworks[0].pools: unset, and a network without port security now goes to the workers only"),
    Edit("openstack.additionalNetworks unfiltered masters taken off", section("openstack", additionalNetworks=[L2_NETWORK]), base=section("openstack", additionalNetworks=[{**L2_NETWORK, "pools": ["masters", "workers"], "unfilteredMasterPorts": True}]), warns=("openstack.additionalNetworks",), expect={"ocp4-control-plane-master-*-port-1": "delete"}),
    Edit("openstack.additionalNetworks portSecurity", section("openstack", additionalNetworks=[{**L2_NETWORK, "portSecurity": True}]), base=section("openstack", additionalNetworks=[L2_NETWORK]), refused="ocp:openstack.additionalNetworks[0].portSecurity: was false at install"),
    # Issue 50, finding 10: the running servers' SR-IOV ports were bound with their profile (Nova keeps the VF's PCI
    # address in it; Neutron lets only its service role change it): refused either way; a new entry gets its ports.
    Edit("openstack.additionalNetworks.profile", section("openstack", additionalNetworks=[{**SRIOV_NETWORK, "profile": {"trusted": True}}]), base=section("openstack", additionalNetworks=[SRIOV_NETWORK]), refused="ocp:openstack.additionalNetworks[0].profile: was unset at install: the running servers' ports were made so"),
    Edit("openstack.additionalNetworks.profile changed", section("openstack", additionalNetworks=[{**SRIOV_NETWORK, "profile": {"trusted": True}}]), base=section("openstack", additionalNetworks=[{**SRIOV_NETWORK, "profile": {"capabilities": ["switchdev"]}}]), refused='ocp:openstack.additionalNetworks[0].profile: was {"capabilities": ["switchdev"], "trusted": false} at install'),
    Edit("openstack.additionalNetworks.profile new network", section("openstack", additionalNetworks=[SRIOV_NETWORK, {**SRIOV_NETWORK, "network": "lab-storage", "profile": {"capabilities": ["switchdev"]}}]), base=section("openstack", additionalNetworks=[SRIOV_NETWORK]), warns=("openstack.additionalNetworks",), expect={"ocp4-workers-worker-*-port-2": "create"}),
    Edit("openstack.additionalNetworks before an install's", section("openstack", additionalNetworks=[{"network": "lab-storage"}, L2_NETWORK]), base=section("openstack", additionalNetworks=[L2_NETWORK]), refused="ocp:openstack.additionalNetworks[0]: network lab-internal was extra network 1 at install and has moved"),
    # Beside the port's own list, as the stack-wide groups are: the masters' ports only.
    Edit("masters.additionalSecurityGroupIds", section("masters", additionalSecurityGroupIds=[ADDED_GROUP]), expect={"ocp4-control-plane-master-*-port-additional-groups": "create", "ocp4-bootstrap-node-port": "update"}),
    Edit("workers.additionalSecurityGroupIds", section("workers", additionalSecurityGroupIds=[ADDED_GROUP]), expect={"ocp4-workers-worker-*-port-additional-groups": "create"}),
    Edit("bootstrap.helper flavor", section("bootstrap", helper={"flavor": "m1.medium", "image": "centos-stream-9", "sshUser": "cloud-user"}), warns=("bootstrap.helper",)),
    Edit("bootstrap.configSource glance -> helper", section("bootstrap", configSource="helper"), refused='ocp:bootstrap.configSource: was "glance" at install, now "helper"'),
    Edit("bootstrap.configSource helper -> glance", section("bootstrap", configSource="glance"), refused='ocp:bootstrap.configSource: was "helper" at install, now "glance"', base=section("bootstrap", configSource="helper")),
    Edit("bootstrap.configSource with the teardown", section("bootstrap", enabled=False, configSource="helper"), expect={"ocp4-bootstrap*": "delete"}),
    # The running bootstrap keeps its user_data; its application credential goes (its tokens revoked).
    Edit("bootstrap.credential userToken", section("bootstrap", credential="userToken"), warns=("bootstrap.credential",), expect={"ocp4-bootstrap-config-credential": "delete"}),
    Edit(
        "bootstrap.allowHttpImageEndpoint",
        section("bootstrap", allowHttpImageEndpoint=False),
        refused_on_http_cloud="ocp:bootstrap.allowHttpImageEndpoint: the service catalog's public image endpoint http://",
    ),
    Edit(
        "bootstrap.allowHttpIdentityEndpoint",
        section("bootstrap", allowHttpIdentityEndpoint=False),
        refused_on_http_cloud='ocp:bootstrap.allowHttpIdentityEndpoint: the clouds.yaml entry "openstack" (',
    ),
    Edit("workers.flavor", section("workers", flavor="worker.xl"), warns=("workers.flavor",)),
    # day-2 operations: exactly what was asked
    Edit("masters.resize one master", both(section("masters", flavor="master.xl", resize=[1])), warns=("masters.flavor",), expect={"ocp4-control-plane-master-1": "resize"}),
    Edit("workers.resize", both(section("workers", flavor="worker.xl", resize=[0, 1])), warns=("workers.flavor",), expect={"ocp4-workers-worker-0": "resize", "ocp4-workers-worker-1": "resize"}),
    Edit("workers.count 2 -> 5", section("workers", count=5), expect={f"ocp4-worker{s}-worker-{i}{p}": "create" for i in (2, 3, 4) for s, p in (("s", ""), ("s", "-port"), ("s", "-drain"), ("-pointers", ""))}),
    # 2 workers of 3 router slots: 2 routers (ingress_placement); 1 worker leaves one Pending
    Edit("workers.count 2 -> 1", section("workers", count=1), warns=("workers.count",), expect={"ocp4-workers-worker-1": "delete", "ocp4-workers-worker-1-port": "delete", "ocp4-workers-worker-1-drain": "delete", "ocp4-worker-pointers-worker-1": "delete"}),
    Edit("workers.count 3 -> 2 of 2 routers", section("workers", count=2), base=section("workers", count=3), expect={"ocp4-worker*-worker-2": "delete", "ocp4-workers-worker-2-port": "delete", "ocp4-workers-worker-2-drain": "delete"}),
    Edit("bootstrap.enabled false", section("bootstrap", enabled=False), expect={"ocp4-bootstrap*": "delete"}),
    Edit("tags", key("tags", ["team=ocp"]), expect={"*": "update|same"}),
    # Only the protect flag moves: the engine takes it in a `same` step.
    Edit("protect false", key("protect", "false")),
    Edit("kvm protect false", key("protect", "false"), stack="kvm"),
    Edit("openstack.apiFloatingIp create -> none", section("openstack", apiFloatingIp="none"), expect={"ocp4-vips-api-fip": "delete"}),
    Edit("openstack.ingressFloatingIp -> an existing address", section("openstack", ingressFloatingIp="198.51.100.7"), expect={"ocp4-vips-ingress-fip-association": "create", "ocp4-vips-ingress-fip": "delete"}),
    Edit("openstack.sshAllowedCidr", section("openstack", sshAllowedCidr="192.168.122.0/25"), expect={"ocp4-bootstrap-bootstrap-tcp-22*": "create|delete"}),
    Edit("installer.binary", section("installer", binary="/opt/ocp/openshift-install")),
    Edit("openstack.skipPreflight", section("openstack", skipPreflight=True)),
    Edit("installer.dir", section("installer", dir="assets/elsewhere")),
    # The oc that drains a worker: each drain command takes it in place (its create, `true`, runs).
    Edit("installer.oc", section("installer", oc="/opt/ocp/oc"), expect={"ocp4-workers-worker-*-drain": "update"}),
    Edit("installer.assetsDir instead of a run", key("installer", {"assetsDir": "samples/installer/ocp4"})),
    Edit("openstack.apiAllowedCidrs", section("openstack", apiAllowedCidrs=["198.51.100.0/24"]), expect={"ocp4-security-master-tcp-6443-world": "delete", "ocp4-security-master-tcp-6443-198.51.100.0_24": "create"}),
    Edit("openstack.ingressAllowedCidrs", section("openstack", ingressAllowedCidrs=["198.51.100.0/24"]), expect={f"ocp4-security-*-tcp-{port}-{source}": action for port in (80, 443) for source, action in (("world", "delete"), ("198.51.100.0_24", "create"))}),
    Edit("openstack.nodePortAllowedCidrs", section("openstack", nodePortAllowedCidrs=["198.51.100.0/24"]), expect={"ocp4-security-*-30000-32767-198.51.100.0_24": "create"}),
    Edit("workers.rootVolume.availabilityZones other zones", section("workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-2"]}), warns=("workers.rootVolume.availabilityZones",), base=section("workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]})),
    Edit("workers.rootVolume size and type, with zones", section("workers", rootVolume={"size": 200, "type": "ssd", "availabilityZones": ["storage-1"]}), warns=("workers.rootVolume",), base=section("workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]})),
    Edit("workers.image, with root volume zones", section("workers", image="rhcos-4.17", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]}), warns=("workers.image",), base=section("workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]})),
    Edit("workers.count 2 -> 3 with root volume zones", section("workers", count=3, rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]}), base=section("workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]}), expect={"ocp4-workers-worker-2*": "create", "ocp4-worker-pointers-worker-2": "create"}),
    # The workers' server group exists from install, so the first worker joins it: not a second one.
    Edit("workers.count 0 -> 1 (compact + first worker)", section("workers", count=1), base=section("workers", count=0), expect={"ocp4-workers-worker-0*": "create", "ocp4-worker-pointers-worker-0": "create"}),
    # cannot change on a running cluster
    Edit("clusterName", key("clusterName", "ocp5"), refused="ocp:clusterName"),
    Edit("workers.count 2 -> 0, routers on workers", section("workers", count=0), refused="ocp:workers.count: 0, but the routers run on worker slots (decided at install, when workers.count was 2)"),
    Edit("masters.rootVolume.availabilityZones set", section("masters", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["nova"]}), refused='ocp:masters.rootVolume.availabilityZones: was unset at install, now ["nova"]: cannot be set or removed'),
    Edit("workers.rootVolume.availabilityZones removed", section("workers", rootVolume={"size": 120, "type": "ssd"}), refused="ocp:workers.rootVolume.availabilityZones: was", base=section("workers", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]})),
    Edit("baseDomain", key("baseDomain", "other.local"), refused="ocp:baseDomain"),
    Edit("machineNetwork", key("machineNetwork", "10.1.0.0/16"), refused="ocp:machineNetwork"),
    Edit("apiVip", key("apiVip", "10.0.0.6"), refused="ocp:apiVip"),
    Edit("ingressVip", key("ingressVip", "10.0.0.8"), refused="ocp:ingressVip"),
    Edit("masters.count", section("masters", count=5), refused="ocp:masters.count"),
    Edit("masters.serverGroupPolicy", section("masters", serverGroupPolicy="anti-affinity"), refused="ocp:masters.serverGroupPolicy"),
    Edit("workers.serverGroupPolicy", section("workers", serverGroupPolicy="affinity"), refused="ocp:workers.serverGroupPolicy"),
    # Install-time inputs: warned, nothing changes.
    Edit("ntpServers", key("ntpServers", ["10.20.0.1", "ntp.example.com"]), warns=("ntpServers",)),
    Edit("installer.extraManifests", lambda config: {**config, "ocp:installer": json.dumps({**json.loads(config["ocp:installer"]), "extraManifests": str(ROOT / "samples" / "manifests")})}, warns=("installer.extraManifests",)),
    Edit("installer.cloudProviderConfig", section("installer", cloudProviderConfig="[BlockStorage]\nignore-volume-az = yes\n"), warns=("installer.cloudProviderConfig",)),
    # Two workers stay in the first group; a third starts the second; one group each would move worker 1.
    Edit("workers.serverGroupSize 2", section("workers", serverGroupSize=2)),
    Edit(
        "workers.serverGroupSize 2, workers.count 2 -> 3",
        section("workers", serverGroupSize=2, count=3),
        expect={"ocp4-workers-server-group-1": "create", **{f"ocp4-worker{s}-worker-2{p}": "create" for s, p in (("s", ""), ("s", "-port"), ("s", "-drain"), ("-pointers", ""))}},
    ),
    Edit("workers.serverGroupSize 1", section("workers", serverGroupSize=1), refused="ocp:workers.serverGroupSize: the 2 running workers are in server groups of [2] members; with 1 some would change group"),
    # One group per zone is chosen at install: a running server cannot change group.
    Edit("masters.serverGroupPerZone", section("masters", serverGroupPerZone=True), refused="ocp:masters.serverGroupPerZone: was false at install, now true"),
    Edit("workers.serverGroupPerZone", section("workers", serverGroupPerZone=True), refused="ocp:workers.serverGroupPerZone: was false at install, now true"),
    Edit(
        "workers.serverGroupPerZone, availabilityZones changed",
        section("workers", availabilityZones=["az1"], serverGroupPerZone=True),
        base=section("workers", availabilityZones=["az1", "az2"], serverGroupPerZone=True),
        refused='ocp:workers.availabilityZones: was ["az1", "az2"] at install, now ["az1"]: with ocp:workers.serverGroupPerZone',
    ),
    # Worker 2 joins the group of its zone, which exists from install: no group is made or replaced.
    Edit(
        "workers.serverGroupPerZone, workers.count 2 -> 3",
        section("workers", count=3, availabilityZones=["az1", "az2"], serverGroupPerZone=True),
        base=section("workers", availabilityZones=["az1", "az2"], serverGroupPerZone=True),
        expect={"ocp4-workers-worker-2*": "create", "ocp4-worker-pointers-worker-2": "create"},
    ),
    # The volume type of each zone: running nodes keep theirs (the Nova-made volume is read at first boot only).
    Edit(
        "workers.rootVolume.types",
        section("workers", rootVolume={"size": 120, "types": ["ssd"]}),
        base=section("workers", rootVolume={"size": 120, "type": "ssd"}),
        warns=("workers.rootVolume.types", "workers.rootVolume"),
    ),
    Edit("masters.rootVolume.types", section("masters", rootVolume={"size": 120, "types": ["ssd"]}), warns=("masters.rootVolume",)),
    # Issue 50: etcd on the masters' local disk is made at install only (their MachineConfig, their block devices).
    Edit("masters.etcdDisk", section("masters", rootVolume={"size": 120, "type": "ssd"}, etcdDisk={"size": 10}), refused='ocp:masters.etcdDisk: was unset at install, now {"size": 10}'),
    Edit("openstack.mode", section("openstack", mode="standalone"), refused="ocp:openstack.mode"),
    Edit("clusterNetwork", key("clusterNetwork", {"cidr": "10.132.0.0/14", "hostPrefix": 23}), refused="ocp:clusterNetwork"),
    Edit("serviceNetwork", key("serviceNetwork", "172.31.0.0/16"), refused="ocp:serviceNetwork"),
    Edit("fips", key("fips", "true"), refused="ocp:fips"),
    Edit("platform", lambda config: {**{k: v for k, v in config.items() if k != "ocp:openstack" and not k.startswith("openstack:")}, "ocp:platform": "libvirt", "ocp:libvirt": json.dumps({"image": "/var/lib/libvirt/images/rhcos.qcow2"}), "ocp:masters": json.dumps({"count": 3}), "ocp:workers": json.dumps({"count": 2}), "ocp:bootstrap": json.dumps({"enabled": True})}, refused="ocp:platform"),
    Edit("openstack.externalNetwork", section("openstack", externalNetwork="public"), refused="ocp:openstack.externalNetwork"),
    Edit("openstack.cloud", section("openstack", cloud="other"), refused="ocp:openstack.cloud"),
    Edit("installer.generation", section("installer", generation=2), refused="ocp:installer.generation"),
    Edit("networking.routerNodes", section("networking", routerNodes=2), refused="ocp:networking.routerNodes"),
    Edit("networking.apiVrid in integrated mode", section("networking", apiVrid=42), refused="ocp:networking.apiVrid sets this program's own keepalived"),
    Edit("bootstrap.enabled true, configs 21 h old", lambda config: config, refused="ocp:bootstrap.enabled", hours_later=21),
    # Issue 50: the bootstrap's floating IP goes with the key; unset, it is off on a network given without a router. A
    # stack installed when unset meant on there (its record says true, as every record did) is told to say which.
    Edit("bootstrap.helper.floatingIp false", section("bootstrap", helper={"floatingIp": False}), expect={"ocp4-bootstrap-fip": "delete"}),
    Edit(
        "bootstrap.helper.floatingIp unset on a network given without a router",
        section("bootstrap", helper={}),
        base=both(GIVEN_NETWORK, section("bootstrap", helper={"floatingIp": True})),
        refused="ocp:bootstrap.helper.floatingIp: unset, which on a network given without a router (ocp:openstack.existingNetwork, router false) now means false",
    ),
    Edit("bootstrap.helper.floatingIp written true on a given network", lambda config: config, base=both(GIVEN_NETWORK, section("bootstrap", helper={"floatingIp": True}))),
    # Only how long `python -m ocp install` waits for the workers: nothing in the cloud.
    Edit("workers.readyTimeout", section("workers", readyTimeout=180)),
]

KVM_EDITS = [
    Edit("kvm nameservers", key("nameservers", ["192.168.126.2"]), warns=("nameservers",), stack="kvm"),
    Edit("kvm masters.vcpus", section("masters", vcpus=8), warns=("masters.vcpus",), stack="kvm"),
    Edit("kvm masters.vcpus + resize", section("masters", vcpus=8, resize=[2]), warns=("masters.vcpus",), stack="kvm", expect={"kvm4-control-plane-master-2-domain": "replace"}),
    Edit("kvm libvirt.image", section("libvirt", image="/var/lib/libvirt/images/rhcos-4.17.qcow2"), warns=("libvirt.image",), stack="kvm"),
    Edit("kvm workers.count 2 -> 4", section("workers", count=4), stack="kvm", expect={"kvm4-worker*-worker-2*": "create", "kvm4-worker*-worker-3*": "create"}),
    Edit("kvm workers.count 2 -> 0", section("workers", count=0), refused="ocp:workers.count: 0, but the routers run on worker slots", stack="kvm"),
    Edit("kvm bootstrap.enabled false", section("bootstrap", enabled=False), stack="kvm", expect={"kvm4-bootstrap*": "delete"}),
    Edit("kvm sshKey", key("sshKey", OTHER_KEY), warns=("sshKey",), stack="kvm"),
    Edit("kvm clusterName", key("clusterName", "kvm5"), refused="ocp:clusterName", stack="kvm"),
    Edit("kvm libvirt.pool", section("libvirt", pool="fast"), refused="ocp:libvirt.pool", stack="kvm"),
    Edit("kvm libvirt.uri", section("libvirt", uri="qemu+ssh://other/system"), refused="ocp:libvirt.uri", stack="kvm"),
    Edit("kvm libvirt.network", section("libvirt", network="default"), refused="ocp:libvirt.network", stack="kvm"),
    Edit("kvm libvirt.bridge", section("libvirt", bridge="br0"), refused="ocp:libvirt.bridge", stack="kvm"),
    Edit("kvm loadBalancer UserManaged", key("loadBalancer", "UserManaged"), refused='ocp:loadBalancer: was "OpenShiftManagedDefault" at install, now "UserManaged"', stack="kvm"),
    Edit("kvm libvirt.domainType", section("libvirt", domainType="qemu"), refused='ocp:libvirt.domainType: was "kvm" at install, now "qemu"', stack="kvm"),
    Edit("kvm libvirt.domainType qemu -> kvm", section("libvirt", domainType="kvm"), refused='ocp:libvirt.domainType: was "qemu" at install, now "kvm"', stack="kvm", base=section("libvirt", domainType="qemu")),
    Edit("kvm masters.memoryMib", section("masters", memoryMib=32768), warns=("masters.memoryMib",), stack="kvm"),
    Edit("kvm masters.diskGib", section("masters", diskGib=200), warns=("masters.diskGib",), stack="kvm"),
    Edit("kvm workers.vcpus", section("workers", vcpus=8), warns=("workers.vcpus",), stack="kvm"),
    Edit("kvm workers.memoryMib", section("workers", memoryMib=16384, resize=[0]), warns=("workers.memoryMib",), stack="kvm", expect={"kvm4-workers-worker-0-domain": "replace"}),
    Edit("kvm workers.diskGib", section("workers", diskGib=200), warns=("workers.diskGib",), stack="kvm"),
]

# The standalone stack (platform none, this program's own keepalived, haproxy and CoreDNS).
STANDALONE_EDITS = [
    Edit("standalone networking.images", section("networking", images={"coredns": "registry.lab/coredns@sha256:" + "a" * 64}), warns=("networking",), stack="standalone"),
    Edit("standalone networking.haproxyPort", section("networking", haproxyPort=9446), warns=("networking",), stack="standalone"),
    Edit("standalone networking", section("networking", images={"haproxy-router": "registry.lab/haproxy@sha256:" + "b" * 64}), warns=("networking",), stack="standalone"),
    Edit("standalone openstack.existingNetwork", section("openstack", existingNetwork={"networkId": "net-1", "subnetId": "subnet-1"}), refused="ocp:openstack.existingNetwork", stack="standalone"),
    Edit("standalone networking.ingressVrid", section("networking", ingressVrid=43), refused="ocp:networking.ingressVrid", stack="standalone"),
    Edit("standalone networking.apiVrid", section("networking", apiVrid=42), refused="ocp:networking.apiVrid", stack="standalone"),
    Edit("standalone networking.advertInt", section("networking", advertInt=2), refused="ocp:networking.advertInt", stack="standalone"),
    Edit("standalone nameservers", key("nameservers", ["10.20.0.2"]), warns=("nameservers",), stack="standalone", expect={"ocp4-network-subnet": "update"}),
    Edit("standalone masters.flavor", section("masters", flavor="master.xl"), warns=("masters.flavor",), stack="standalone"),
    Edit("standalone workers.count 2 -> 3", section("workers", count=3), stack="standalone", expect={"ocp4-worker*-worker-2*": "create"}),
    Edit("standalone workers.count 2 -> 1", section("workers", count=1), warns=("workers.count",), stack="standalone", expect={"ocp4-worker*-worker-1*": "delete"}),
    Edit("standalone workers.count 2 -> 0", section("workers", count=0), refused="ocp:workers.count: 0, but the routers run on worker slots", stack="standalone"),
    Edit("standalone bootstrap.enabled false", section("bootstrap", enabled=False), stack="standalone", expect={"ocp4-bootstrap*": "delete"}),
    Edit("standalone bootstrap.configSource", section("bootstrap", configSource="helper"), refused="ocp:bootstrap.configSource", stack="standalone"),
    Edit("standalone openstack.mode", section("openstack", mode="integrated"), refused="ocp:openstack.mode", stack="standalone"),
    Edit("standalone networking.routerNodes", section("networking", routerNodes=2), refused="ocp:networking.routerNodes", stack="standalone"),
    Edit("standalone clusterName", key("clusterName", "ocp5"), refused="ocp:clusterName", stack="standalone"),
]

EDITS = DEV_EDITS + KVM_EDITS + STANDALONE_EDITS


@pytest.fixture(scope="module", autouse=True)
def usable_kvm():
    """The kvm edits must not depend on this machine's KVM: a device that opens read-write stands in for /dev/kvm."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(libvirt_host, "KVM_DEVICE", Path(os.devnull))
        yield
_deployed: dict[tuple[str, str], list] = {}


def deployed(edit: Edit) -> tuple[dict[str, str], list]:
    base = edit.base(stack_config(edit.stack))
    cache_key = (edit.stack, json.dumps(base, sort_keys=True))
    if cache_key not in _deployed:
        _deployed[cache_key] = deploy(base, edit.stack)
    return base, _deployed[cache_key]


def _matches(pattern: str, name: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern)


def expected_action(edit: Edit, name: str) -> str | None:
    matches = [pattern for pattern in edit.expect if _matches(pattern, name)]
    return edit.expect[max(matches, key=len)] if matches else None


@pytest.mark.parametrize("edit", EDITS, ids=[edit.id for edit in EDITS])
def test_edit_of_a_running_cluster(edit: Edit):
    base, state = deployed(edit)
    result: Preview = preview(state, edit.change(base), edit.stack, edit.hours_later)
    if edit.refused:
        assert result.error is not None and edit.refused in result.error, result.error
        # Refused before anything changes: only providers and the unchanged installer command registered.
        assert {r.type for r in result.registered if r.custom} <= COMMAND_TYPES
        return
    assert result.error is None, result.error
    for warned in edit.warns:
        assert any(w.startswith(f"ocp:{warned}:") for w in result.warnings), (warned, result.warnings)
    unexpected = {}
    for name, change in result.changes.items():
        wanted = expected_action(edit, name)
        if wanted is None:
            if change.action != "same":
                unexpected[name] = change.action
        elif change.action not in wanted.split("|"):
            unexpected[name] = f"{change.action}, wanted {wanted}"
    assert unexpected == {}
    for pattern, wanted in edit.expect.items():
        assert any(_matches(pattern, name) and c.action in wanted.split("|") for name, c in result.changes.items()), pattern


def test_nothing_disrupts_nodes_or_the_network_unless_asked():
    """The installer never runs again and no first-boot input reaches a running server."""
    base, state = deployed(DEV_EDITS[0])
    everything = both(
        key("nameservers", ["10.20.0.2"]),
        key("sshKey", OTHER_KEY),
        key("proxy", {"httpProxy": "http://proxy.lab:3128"}),
        section("masters", image="rhcos-4.17", flavor="master.xl"),
        section("workers", image="rhcos-4.17", flavor="worker.xl", count=3),
    )(base)
    result = preview(state, everything)
    assert result.error is None, result.error
    assert result.disruptive == set()
    assert result.changes["installer-run"].action == "same"
    assert "environment" in result.changes["installer-run"].ignored


def test_fewer_router_nodes_than_routers_says_how_to_lower_them():
    base, state = deployed(DEV_EDITS[0])
    result = preview(state, section("workers", count=1)(base))
    (warning,) = [w for w in result.warnings if w.startswith("ocp:workers.count:")]
    assert "leaves 1 router node(s) (" in warning and "-worker-0) for the 2 routers" in warning and "1 would stay Pending" in warning
    assert warning.endswith("""`oc patch ingresscontroller/default -n openshift-ingress-operator --type merge -p '{"spec":{"replicas":1}}'`""")


@pytest.mark.parametrize("workers,routers", [(2, 2), (5, 3), (0, 3), (1, 1)])
def test_the_ingresscontroller_runs_one_router_per_router_node_at_install(workers, routers):
    """Unset, the operator runs 2 (HA topology) whatever the nodes: with 1 worker one stays Pending."""
    import yaml

    from ignition import assembly
    from tests.conftest import run
    from tools.plan import node_outputs

    program_run = run(section("workers", count=workers)(stack_config("dev")))
    bootstrap = next(node for node in node_outputs(program_run) if node.hostname.endswith("-bootstrap"))
    manifest = next(f for f in bootstrap.ignition["storage"]["files"] if f["path"].endswith("default-ingresscontroller.yaml"))
    spec = yaml.safe_load(assembly.file_contents(manifest))["spec"]
    slots = spec["nodePlacement"]["nodeSelector"]["matchExpressions"][0]["values"]
    assert spec["replicas"] == routers
    assert all(("-master-" if workers == 0 else "-worker-") in slot for slot in slots)


def test_the_workers_server_group_outlives_the_worker_count():
    """Compact at install, 2 workers, then none again: the group stays the same one (the
    Machine API finds it by name; a second of one name breaks it)."""
    compact = section("workers", count=0)(stack_config("dev"))
    installed = deploy(compact)
    group = "ocp4-workers-server-group"
    assert group in {r["name"] for r in installed}
    engine = deployed_from(installed)
    scaled = run_program(section("workers", count=2)(compact), engine=engine)
    assert next(c for c in engine.all_changes() if c.name == group).action == "same"
    result = preview(scaled.state(), compact)
    assert result.error is None, result.error
    assert result.changes[group].action == "same"
    assert result.names("delete") >= {"ocp4-workers-worker-0", "ocp4-workers-worker-1"}
    assert not [name for name in result.names("delete", "replace", "create") if "server-group" in name]


def test_the_same_config_twice_gives_identical_inputs():
    base, state = deployed(DEV_EDITS[0])
    result = preview(state, base)
    assert {name: c.action for name, c in result.changes.items() if c.action != "same"} == {}
    assert result.warnings == []


def _without_in_record(state: list[dict], key: str) -> list[dict]:
    """The state of a stack whose install record was written before `key` existed."""
    state = copy.deepcopy(state)
    (run,) = [resource for resource in state if resource["name"] == "installer-run"]
    files = unbundle(run["outputs"]["stdout"])
    record = json.loads(files[RECORD_FILE])
    del record["stack"][key]
    files[RECORD_FILE] = json.dumps(record).encode()
    run["outputs"]["stdout"] = bundle(files)
    return state


def test_a_kvm_stack_installed_before_the_domain_type_key_keeps_its_domains():
    base, state = deployed(next(edit for edit in KVM_EDITS if edit.id == "kvm libvirt.domainType"))
    older = _without_in_record(state, "libvirt.domainType")
    unchanged = preview(older, base, "kvm")
    assert unchanged.error is None and unchanged.warnings == []
    assert {name: c.action for name, c in unchanged.changes.items() if c.action != "same"} == {}
    # Every domain then was kvm: qemu would replace them all.
    emulated = preview(older, with_section(base, "libvirt", domainType="qemu"), "kvm")
    assert emulated.error is not None and 'ocp:libvirt.domainType: was "kvm" at install, now "qemu"' in emulated.error
    assert {r.type for r in emulated.registered if r.custom} <= COMMAND_TYPES


def test_a_stack_installed_before_the_etcd_disk_key_is_refused_it():
    """Its masters keep etcd on their root disk: the key is refused as on a stack recorded with it unset."""
    base, state = deployed(DEV_EDITS[0])
    older = _without_in_record(state, "masters.etcdDisk")
    unchanged = preview(older, base)
    assert unchanged.error is None and unchanged.warnings == []
    result = preview(older, section("masters", rootVolume={"size": 120, "type": "ssd"}, etcdDisk={"size": 10})(base))
    assert result.error is not None and 'ocp:masters.etcdDisk: was unset at install, now {"size": 10}' in result.error, result.error
    assert "etcd-ephemeral-disk.md" in result.error and "create a new stack for a new cluster" in result.error
    assert {r.type for r in result.registered if r.custom} <= COMMAND_TYPES


@pytest.mark.parametrize("name,edit", [
    ("ntpServers", key("ntpServers", ["10.20.0.1"])),
    ("installer.extraManifests", section("installer", extraManifests=str(ROOT / "samples" / "manifests"))),
    ("installer.cloudProviderConfig", section("installer", cloudProviderConfig="[BlockStorage]\nignore-volume-az = yes\n")),
])
def test_a_stack_installed_before_a_key_existed_is_warned_when_it_is_set(name, edit):
    """Such a record lacks the key, and only recorded keys are compared: it was unset then."""
    base, state = deployed(DEV_EDITS[0])
    older = _without_in_record(state, name)
    assert preview(older, base).warnings == []
    result = preview(older, edit(base))
    assert result.error is None, result.error
    assert [w for w in result.warnings if w.startswith(f"ocp:{name}:")], result.warnings


def _leaf_keys(model: type, prefix: str = "") -> set[str]:
    keys = set()
    for name, info in model.model_fields.items():
        alias = info.alias or name
        annotation = info.annotation
        nested = [arg for arg in getattr(annotation, "__args__", (annotation,)) if hasattr(arg, "model_fields")]
        if nested:
            keys |= _leaf_keys(nested[0], f"{prefix}{alias}.")
        else:
            keys.add(f"{prefix}{alias}")
    return keys


def test_every_key_of_the_config_has_a_day2_effect():
    unclassified = sorted(key for key in _leaf_keys(ClusterConfig) if effect_of(key) is None)
    assert unclassified == []


def test_every_classified_key_is_a_real_key():
    real = _leaf_keys(ClusterConfig)
    assert sorted(key for key in EFFECTS if not any(r == key or r.startswith(f"{key}.") for r in real)) == []


KIND_WORDS = {
    "refuse": "refused",
    "warn": "warning: install time only",
    "apply": "applied",
    "inert": "nothing",
}


def day2_table() -> str:
    """The day-2 table of docs/day2.md, as cluster/day2.py classifies the keys."""
    rows = ["| key | a change on a running cluster | what happens |", "|---|---|---|"]
    for key, effect in EFFECTS.items():
        if effect.refused_when_set_or_unset:
            rows.append(
                f"| `{key}` | {KIND_WORDS[effect.kind]}; set or removed: refused | "
                f"{effect.text}. Refused when set or removed: {effect.refused_when_set_or_unset} |"
            )
        else:
            rows.append(f"| `{key}` | {KIND_WORDS[effect.kind]} | {effect.text} |")
    return "\n".join(rows)


def test_the_docs_day2_table_is_the_classification():
    from tests.conftest import ROOT

    assert day2_table() in (ROOT / "docs" / "day2.md").read_text(), "regenerate the table in docs/day2.md from tests/test_day2.py day2_table()"


def test_every_classified_key_is_edited_in_this_table():
    edited = {edit.id.removeprefix("kvm ").removeprefix("standalone ").split(" ")[0] for edit in EDITS}
    assert sorted(set(EFFECTS) - edited) == []


def test_a_bootstrap_made_again_keeps_the_installs_config_source():
    installed = stack_config("dev")
    torn_down = run_program(with_section(installed, "bootstrap", enabled=False), engine=deployed_from(deploy(installed))).state()
    # While there is no bootstrap the key is not read; a new bootstrap keeps the install's.
    assert preview(torn_down, with_section(installed, "bootstrap", enabled=False, configSource="helper")).error is None
    again = preview(torn_down, with_section(installed, "bootstrap", configSource="helper"))
    assert again.error is not None and (
        'ocp:bootstrap.configSource: was "glance" at install, now "helper": cannot change while ocp:bootstrap.enabled is true'
    ) in again.error and "Write configSource: glance" in again.error


# The last commit before ocp:bootstrap.configSource: its stacks' bootstraps were served by the helper.
BEFORE_CONFIG_SOURCE = "1b28635"


@pytest.fixture(scope="module")
def helper_era_state(tmp_path_factory) -> list:
    """The dev stack as that commit's own offline plan deployed it."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs the project's git history")
    old = tmp_path_factory.mktemp("before-config-source")
    archive = subprocess.run(["git", "archive", BEFORE_CONFIG_SOURCE], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    (old / "venv").symlink_to(ROOT / "venv")
    planned = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", "dev", "--out", str(old / "plan")],
        cwd=old, env={**os.environ, "OCP_PLAN_LOCALCLOUD": "off"}, capture_output=True, text=True,
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    return json.loads((old / "plan" / "state.json").read_text())


def test_a_stack_installed_with_the_helper_is_told_to_keep_it_while_its_bootstrap_runs(helper_era_state):
    assert any(r["name"] == "ocp4-bootstrap-helper-upload" for r in helper_era_state)
    result = preview(helper_era_state, stack_config("dev"))
    assert result.error is not None and 'ocp:bootstrap.configSource: was "helper" at install, now "glance"' in result.error
    assert "Write configSource: helper" in result.error
    kept = preview(helper_era_state, with_section(stack_config("dev"), "bootstrap", configSource="helper"))
    assert kept.error is None, kept.error
    # Nothing but scripts run at destroy, in place: the cleanup's (it now deletes leftover images
    # too) and the workers' drains (they now take kubectl as well as oc; their create does nothing);
    # and the upload, now a local ssh pinned to the helper's host key (the helper itself stays:
    # its user_data is read at first boot only; docs/openstack.md says what that means mid-bootstrap).
    assert {name: kept.changes[name].fields for name in kept.names("create", "delete", "replace", "update")} == {
        "ocp4-cleanup-on-destroy": ("delete",),
        # Issue 50: the destroy's tagging before the servers go (its create does nothing).
        "ocp4-cleanup-mark-on-destroy": (),
        "ocp4-workers-worker-0-drain": ("delete",),
        "ocp4-workers-worker-1-drain": ("delete",),
        "ocp4-bootstrap-helper-upload": (),
        "ocp4-bootstrap-helper-ssh-upload": (),
        # Each master's pointer command (issue 35), which a master made again boots from: here the installer's.
        **{f"ocp4-master-pointers-master-{index}": () for index in range(3)},
    }
    assert kept.changes["ocp4-cleanup-on-destroy"].action == "update"
    assert kept.changes["ocp4-bootstrap-helper-upload"].action == "delete"
    assert kept.changes["ocp4-bootstrap-helper-ssh-upload"].action == "create"
    assert kept.changes["ocp4-bootstrap-helper-server"].action == "same"


def test_a_stack_installed_with_the_helper_tears_it_down_with_the_bootstrap(helper_era_state):
    result = preview(helper_era_state, with_section(stack_config("dev"), "bootstrap", enabled=False))
    assert result.error is None, result.error
    assert {name for name in result.names("delete")} >= {"ocp4-bootstrap-helper-server", "ocp4-bootstrap-helper-upload", "ocp4-bootstrap-node"}
    # The masters' pointer commands, made with the masters running: the cluster's pointer cannot be read
    # here (no oc), which warns for a stack installed before them, and refuses nothing.
    assert result.names("create", "replace") == {f"ocp4-master-pointers-master-{index}" for index in range(3)} | {"ocp4-cleanup-mark-on-destroy"}
