"""The libvirt platform: the real program under mocks, for the committed kvm stack and variations of it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

import pulumi
import pytest

from cluster import libvirt_host
from cluster.addresses import plan_addresses
from cluster.config import load_config
from components.libvirt.common import domain_kind
from ignition import assembly
from tests.conftest import PULL_SECRET, deploy, diff, inputs_by_name, preview, run_recording, stack_config, with_section
from tools.mock_run import ProgramRun, Resource, is_secret, run_program, unwrap

ROOT = Path(__file__).resolve().parents[2]
XSL = "{http://www.w3.org/1999/XSL/Transform}"

PROVIDER = "pulumi:providers:libvirt"
NETWORK = "libvirt:index/network:Network"
VOLUME = "libvirt:index/volume:Volume"
IGNITION = "libvirt:index/ignition:Ignition"
DOMAIN = "libvirt:index/domain:Domain"


# --------------------------------------------------------------------------- helpers


def kvm_config(**overrides: Any) -> dict[str, str]:
    return stack_config("kvm", **overrides)


def run(config: dict[str, str]) -> ProgramRun:
    return run_program(config, stack="kvm")


def mock_id(resource: Resource) -> str:
    """The id tools.mock_run.ClusterMocks gives a resource (what other resources receive as `.id`)."""
    return f"{resource.name}-{hashlib.sha256(f'{resource.type}/{resource.name}'.encode()).hexdigest()[:12]}"


def plan_of(config: dict[str, str]):
    return plan_addresses(load_config(config))


def dhcp_ranges(xslt: str) -> list[tuple[IPv4Address, IPv4Address]]:
    """The <range>s the stylesheet writes into the network's IPv4 <dhcp> element."""
    root = ET.fromstring(xslt)
    templates = [t for t in root.iter(f"{XSL}template") if t.get("match", "").endswith("/dhcp")]
    assert len(templates) == 1, "one template must rewrite the DHCP element"
    dhcp = templates[0].find("dhcp")
    assert dhcp is not None
    # The provider's own range is dropped, everything else in <dhcp> (host reservations) kept.
    keep = dhcp.findall(f"{XSL}apply-templates")
    assert any(k.get("select") == "node()[not(self::range)]" for k in keep)
    return [(IPv4Address(r.get("start")), IPv4Address(r.get("end"))) for r in dhcp.findall("range")]


