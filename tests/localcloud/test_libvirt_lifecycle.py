"""The kvm stack's whole life with the real engine, the libvirt plugin built here and the local
libvirt: `pulumi up`, day 2 (previews of the kvm catalogue against the offline preview, then
workers 2 -> 3 -> 1 and the bootstrap's teardown, applied), `pulumi destroy`. Judged through
libvirt (`virsh`), the stack's outputs and `pulumi preview --json`.

Real: the CLI and its Python host (toolchain/pins.toml), the libvirt plugin (built from
terraform-provider-libvirt v0.8.3 under the bridge: toolchain/pins.toml says why not pulumi-
libvirt's own), openshift-install (platform none: offline), libvirtd, QEMU and dnsmasq. Not
real: the command plugin (harness/command_standin, pinned to pulumi-command v1.2.1's source; the
module proxy refuses pulumi-command) and the machines' image (the stand-in boot sector: nothing
boots OpenShift here). One module-scoped stack: the tests run in order and build on each other.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.localcloud.libvirt import POOL, Libvirt
from harness.netns import host_links
from tests.conftest import deploy
from tests.localcloud.conftest import libvirt_exports
from tests.localcloud.engine import Stack, agreement, needs, structured, table
from tests.test_day2 import KVM_EDITS
from tools.real_installer import stand_in_oc

STACK = "kvm"


pytestmark = pytest.mark.skipif(needs(("libvirt", "0.5.4")) is not None, reason=str(needs(("libvirt", "0.5.4"))))


@dataclass
class KvmStack(Stack):
    libvirt: Libvirt | None = None


def virsh(stack: Stack, *args: str) -> str:
    return stack.libvirt.virsh(*args).stdout


def domains(stack: Stack) -> dict[str, dict]:
    """Every domain: its state, vCPUs, memory (KiB), UUID and QEMU process (pid, start time)."""
    found = {}
    for name in stack.libvirt.names("list", "--all", "--name"):
        info = dict((k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in virsh(stack, "dominfo", name).splitlines() if ":" in line))
        pid_file = stack.libvirt.masked("run") / "qemu" / f"{name}.pid"
        pid = int(pid_file.read_text()) if pid_file.exists() else None
        started = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19] if pid else None
        found[name] = {"state": info["State"], "vcpus": int(info["CPU(s)"]), "memory": int(info["Max memory"].split()[0]), "uuid": info["UUID"], "qemu": (pid, started)}
    return found


@pytest.fixture(scope="module")
def stack(local_libvirt, tmp_path_factory) -> KvmStack:
    exports = libvirt_exports(local_libvirt)
    work = tmp_path_factory.mktemp("kvm-lifecycle")

    def local(committed: dict) -> dict:
        libvirt = dict(committed["ocp:libvirt"], uri=exports["LIBVIRT_DEFAULT_URI"], image=exports["OCP_LIBVIRT_IMAGE"])
        if exports["OCP_LIBVIRT_DOMAIN_TYPE"] != "kvm":
            libvirt["domainType"] = exports["OCP_LIBVIRT_DOMAIN_TYPE"]
        # No registry here: the release lookups get the fake release's digests (tools/real_installer.py).
        return {**committed, "ocp:libvirt": libvirt, "ocp:installer": dict(committed["ocp:installer"], oc=str(stand_in_oc(work)))}

    made = Stack.create(STACK, work, {"LIBVIRT_DEFAULT_URI": exports["LIBVIRT_DEFAULT_URI"]}, [("libvirt", "0.5.4")], local)
    created = KvmStack(**made.__dict__, libvirt=local_libvirt)
    yield created
    if os.environ.get("OCP_KEEP_LIFECYCLE"):  # to look into a failure: the stack stays, with its project
        print(f"kept: the stack in {created.project} (PULUMI_HOME {work / 'home'}, backend {work / 'state'})")
        return
    created.destroy(teardown=True)  # after a failure: leave nothing behind


def test_up_creates_the_kvm_stack_in_libvirt(stack):
    links = host_links()
    began = time.monotonic()
    done = stack.pulumi("up", "--yes", "--skip-preview")
    seconds = time.monotonic() - began
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    print(f"pulumi up of the kvm stack: {seconds:.0f} s")
    config = {key: structured(value) for key, value in stack.base.items()}
    cluster, domain_type = config["ocp:clusterName"], config["ocp:libvirt"].get("domainType", "kvm")
    # What the program asks for (the offline plan of the same config) is what libvirt runs.
    state = deploy(stack.base, STACK)
    planned = {r["inputs"]["name"]: r["inputs"] for r in state if r["type"] == "libvirt:index/domain:Domain"}
    nics = {name: inputs["networkInterfaces"][0] for name, inputs in planned.items()}
    disk_sizes = {r["inputs"]["name"]: r["inputs"].get("size") for r in state if r["type"] == "libvirt:index/volume:Volume"}
    running = domains(stack)
    assert set(running) == set(planned) == {f"{cluster}-bootstrap", *(f"{cluster}-master-{i}" for i in range(3)), *(f"{cluster}-worker-{i}" for i in range(2))}
    volumes = stack.libvirt.names("vol-list", POOL)
    for name, domain in running.items():
        assert domain["state"] == "running", name
        assert domain["vcpus"] == planned[name]["vcpu"] and domain["memory"] == planned[name]["memory"] * 1024, (name, domain)
        assert _booted_the_stand_in(stack, name), f"{name} did not run the stand-in's boot sector to its halt"
        xml = virsh(stack, "dumpxml", name)
        assert re.search(rf"name=opt/com.coreos/config,file={re.escape(str(stack.libvirt.pool))}/{name}\.ign", xml), xml
        assert f"<domain type='{domain_type}'" in xml
        # Its disk: a copy-on-write layer in the pool over the base image, at the planned size.
        assert f"<source pool='{POOL}' volume='{name}.qcow2'" in xml.replace('"', "'")
        disk = json.loads(subprocess.run(["qemu-img", "info", "-U", "--output", "json", str(stack.libvirt.pool / f"{name}.qcow2")], capture_output=True, text=True, check=True).stdout)
        assert disk["virtual-size"] == disk_sizes[f"{name}.qcow2"] and disk["backing-filename"].endswith(".qcow2"), disk
        assert f"{name}.qcow2" in volumes and f"{name}.ign" in volumes
        ignition = json.loads((stack.libvirt.pool / f"{name}.ign").read_text())
        assert ignition["ignition"]["version"].startswith("3.")
    networks = stack.libvirt.names("net-list", "--name")
    assert len(networks) == 1
    # The network as libvirt runs it: the address plan's DHCP pool (the program's XSLT), every node's reservation.
    network = virsh(stack, "net-dumpxml", networks[0]).replace('"', "'")
    assert "<range start='192.168.126.80' end='192.168.126.254'" in network
    for host in ("api", "api-int"):
        assert f"<hostname>{host}.{cluster}.{config['ocp:baseDomain']}</hostname>" in network
    # The provider writes the MACs in capitals; dnsmasq matches them either way.
    hostsfile = (stack.libvirt.masked("lib") / "dnsmasq" / f"{networks[0]}.hostsfile").read_text().lower()
    for name, nic in nics.items():
        assert f"name='{name}' ip='{nic['addresses'][0]}'" in network
        assert f"{nic['mac']},{nic['addresses'][0]},{name}" in hostsfile
    # dnsmasq, in the namespace, answers the program's names: the API, and any name under apps.
    domain = f"{cluster}.{config['ocp:baseDomain']}"
    assert dns_query(stack.libvirt.namespace, "192.168.126.1", f"api.{domain}") == ["192.168.126.5"]
    assert dns_query(stack.libvirt.namespace, "192.168.126.1", f"api-int.{domain}") == ["192.168.126.5"]
    assert dns_query(stack.libvirt.namespace, "192.168.126.1", f"console-openshift-console.apps.{domain}") == ["192.168.126.7"]
    assert host_links() == links, "the network's bridge appeared outside the namespace"
    outputs = json.loads(stack.pulumi("stack", "output", "--json").stdout)
    assert outputs["apiVip"] == "192.168.126.5"
    assert outputs["kubeconfig"] == "[secret]" and outputs["kubeadminPassword"] == "[secret]"


def _booted_the_stand_in(stack: Stack, domain: str, timeout: float = 60) -> bool:
    """The first vCPU halted inside the boot sector (0x7c00-0x7dff), after writing its line: the
    provider's domains have a pty console, no serial file, so QEMU's monitor says where it is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        registers = virsh(stack, "qemu-monitor-command", domain, "--hmp", "info registers")
        eip = re.search(r"EIP=([0-9a-f]+)", registers)
        if eip and 0x7C00 <= int(eip.group(1), 16) < 0x7E00 and "HLT=1" in registers:
            return True
        time.sleep(0.5)
    return False


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


