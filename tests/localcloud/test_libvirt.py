"""The local libvirt (tools/localcloud/libvirt.py), judged by the real libvirtd, QEMU and dnsmasq.

Until the pulumi-libvirt plugin can be built here (issue 16), nothing runs `pulumi up` against
it; what runs is the kvm stack's own offline plan, turned into the definitions pulumi-libvirt
0.8.1 sends for those inputs (read in its source: domain.go, network_def.go), with the
program's XSLT applied by xsltproc as the provider applies it. libvirt then validates them,
dnsmasq serves them and QEMU starts every machine at the stack's sizes.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import PULL_SECRET
from tests.localcloud.conftest import libvirt_exports as exports
from tools.localcloud.libvirt import BOOTED, POOL, PROCESS, Libvirt, boot_sector, wait_booted
from tools.localcloud.processes import recorded
from tools.netns import host_links

ROOT = Path(__file__).resolve().parents[2]


def test_env_gives_the_uri_the_stand_in_image_and_the_domain_type_this_host_runs(local_libvirt):
    env = exports(local_libvirt)
    assert env["LIBVIRT_DEFAULT_URI"] == local_libvirt.uri
    assert env["OCP_LIBVIRT_DOMAIN_TYPE"] in ("kvm", "qemu")
    info = json.loads(subprocess.run(["qemu-img", "info", "--output", "json", env["OCP_LIBVIRT_IMAGE"]], capture_output=True, text=True, check=True).stdout)
    assert info["format"] == "qcow2" and "backing-filename" not in info
    # virsh, as a user runs it with these exports, reaches this daemon and its pool.
    pools = subprocess.run(["virsh", "-q", "pool-list", "--name"], env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout.split()
    assert POOL in pools


def test_the_stand_in_boot_sector_is_a_bios_boot_sector():
    sector = boot_sector()
    assert len(sector) == 512 and sector[-2:] == b"\x55\xaa"
    assert BOOTED.encode() in sector


def test_libvirtd_runs_in_a_namespace_of_its_own_with_one_root_only_socket(local_libvirt):
    pid, _ = recorded(local_libvirt.layout, PROCESS)
    namespace = os.stat(Path("/run/netns", local_libvirt.namespace)).st_ino
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == namespace != os.stat("/proc/self/ns/net").st_ino
    assert os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino
    # Its configuration is the home's, not /etc/libvirt's.
    assert Path(f"/proc/{pid}/root/etc/libvirt/libvirtd.conf").read_text() == (local_libvirt.masked("etc") / "libvirtd.conf").read_text()
    assert local_libvirt.masked("run").stat().st_mode & 0o777 == 0o700
    listening = subprocess.run(["ip", "netns", "exec", local_libvirt.namespace, "ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    assert "libvirtd" not in listening


# --- the kvm stack's machines, network and volumes, as pulumi-libvirt 0.8.1 would define them ---


def planned(tmp: Path, env: dict[str, str]) -> tuple[list[dict], Path]:
    stack = yaml.safe_load((ROOT / "Pulumi.kvm.yaml").read_text())
    config = stack["config"]
    config["ocp:pullSecret"] = PULL_SECRET
    libvirt = dict(config["ocp:libvirt"], uri=env["LIBVIRT_DEFAULT_URI"], image=env["OCP_LIBVIRT_IMAGE"])
    if env["OCP_LIBVIRT_DOMAIN_TYPE"] != "kvm":
        libvirt["domainType"] = env["OCP_LIBVIRT_DOMAIN_TYPE"]
    config["ocp:libvirt"] = libvirt
    stack_file = tmp / "Pulumi.kvm.yaml"
    stack_file.write_text(yaml.safe_dump(stack))
    out = tmp / "plan"
    done = subprocess.run([sys.executable, "-m", "tools.plan", "--config-file", str(stack_file), "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads((out / "state.json").read_text()), out


def of_type(state: list[dict], kind: str) -> list[dict]:
    return [resource for resource in state if resource["type"] == f"libvirt:index/{kind}"]


def network_xml(network: dict) -> str:
    """What the provider defines for these inputs (resource_libvirt_network.go): NAT, the first host
    address for libvirt, DHCP over the whole subnet, the DNS hosts, dnsmasq options."""
    inputs = network["inputs"]
    subnet = ipaddress.ip_network(inputs["addresses"][0])
    first, last = subnet[1], subnet[-2]
    hosts = "".join(f"<host ip='{host['ip']}'><hostname>{host['hostname']}</hostname></host>" for host in inputs["dns"]["hosts"])
    options = "".join(f"<dnsmasq:option value='{option['optionName']}={option['optionValue']}'/>" for option in inputs["dnsmasqOptions"]["options"])
    local_only = "yes" if inputs["dns"].get("localOnly") else "no"
    return (
        "<network xmlns:dnsmasq='http://libvirt.org/schemas/network/dnsmasq/1.0'>"
        f"<name>{inputs['name']}</name><forward mode='nat'/>"
        f"<domain name='{inputs['domain']}' localOnly='{local_only}'/>"
        f"<dns enable='yes'>{hosts}</dns>"
        f"<ip address='{first}' netmask='{subnet.netmask}'><dhcp><range start='{subnet[2]}' end='{last}'/></dhcp></ip>"
        f"<dnsmasq:options>{options}</dnsmasq:options></network>"
    )


def domain_xml(local: Libvirt, domain: dict, disk: str, ignition: str, network: str) -> str:
    """The provider's domain (domain.go) for these inputs; plus a serial port in a file, where the
    provider has a pty console, so that the test can read what the stand-in printed."""
    inputs = domain["inputs"]
    nic = inputs["networkInterfaces"][0]
    return (
        f"<domain type='{inputs.get('type', 'kvm')}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>"
        f"<name>{inputs['name']}</name><memory unit='MiB'>{int(inputs['memory'])}</memory><vcpu>{int(inputs['vcpu'])}</vcpu>"
        f"<os><type arch='x86_64'>hvm</type></os><cpu mode='{inputs['cpu']['mode']}'/>"
        "<devices>"
        f"<disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='{disk}'/><target dev='vda' bus='virtio'/></disk>"
        f"<interface type='network'><source network='{network}'/><mac address='{nic['mac']}'/><model type='virtio'/></interface>"
        f"<serial type='file'><source path='{local.serial_log(inputs['name'])}'/><target port='0'/></serial>"
        "</devices>"
        f"<qemu:commandline><qemu:arg value='-fw_cfg'/><qemu:arg value='name=opt/com.coreos/config,file={ignition}'/></qemu:commandline>"
        "</domain>"
    )


def dns_query(namespace: str, server: str, name: str) -> list[str]:
    """A-record answers from `server`, asked from inside the namespace (nothing leaves it)."""
    query_id = random.randrange(65536)
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
    packet = struct.pack("!HHHHHH", query_id, 0x0100, 1, 0, 0, 0) + question
    program = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(5)\n"
        f"s.sendto(bytes.fromhex('{packet.hex()}'),('{server}',53));print(s.recv(512).hex())\n"
    )
    reply = bytes.fromhex(
        subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout.strip()
    )
    answers = struct.unpack("!H", reply[6:8])[0]
    position, found = len(packet), []
    for _ in range(answers):
        position += 2 if reply[position] & 0xC0 == 0xC0 else reply.index(b"\0", position) + 1 - position
        kind, _, _, length = struct.unpack("!HHIH", reply[position : position + 10])
        position += 10
        if kind == 1:
            found.append(socket.inet_ntoa(reply[position : position + length]))
        position += length
    return found


def test_the_kvm_stacks_network_and_machines_start_here_at_the_stacks_sizes(local_libvirt, tmp_path):
    env = exports(local_libvirt)
    state, plan = planned(tmp_path, env)
    local = local_libvirt
    (network,) = of_type(state, "network:Network")
    domains = of_type(state, "domain:Domain")
    assert len(domains) == 6  # bootstrap, 3 masters, 2 workers
    links = host_links()
    net = network["inputs"]["name"]
    defined = tmp_path / "network.xml"
    defined.write_text(network_xml(network))
    (stylesheet := tmp_path / "network.xsl").write_text(network["inputs"]["xml"]["xslt"])
    transformed = subprocess.run(["xsltproc", str(stylesheet), str(defined)], capture_output=True, text=True, check=True).stdout
    defined.write_text(transformed)
    base = "ocplv-test-base.qcow2"
    volumes = [base]
    try:
        local.virsh("net-define", str(defined))
        local.virsh("net-start", net)
        pool_path = local.pool
        local.virsh("vol-create-as", POOL, base, "1M", "--format", "qcow2")
        local.virsh("vol-upload", "--pool", POOL, base, env["OCP_LIBVIRT_IMAGE"])
        disks = {resource["urn"].rsplit("::", 1)[1]: resource for resource in of_type(state, "volume:Volume")}
        ignitions = {resource["urn"].rsplit("::", 1)[1]: resource for resource in of_type(state, "ignition:Ignition")}
        for domain in domains:
            urn_name = domain["urn"].rsplit("::", 1)[1]
            disk = disks[urn_name.removesuffix("-domain") + "-disk"]["inputs"]
            ignition = ignitions[urn_name.removesuffix("-domain") + "-ignition"]["inputs"]
            # The Volume: a copy-on-write layer over the base, at the planned size; the Ignition: the node's config in the pool.
            local.virsh(
                "vol-create-as", POOL, disk["name"], f"{int(disk['size'])}b", "--format", "qcow2", "--backing-vol", base, "--backing-vol-format", "qcow2"
            )
            (content := tmp_path / ignition["name"]).write_text(ignition["content"])
            local.virsh("vol-create-as", POOL, ignition["name"], f"{content.stat().st_size}b", "--format", "raw")
            volumes += [disk["name"], ignition["name"]]
            local.virsh("vol-upload", "--pool", POOL, ignition["name"], str(content))
            local.serial_log(domain["inputs"]["name"]).unlink(missing_ok=True)
            (xml := tmp_path / f"{domain['inputs']['name']}.xml").write_text(
                domain_xml(local, domain, str(pool_path / disk["name"]), str(pool_path / ignition["name"]), net)
            )
            local.virsh("define", str(xml))
            nic = domain["inputs"]["networkInterfaces"][0]
            # The provider adds each NIC's reservation to the network, live and persistent (network_def.go addHost).
            host = f"<host mac='{nic['mac']}' name='{nic['hostname']}' ip='{nic['addresses'][0]}'/>"
            local.virsh("net-update", net, "add-last", "ip-dhcp-host", host, "--live", "--config")
        began = time.monotonic()
        for domain in domains:
            local.virsh("start", domain["inputs"]["name"])
        booted = {domain["inputs"]["name"]: wait_booted(local, domain["inputs"]["name"], timeout=60) for domain in domains}
        print(f"6 machines at the kvm stack's sizes booted the stand-in in {time.monotonic() - began:.1f} s ({env['OCP_LIBVIRT_DOMAIN_TYPE']})")
        assert all(booted.values()), booted
        print(subprocess.run([sys.executable, "-m", "tools.localcloud", "status", "--libvirt"], cwd=ROOT, capture_output=True, text=True).stdout)
        for domain in domains:
            inputs = domain["inputs"]
            info = dict(line.split(":", 1) for line in local.virsh("dominfo", inputs["name"]).stdout.splitlines() if ":" in line)
            assert info["State"].strip() == "running"
            assert int(info["CPU(s)"]) == int(inputs["vcpu"])
            assert int(info["Max memory"].split()[0]) == int(inputs["memory"]) * 1024
            disk = json.loads(
                subprocess.run(
                    ["qemu-img", "info", "-U", "--output", "json", str(pool_path / f"{inputs['name']}.qcow2")], capture_output=True, text=True, check=True
                ).stdout
            )
            assert disk["virtual-size"] == int(disks[domain["urn"].rsplit("::", 1)[1].removesuffix("-domain") + "-disk"]["inputs"]["size"])
            command_line = Path(f"/proc/{_qemu_pid(local, inputs['name'])}/cmdline").read_bytes().split(b"\0")
            assert f"name=opt/com.coreos/config,file={pool_path / (inputs['name'] + '.ign')}".encode() in command_line
        # The network as libvirt runs it: the address plan's DHCP pool (the program's XSLT), every node's reservation.
        live = local.virsh("net-dumpxml", net).stdout
        assert "<range start='192.168.126.80' end='192.168.126.254'" in live.replace('"', "'")
        hostsfile = (local.masked("lib") / "dnsmasq" / f"{net}.hostsfile").read_text()
        for domain in domains:
            nic = domain["inputs"]["networkInterfaces"][0]
            assert f"{nic['mac']},{nic['addresses'][0]},{nic['hostname']}" in hostsfile
        # dnsmasq, in the namespace, answers the program's names: the API, and any name under apps.
        assert dns_query(local.namespace, "192.168.126.1", "api.kvm4.lab.local") == ["192.168.126.5"]
        assert dns_query(local.namespace, "192.168.126.1", "api-int.kvm4.lab.local") == ["192.168.126.5"]
        assert dns_query(local.namespace, "192.168.126.1", "console-openshift-console.apps.kvm4.lab.local") == ["192.168.126.7"]
        assert host_links() == links, "the network's bridge appeared outside the namespace"
    finally:
        for domain in domains:
            local.virsh("destroy", domain["inputs"]["name"], check=False)
            local.virsh("undefine", domain["inputs"]["name"], check=False)
        local.virsh("net-destroy", net, check=False)
        local.virsh("net-undefine", net, check=False)
        for volume in volumes:
            local.virsh("vol-delete", "--pool", POOL, volume, check=False)
    assert local.names("list", "--all", "--name") == []
    assert not set(volumes) & set(local.names("vol-list", POOL))
    shutil.rmtree(plan, ignore_errors=True)


def _qemu_pid(local: Libvirt, domain: str) -> int:
    return int((local.masked("run") / "qemu" / f"{domain}.pid").read_text())