@pytest.fixture(scope="module", autouse=True)
def usable_kvm():
    """The kvm stack's resources must not depend on this machine's KVM: a device that opens
    read-write stands in for /dev/kvm (the check itself: tests/cluster/test_preflight.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(libvirt_host, "KVM_DEVICE", Path(os.devnull))
        yield


@pytest.fixture(scope="module")
def kvm_run() -> ProgramRun:
    return run(kvm_config())


@pytest.fixture(scope="module")
def kvm_plan():
    return plan_of(kvm_config())


# --------------------------------------------------------------------------- the resource graph


def test_resource_counts_of_the_kvm_stack(kvm_run):
    counts = Counter(r.type for r in kvm_run.resources)
    assert counts == {
        "ocp:libvirt:Cluster": 1,
        PROVIDER: 1,
        "pulumi:providers:command": 1,
        "ocp:installer:Installer": 1,
        "command:local:Command": 5,  # the installer, each worker's drain and images
        "ocp:nodes:WorkerImages": 1,
        "ocp:libvirt:Network": 1,
        NETWORK: 1,
        "ocp:libvirt:BaseVolume": 1,
        VOLUME: 7,  # the base image + one copy-on-write disk per node
        "ocp:libvirt:Bootstrap": 1,
        "ocp:libvirt:NodePool": 2,  # masters, workers
        "ocp:libvirt:Machine": 6,  # bootstrap, 3 masters, 2 workers
        IGNITION: 6,
        DOMAIN: 6,
    }
    assert not any(r.type.startswith("openstack:") for r in kvm_run.resources)


def test_every_resource_hangs_off_the_cluster_with_names_derived_from_it(kvm_run):
    by_urn = {r.urn: r for r in kvm_run.resources}
    cluster = kvm_run.of_type("ocp:libvirt:Cluster")[0]
    assert cluster.name == "kvm4" and cluster.parent not in by_urn  # a child of the stack
    for resource in kvm_run.resources:
        if resource.parent not in by_urn:
            # The cluster, and the installer with its provider: under names no setting changes.
            assert resource is cluster or resource.name in ("installer", "command"), resource.name
            continue
        parent = by_urn[resource.parent]
        if resource.type.startswith("pulumi:providers:"):
            continue  # named by what they provide
        assert resource.name.startswith(parent.name + "-"), (resource.name, parent.name)
        chain = resource
        while chain.parent in by_urn:
            chain = by_urn[chain.parent]
        assert chain is cluster or chain.name == "installer"
    # Each node's disk, ignition and domain share one Machine parent; a worker's drain too.
    for machine in kvm_run.of_type("ocp:libvirt:Machine"):
        children = sorted(r.type for r in kvm_run.resources if r.parent == machine.urn)
        drain = ["command:local:Command"] if "-workers-" in machine.name else []
        assert children == sorted([VOLUME, IGNITION, DOMAIN, *drain])


def test_provider_is_explicit_with_the_configured_uri(kvm_run):
    (provider,) = kvm_run.of_type(PROVIDER)
    assert unwrap(provider.inputs)["uri"] == "qemu:///system"
    assert provider.parent == kvm_run.of_type("ocp:libvirt:Cluster")[0].urn
    uri = run(with_section(kvm_config(), "libvirt", uri="qemu+ssh://root@kvm.example.com/system"))
    assert unwrap(uri.of_type(PROVIDER)[0].inputs)["uri"] == "qemu+ssh://root@kvm.example.com/system"


def test_every_domain_boots_the_ignition_beside_it(kvm_run):
    ignitions = {mock_id(r): r for r in kvm_run.of_type(IGNITION)}
    for domain in kvm_run.of_type(DOMAIN):
        ignition = ignitions[unwrap(domain.inputs["coreosIgnition"])]
        assert ignition.parent == domain.parent
        assert unwrap(ignition.inputs)["name"] == unwrap(domain.inputs["name"]) + ".ign"
        assert unwrap(ignition.inputs)["pool"] == "default"
        assert "fwCfgName" not in domain.inputs  # the provider's default: opt/com.coreos/config


def test_disks_are_copy_on_write_layers_over_the_base_image(kvm_run):
    volumes = {mock_id(r): unwrap(r.inputs) for r in kvm_run.of_type(VOLUME)}
    (base_id,) = [id_ for id_, v in volumes.items() if "source" in v]
    assert volumes[base_id] == {
        "name": "kvm4-base.qcow2",
        "pool": "default",
        "source": "/var/lib/libvirt/images/rhcos-qemu.x86_64.qcow2",
        "format": "qcow2",
    }
    for domain in kvm_run.of_type(DOMAIN):
        (disk,) = unwrap(domain.inputs["disks"])
        volume = volumes[disk["volumeId"]]
        assert volume["baseVolumeId"] == base_id
        # <hostname>.qcow2: a running node keeps its disk whatever its config becomes.
        assert volume["name"] == f"{unwrap(domain.inputs['name'])}.qcow2"
        assert volume["size"] == 120 * 1024**3 and volume["format"] == "qcow2"


def disk_names(program_run: ProgramRun) -> dict[str, str]:
    return {r.name: unwrap(r.inputs["name"]) for r in program_run.of_type(VOLUME) if "source" not in r.inputs}


def test_a_running_node_keeps_its_disk_and_ignition_a_named_resize_restarts_it():
    deployed = deploy(kvm_config(), "kvm")
    # New upstream DNS: every node's CoreDNS file would change; running nodes keep theirs.
    rekeyed = preview(deployed, kvm_config(nameservers=["192.168.126.1", "192.0.2.53"]), "kvm")
    assert rekeyed.error is None and {n: c.action for n, c in rekeyed.changes.items() if c.action != "same"} == {}
    assert "content" in rekeyed.changes["kvm4-control-plane-master-0-ignition"].ignored
    # More memory: nothing, unless a node is named; then only its domain is replaced (it restarts on its disk).
    bigger = preview(deployed, with_section(kvm_config(), "masters", memoryMib=24576), "kvm")
    assert {n for n, c in bigger.changes.items() if c.action != "same"} == set()
    resized = preview(deployed, with_section(kvm_config(), "masters", memoryMib=24576, resize=[1]), "kvm")
    assert {n: c.action for n, c in resized.changes.items() if c.action != "same"} == {
        "kvm4-control-plane-master-1-domain": "replace"
    }


def test_domains_have_fixed_addresses_and_macs(kvm_run, kvm_plan):
    domains = {unwrap(d.inputs["name"]): unwrap(d.inputs) for d in kvm_run.of_type(DOMAIN)}
    assert set(domains) == {node.name for node in kvm_plan.nodes}
    (network,) = kvm_run.of_type(NETWORK)
    for node in kvm_plan.nodes:
        (nic,) = domains[node.name]["networkInterfaces"]
        octets = str(node.ip).split(".")[1:]
        assert nic["mac"] == "52:54:00:" + ":".join(f"{int(o):02x}" for o in octets)
        assert nic["addresses"] == [str(node.ip)]
        assert nic["hostname"] == node.name
        assert nic["networkId"] == mock_id(network)
        assert nic["waitForLease"] is False
    assert str(kvm_plan.bootstrap.ip) == "192.168.126.10"
    assert domains["kvm4-master-2"]["networkInterfaces"][0]["mac"] == "52:54:00:a8:7e:16"  # .126.22


def test_macs_are_unique_over_every_slot_and_locally_administered(kvm_plan):
    from components.libvirt.common import mac_address

    slots = (kvm_plan.bootstrap, *kvm_plan.master_slots, *kvm_plan.worker_slots)
    macs = [mac_address(node.ip) for node in slots]
    assert len(set(macs)) == len(macs)
    assert all(int(mac.split(":")[0], 16) & 0b10 and not int(mac.split(":")[0], 16) & 0b1 for mac in macs)
    # A /16 too: the last three octets differ wherever the addresses do.
    wide = plan_of(kvm_config(machineNetwork="10.0.0.0/16", nameservers=["10.0.0.1"]))
    wide_macs = [mac_address(n.ip) for n in (wide.bootstrap, *wide.master_slots, *wide.worker_slots)]
    assert len(set(wide_macs)) == len(wide_macs)


def test_domain_sizes(kvm_run):
    sizes = {unwrap(d.inputs["name"]): unwrap(d.inputs) for d in kvm_run.of_type(DOMAIN)}
    for name in ("kvm4-bootstrap", "kvm4-master-0"):
        assert (sizes[name]["vcpu"], sizes[name]["memory"]) == (4, 16384)
    assert (sizes["kvm4-worker-0"]["vcpu"], sizes["kvm4-worker-0"]["memory"]) == (4, 8192)
    assert all(s["cpu"] == {"mode": "host-passthrough"} for s in sizes.values())
    assert sizes["kvm4-bootstrap"]["autostart"] is False and sizes["kvm4-master-0"]["autostart"] is True


# --------------------------------------------------------------------------- the domain type


def domains_of(program_run: ProgramRun) -> dict[str, dict[str, Any]]:
    return {unwrap(d.inputs["name"]): unwrap(d.inputs) for d in program_run.of_type(DOMAIN)}


def test_one_place_decides_the_domain_type_and_cpu_mode():
    assert domain_kind("kvm") == (None, "host-passthrough")
    assert domain_kind("qemu") == ("qemu", "host-model")


def test_kvm_domains_pass_no_type_and_keep_host_passthrough(kvm_run):
    """`type` and `cpu` are ForceNew in the provider: a stack deployed before ocp:libvirt.domainType
    existed must see neither change, whether the key is left out or says kvm."""
    explicit = run(with_section(kvm_config(), "libvirt", domainType="kvm"))
    for domains in (domains_of(kvm_run), domains_of(explicit)):
        assert len(domains) == 6  # bootstrap, masters, workers
        for inputs in domains.values():
            assert "type" not in inputs and inputs["cpu"] == {"mode": "host-passthrough"}
    assert json.dumps(inputs_by_name(explicit), sort_keys=True) == json.dumps(inputs_by_name(kvm_run), sort_keys=True)


def test_qemu_gives_every_domain_type_qemu_and_host_model_and_nothing_else(kvm_run, monkeypatch):
    monkeypatch.setattr(libvirt_host, "KVM_DEVICE", Path("/nonexistent/kvm"))  # software emulation needs no KVM
    kvm, qemu = domains_of(kvm_run), domains_of(run(with_section(kvm_config(), "libvirt", domainType="qemu")))
    assert set(qemu) == set(kvm)
    for name, inputs in qemu.items():
        # libvirt refuses host-passthrough for a qemu domain; host-model gives TCG a named model with x86-64-v2.
        assert inputs["type"] == "qemu" and inputs["cpu"] == {"mode": "host-model"}
        assert {k: v for k, v in inputs.items() if k not in ("type", "cpu")} == {k: v for k, v in kvm[name].items() if k != "cpu"}


def test_a_kvm_stack_on_this_machine_without_kvm_stops_before_any_resource(monkeypatch):
    monkeypatch.setattr(libvirt_host, "KVM_DEVICE", Path("/nonexistent/kvm"))
    recorded, error = run_recording(kvm_config(), stack="kvm")
    assert isinstance(error, pulumi.RunError), error
    message = str(error)
    assert message.startswith("invalid stack configuration:\n  ocp:libvirt.domainType: kvm (the default), but there is no /nonexistent/kvm")
    assert "set ocp:libvirt.domainType: qemu (software emulation, far slower" in message and "enable KVM" in message
    assert recorded.resources == []
    # qemu needs no KVM; a remote host's KVM is not this machine's to check.
    for config in (
        with_section(kvm_config(), "libvirt", domainType="qemu"),
        with_section(kvm_config(), "libvirt", uri="qemu+ssh://root@kvm.example.com/system"),
    ):
        assert run_recording(config, stack="kvm")[1] is None


def test_sizes_default_per_role_when_left_out():
    config = kvm_config()
    for role in ("masters", "workers"):
        config = with_section(config, role, vcpus=None, memoryMib=None, diskGib=None)
    program_run = run(config)
    domains = {unwrap(d.inputs["name"]): unwrap(d.inputs) for d in program_run.of_type(DOMAIN)}
    volumes = {unwrap(v.inputs["name"]): unwrap(v.inputs) for v in program_run.of_type(VOLUME)}
    expected = {"kvm4-bootstrap": (4, 16384), "kvm4-master-1": (4, 16384), "kvm4-worker-1": (2, 8192)}
    for name, (vcpu, memory) in expected.items():
        assert (domains[name]["vcpu"], domains[name]["memory"]) == (vcpu, memory)
        volume = volumes[f"{name}.qcow2"]
        assert volume["size"] == 120 * 1024**3


def test_network_is_nat_on_the_machine_network_with_the_cluster_domain(kvm_run, kvm_plan):
    (network,) = kvm_run.of_type(NETWORK)
    inputs = unwrap(network.inputs)
    assert inputs["mode"] == "nat" and inputs["name"] == "kvm4" and inputs["autostart"] is True
    assert inputs["addresses"] == ["192.168.126.0/24"]  # the host takes .1, the plan's gateway
    assert kvm_plan.gateway == IPv4Address("192.168.126.1")
    assert inputs["domain"] == "kvm4.lab.local"
    assert inputs["dhcp"] == {"enabled": True}
    dns = inputs["dns"]
    assert dns["enabled"] is True and dns["localOnly"] is True
    assert {(h["hostname"], h["ip"]) for h in dns["hosts"]} == {
        ("api.kvm4.lab.local", "192.168.126.5"),
        ("api-int.kvm4.lab.local", "192.168.126.5"),
    }
    assert "forwarders" not in dns  # the only nameserver is this dnsmasq itself
    assert inputs["dnsmasqOptions"]["options"] == [
        {"optionName": "address", "optionValue": "/apps.kvm4.lab.local/192.168.126.7"}
    ]


def test_dhcp_never_leases_a_vip_or_a_node_address(kvm_run, kvm_plan):
    (network,) = kvm_run.of_type(NETWORK)
    ranges = dhcp_ranges(unwrap(network.inputs)["xml"]["xslt"])
    assert ranges == list(kvm_plan.allocation_pools) == [
        (IPv4Address("192.168.126.80"), IPv4Address("192.168.126.254"))
    ]
    reserved = {
        kvm_plan.api_vip,
        kvm_plan.ingress_vip,
        kvm_plan.gateway,
        kvm_plan.helper_ip,
        kvm_plan.bootstrap.ip,
        *(node.ip for node in kvm_plan.master_slots + kvm_plan.worker_slots),
    }
    network_cidr = IPv4Network("192.168.126.0/24")
    for start, end in ranges:
        assert start in network_cidr and end in network_cidr and start <= end
        assert end < network_cidr.broadcast_address
        assert not [ip for ip in reserved if start <= ip <= end]


def test_dhcp_pool_is_split_around_a_vip_at_the_top():
    config = kvm_config(ingressVip="192.168.126.200")
    program_run = run(config)
    ranges = dhcp_ranges(unwrap(program_run.of_type(NETWORK)[0].inputs)["xml"]["xslt"])
    assert ranges == [
        (IPv4Address("192.168.126.80"), IPv4Address("192.168.126.199")),
        (IPv4Address("192.168.126.201"), IPv4Address("192.168.126.254")),
    ]
    dnsmasq = unwrap(program_run.of_type(NETWORK)[0].inputs)["dnsmasqOptions"]["options"][0]
    assert dnsmasq["optionValue"] == "/apps.kvm4.lab.local/192.168.126.200"


def test_dhcp_stylesheet_rewrites_the_providers_network_xml(kvm_run, tmp_path):
    """Where an XSLT processor is at hand, apply the stylesheet as the provider does (xsltproc)."""
    provider_xml = (
        "<network><name>kvm4</name><forward mode='nat'/><domain name='kvm4.lab.local' localOnly='yes'/>"
        "<ip address='192.168.126.1' family='ipv4' prefix='24'><dhcp>"
        "<range start='192.168.126.2' end='192.168.126.254'/>"
        "<host mac='52:54:00:a8:7e:14' name='kvm4-master-0' ip='192.168.126.20'/>"
        "</dhcp></ip></network>"
    )
    xslt = unwrap(kvm_run.of_type(NETWORK)[0].inputs)["xml"]["xslt"]
    try:
        from lxml import etree  # type: ignore[import-not-found]

        result = str(etree.XSLT(etree.XML(xslt.encode()))(etree.XML(provider_xml.encode())))
    except ImportError:
        if shutil.which("xsltproc") is None:
            pytest.skip("no XSLT processor here (lxml or xsltproc); the stylesheet's shape is checked elsewhere")
        (tmp_path / "s.xsl").write_text(xslt)
        (tmp_path / "n.xml").write_text(provider_xml)
        result = subprocess.run(
            ["xsltproc", str(tmp_path / "s.xsl"), str(tmp_path / "n.xml")], capture_output=True, text=True, check=True
        ).stdout
    network = ET.fromstring(result)
    dhcp = network.find("ip/dhcp")
    assert [(r.get("start"), r.get("end")) for r in dhcp.findall("range")] == [("192.168.126.80", "192.168.126.254")]
    assert [h.get("name") for h in dhcp.findall("host")] == ["kvm4-master-0"]
    assert network.find("domain").get("name") == "kvm4.lab.local"


def test_existing_network_or_bridge_creates_no_network():
    existing = run(with_section(kvm_config(), "libvirt", network="default"))
    assert existing.of_type(NETWORK) == []
    for domain in existing.of_type(DOMAIN):
        (nic,) = unwrap(domain.inputs["networkInterfaces"])
        assert nic["networkName"] == "default" and "networkId" not in nic and "bridge" not in nic
    bridged = run(with_section(kvm_config(), "libvirt", bridge="br0"))
    assert bridged.of_type(NETWORK) == []
    for domain in bridged.of_type(DOMAIN):
        (nic,) = unwrap(domain.inputs["networkInterfaces"])
        assert nic["bridge"] == "br0" and "networkName" not in nic
        assert nic["mac"].startswith("52:54:00:")


def test_nameservers_other_than_the_network_itself_are_forwarders():
    program_run = run(kvm_config(nameservers=["192.168.126.1", "1.1.1.1"]))
    dns = unwrap(program_run.of_type(NETWORK)[0].inputs)["dns"]
    assert dns["forwarders"] == [{"address": "1.1.1.1"}]


# --------------------------------------------------------------------------- ignition


def node_user_data(program_run: ProgramRun) -> dict[str, str]:
    by_parent = {r.parent: unwrap(r.inputs["content"]) for r in program_run.of_type(IGNITION)}
    return {unwrap(d.inputs["name"]): by_parent[d.parent] for d in program_run.of_type(DOMAIN)}


def test_every_node_ignition_passes_ignition_validate(kvm_run, tmp_path):
    validate = shutil.which("ignition-validate")
    if validate is None:
        pytest.skip("ignition-validate is not installed (Debian package 'ignition')")
    user_data = node_user_data(kvm_run)
    assert len(user_data) == 6
    for name, text in user_data.items():
        path = tmp_path / f"{name}.ign"
        path.write_text(text)
        result = subprocess.run([validate, str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"


def test_bootstrap_gets_its_full_config_directly(kvm_run):
    user_data = node_user_data(kvm_run)
    bootstrap = json.loads(user_data["kvm4-bootstrap"])
    assert bootstrap["ignition"].get("config", {}).get("merge") is None  # no shim, nothing to fetch
    paths = {entry["path"] for entry in bootstrap["storage"]["files"]}
    assert {"/opt/openshift/auth/kubeconfig", "/etc/hostname", "/usr/local/bin/bootkube.sh"} <= paths
    assert len(user_data["kvm4-bootstrap"].encode()) > 100_000  # fw_cfg: no user_data limit
    hostname = next(e for e in bootstrap["storage"]["files"] if e["path"] == "/etc/hostname")
    assert assembly.file_contents(hostname) == b"kvm4-bootstrap\n"
    # Masters and workers merge their role's config from the MCS by VIP, as on OpenStack.
    master = json.loads(user_data["kvm4-master-0"])
    assert master["ignition"]["config"]["merge"][0]["source"] == "http://192.168.126.5:22624/config/master"


# --------------------------------------------------------------------------- secrets and outputs


def readable_texts(value: Any) -> list[str]:
    """Every string in an input, plus the decoded contents of every file of an Ignition config in it."""
    if isinstance(value, dict):
        return [text for item in value.values() for text in readable_texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in readable_texts(item)]
    if not isinstance(value, str):
        return []
    texts = [value]
    try:
        document = json.loads(value)
    except ValueError:
        return texts
    if isinstance(document, dict) and "ignition" in document:
        for entry in document.get("storage", {}).get("files", []):
            contents = assembly.file_contents(entry)
            if contents is not None:
                texts.append(contents.decode(errors="replace"))
    return texts


def test_every_input_carrying_a_secret_is_secret(kvm_run):
    kubeconfig_key = next(
        line.split(":", 1)[1].strip() for line in kvm_run.outputs["kubeconfig"].splitlines() if "client-key-data" in line
    )
    needles = {
        "pull secret": PULL_SECRET,
        "kubeadmin password": kvm_run.outputs["kubeadminPassword"],
        "kubeconfig": kubeconfig_key,
    }
    carriers = set()
    for resource in kvm_run.resources:
        for key, value in resource.inputs.items():
            texts = readable_texts(unwrap(value))
            for what, needle in needles.items():
                if any(needle in text for text in texts):
                    carriers.add((resource.name, key, what))
                    assert is_secret(value), f"{resource.name}.{key} carries the {what} in the clear"
    assert ("installer-run", "environment", "pull secret") in carriers
    assert ("kvm4-bootstrap-node-ignition", "content", "pull secret") in carriers
    assert ("kvm4-bootstrap-node-ignition", "content", "kubeconfig") in carriers
    # Every node's ignition is secret, whatever it holds.
    assert all(is_secret(r.inputs["content"]) for r in kvm_run.of_type(IGNITION))


def test_outputs_match_openstacks_without_floating_ips(kvm_run):
    outputs = kvm_run.outputs
    assert set(outputs) == {
        "apiVip", "ingressVip", "apiFloatingIp", "ingressFloatingIp", "apiUrl", "consoleUrl",
        "nodes", "etcHosts", "infraId", "kubeconfig", "kubeadminPassword",
    }  # fmt: skip
    assert outputs["apiFloatingIp"] is None and outputs["ingressFloatingIp"] is None
    assert outputs["apiVip"] == "192.168.126.5" and outputs["ingressVip"] == "192.168.126.7"
    assert outputs["apiUrl"] == "https://api.kvm4.lab.local:6443"
    assert outputs["nodes"] == {
        "kvm4-bootstrap": ["192.168.126.10"],
        "kvm4-master-0": ["192.168.126.20"],
        "kvm4-master-1": ["192.168.126.21"],
        "kvm4-master-2": ["192.168.126.22"],
        "kvm4-worker-0": ["192.168.126.30"],
        "kvm4-worker-1": ["192.168.126.31"],
    }
    hosts = outputs["etcHosts"].splitlines()
    assert hosts[0] == "192.168.126.5 api.kvm4.lab.local api-int.kvm4.lab.local"
    assert "192.168.126.7 console-openshift-console.apps.kvm4.lab.local" in hosts
    assert outputs["infraId"].startswith("kvm4-")
    assert kvm_run.secret_outputs == {"kubeconfig", "kubeadminPassword"}


# --------------------------------------------------------------------------- day 2


def is_worker(name: str) -> bool:
    return name.startswith(("kvm4-workers", "kvm4-worker-images"))


def node_changes(before: dict[str, str], after: dict[str, str]) -> tuple[set[str], set[str], set[str]]:
    """diff, less the installer command: its environment records the stack's settings for the
    day-2 review, and the engine never diffs it (every input is ignore_changes; tests/test_day2.py)."""
    added, removed, changed = diff(before, after)
    return added, removed, changed - {"installer-run"}


@pytest.fixture(scope="module")
def scaled() -> dict[int, dict[str, str]]:
    return {count: inputs_by_name(run(with_section(kvm_config(), "workers", count=count))) for count in (2, 5, 1)}


def test_same_config_twice_gives_byte_identical_inputs(kvm_run):
    again = run(kvm_config())
    first, second = inputs_by_name(kvm_run), inputs_by_name(again)
    assert len(first) == len(kvm_run.resources)  # names are unique
    # Registration order may vary between runs (Pulumi resolves outputs concurrently); contents may not.
    assert json.dumps(first, sort_keys=True).encode() == json.dumps(second, sort_keys=True).encode()


@pytest.mark.parametrize("before,after", [(2, 5), (5, 1), (2, 1), (1, 2)])
def test_scaling_workers_changes_only_worker_resources(scaled, before, after):
    added, removed, changed = node_changes(scaled[before], scaled[after])
    assert added | removed, "scaling must add or remove something"
    # Separate installs: the bootstrap's IngressController carries each install's router count
    # (a deployed stack keeps its own when it scales: tests/test_day2.py).
    assert {name for name in added | removed | changed if not is_worker(name)} <= {"kvm4-bootstrap-node-ignition"}
    assert changed - {"kvm4-bootstrap-node-ignition"} == set(), "existing workers must stay untouched"


def test_scaling_adds_a_disk_an_ignition_a_domain_and_a_drain_per_worker(scaled):
    added, _, _ = diff(scaled[2], scaled[5])
    assert added == {
        f"kvm4-workers-worker-{i}{suffix}" for i in (2, 3, 4) for suffix in ("", "-disk", "-ignition", "-domain", "-drain")
    } | {f"kvm4-worker-images-worker-{i}" for i in (2, 3, 4)}
    _, removed, _ = diff(scaled[5], scaled[1])
    assert removed == {
        f"kvm4-workers-worker-{i}{suffix}" for i in (1, 2, 3, 4) for suffix in ("", "-disk", "-ignition", "-domain", "-drain")
    } | {f"kvm4-worker-images-worker-{i}" for i in (1, 2, 3, 4)}


def test_bootstrap_teardown_removes_only_bootstrap_resources(kvm_run):
    torn_down = preview(kvm_run.state(), with_section(kvm_config(), "bootstrap", enabled=False), "kvm")
    assert torn_down.error is None, torn_down.error
    changes = {name: change.action for name, change in torn_down.changes.items() if change.action != "same"}
    assert set(changes.values()) == {"delete"}
    assert set(changes) == {  # custom resources: components never diff
        "kvm4-bootstrap-node-disk",
        "kvm4-bootstrap-node-ignition",
        "kvm4-bootstrap-node-domain",
    }


# --------------------------------------------------------------------------- bad configs


KVM = kvm_config()
DEV = stack_config("dev")
BAD_CONFIGS = [
    # libvirt keys on OpenStack
    (stack_config("dev", libvirt={"image": "/images/rhcos.qcow2"}), "ocp:libvirt is set but ocp:platform is openstack"),
    (with_section(DEV, "masters", vcpus=8), "ocp:masters.vcpus is a libvirt setting"),
    (with_section(DEV, "workers", memoryMib=8192), "ocp:workers.memoryMib is a libvirt setting"),
    (with_section(DEV, "workers", diskGib=200), "ocp:workers.diskGib is a libvirt setting"),
    # OpenStack keys on libvirt
    (with_section(KVM, "masters", flavor="master"), "ocp:masters.flavor"),
    (with_section(KVM, "workers", image="rhcos"), "ocp:workers.image"),
    (with_section(KVM, "workers", rootVolume={"size": 100}), "ocp:workers.rootVolume"),
    (with_section(KVM, "masters", availabilityZones=["nova"]), "ocp:masters.availabilityZones"),
    (with_section(KVM, "masters", serverGroupPolicy="anti-affinity"), "ocp:masters.serverGroupPolicy"),
    (with_section(KVM, "masters", etcdDisk={"size": 10}), "ocp:masters.etcdDisk is a openstack setting"),
    (kvm_config(openstack={"cloud": "openstack"}), "ocp:openstack is set but ocp:platform is libvirt"),
    (with_section(KVM, "bootstrap", helper={"flavor": "m1.small"}), "ocp:bootstrap.helper is an OpenStack setting"),
    (with_section(KVM, "bootstrap", configSource="glance"), "ocp:bootstrap.configSource is an OpenStack setting and ocp:platform is libvirt: remove it (libvirt passes the bootstrap its full ignition directly)"),
    (with_section(KVM, "bootstrap", flavor="master"), "ocp:bootstrap.flavor is an OpenStack setting"),
    (kvm_config(tags=["team=lab"]), "ocp:tags is an OpenStack setting"),
    # libvirt's own settings
    (kvm_config(libvirt=None), "ocp:libvirt.image is required"),
    (with_section(KVM, "libvirt", image=None), "ocp:libvirt.image is required"),
    (with_section(KVM, "libvirt", image="/images/rhcos-qemu.x86_64.qcow2.gz"), "ocp:libvirt.image"),
    (with_section(KVM, "libvirt", image=""), "ocp:libvirt.image"),
    (with_section(KVM, "libvirt", network="default", bridge="br0"), "ocp:libvirt.network"),
    (with_section(KVM, "libvirt", storagePool="images"), "ocp:libvirt.storagePool: unknown key"),
    (with_section(KVM, "libvirt", domainType="tcg"), "ocp:libvirt.domainType: 'tcg' is not a domain type: write kvm"),
    (with_section(KVM, "libvirt", domainType="KVM"), "ocp:libvirt.domainType: 'KVM' is not a domain type"),
    (with_section(KVM, "masters", memoryMib=1024), "ocp:masters.memoryMib"),
    (with_section(KVM, "workers", maxCount=250), "ocp:workers.maxCount"),
]


@pytest.mark.parametrize("config,expected", BAD_CONFIGS, ids=[text[:45] for _, text in BAD_CONFIGS])
def test_bad_config_stops_before_any_resource(config, expected):
    recorded, error = run_recording(config, stack="kvm")
    assert isinstance(error, pulumi.RunError), error
    message = str(error)
    assert expected in message
    assert message.startswith("invalid stack configuration")
    assert recorded.resources == []


def test_messages_say_what_to_write_instead():
    _, error = run_recording(kvm_config(libvirt=None), stack="kvm")
    assert "qcow2" in str(error) and "image:" in str(error)
    _, error = run_recording(with_section(KVM, "masters", flavor="master"), stack="kvm")
    assert "remove it" in str(error)
    _, error = run_recording(with_section(KVM, "libvirt", image="/images/rhcos.qcow2.xz"), stack="kvm")
    assert "decompress" in str(error)
    _, error = run_recording(with_section(KVM, "libvirt", domainType="tcg"), stack="kvm")
    assert "kvm (hardware virtualisation, the default) or qemu (software emulation" in str(error)


# --------------------------------------------------------------------------- the offline plan


def test_offline_plan_of_the_kvm_stack(tmp_path):
    out = tmp_path / "plan"
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", "kvm", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    # A separate process, which checks the real /dev/kvm: without usable KVM here, the plan says so.
    if libvirt_host.libvirt_host_problems(load_config(kvm_config()), Path("/dev/kvm")):
        assert result.returncode == 2 and "ocp:libvirt.domainType: kvm (the default), but" in result.stderr
        assert not out.exists()
        return
    assert result.returncode == 0, result.stderr
    assert "libvirt:index/domain:Domain" in result.stdout
    nodes = {path.name for path in (out / "nodes").iterdir()}
    assert nodes == {"kvm4-bootstrap", "kvm4-master-0", "kvm4-master-1", "kvm4-master-2", "kvm4-worker-0", "kvm4-worker-1"}
    assert "kvm4-bootstrap  192.168.126.10" in result.stdout
    bootstrap = out / "nodes/kvm4-bootstrap"
    assert (bootstrap / "files/usr/local/bin/bootkube.sh").is_file()
    assert (bootstrap / "files/etc/hostname").read_text() == "kvm4-bootstrap\n"
    assert (out / "nodes/kvm4-worker-1/files/etc/hostname").read_text() == "kvm4-worker-1\n"
    assert "[secret]" in (out / "resources.json").read_text()


def test_workers_are_drained_before_their_domains_go(kvm_run):
    """No cloud controller on libvirt: without `oc delete node` a removed worker's Node stays NotReady."""
    from tests.components.test_drain import drains

    found = drains(kvm_run)
    assert sorted(found) == ["kvm4-workers-worker-0-drain", "kvm4-workers-worker-1-drain"]
    for name, (domain, command) in found.items():
        assert domain.name == name.replace("-drain", "-domain")
        assert unwrap(command.inputs)["environment"]["NODE"] == unwrap(domain.inputs["name"])