def test_a_second_preview_changes_nothing(stack):
    steps, output = stack.steps(stack.base)
    assert steps is not None, output[-4000:]
    changed = {name: action for name, action in steps.items() if action != "same"}
    assert changed == {}, changed


def test_the_kvm_catalogue_previews_as_the_offline_preview_says(stack):
    """Every kvm edit of tests/test_day2.py, previewed by the real engine and plugin against the
    deployed stack, and by the offline preview against the same config: the same step for every
    resource, the same refusals, the same warnings."""
    rows, disagreements = agreement(stack, deploy(stack.base, STACK), KVM_EDITS)
    print(table(rows))
    assert disagreements == [], "\n".join(disagreements)


def test_workers_2_3_1_and_the_bootstrap_teardown_leave_the_masters_running(stack):
    cluster = structured(stack.base["ocp:clusterName"])
    before = domains(stack)
    masters = {name: before[name] for name in before if "-master-" in name}
    config = stack.base
    for count in (3, 1):
        config = {**config, "ocp:workers": json.dumps({**json.loads(config["ocp:workers"]), "count": count})}
        stack.write_config(config)
        done = stack.pulumi("up", "--yes", "--skip-preview")
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        workers = sorted(name for name in domains(stack) if "-worker-" in name)
        assert workers == [f"{cluster}-worker-{index}" for index in range(count)]
    config = {**config, "ocp:bootstrap": json.dumps({**json.loads(config["ocp:bootstrap"]), "enabled": False})}
    stack.write_config(config)
    done = stack.pulumi("up", "--yes", "--skip-preview")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    after = domains(stack)
    assert f"{cluster}-bootstrap" not in after
    assert not any(name.startswith(f"{cluster}-bootstrap") for name in stack.libvirt.names("vol-list", POOL))
    # Not redefined (same UUID) and not restarted (the same QEMU process).
    assert {name: after[name] for name in masters} == masters
    stack.base = config


def test_destroy_leaves_no_domain_volume_or_network(stack):
    began = time.monotonic()
    done = stack.destroy()
    print(f"pulumi destroy of the kvm stack: {time.monotonic() - began:.0f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert stack.libvirt.names("list", "--all", "--name") == []
    assert stack.libvirt.names("net-list", "--all", "--name") == []
    assert stack.libvirt.names("vol-list", POOL) == []
