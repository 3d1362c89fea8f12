"""The local libvirt: libvirtd with the qemu driver, confined, beside the local OpenStack.

`python -m harness.localcloud up --libvirt` starts libvirtd inside a network namespace of its
own, so its bridges, iptables rules, dnsmasq and guests never touch the host's networking,
and inside a mount namespace where its configuration, state, logs and the user table it
reads are this home's (<home>/libvirt), so it never reads or writes /etc/libvirt or
/var/lib/libvirt (it only needs their empty mount points). It listens on one UNIX socket,
root only, no TCP. Then it makes the storage pool `default` (a directory in the home), writes
a stand-in boot image (a 512-byte boot sector that prints a line on the serial port and
halts: a domain that starts and shows it booted, where the stacks name RHCOS), and finds
out which domain type this host runs by booting the stand-in, as the program defines a
domain, once with `kvm` and, failing that, with `qemu`.

`down --libvirt` stops the guests and networks, libvirtd (its PID file), every process
left in its namespace (by PID: only this home's processes live there), then the namespace.
Definitions, the pool and the image stay for the next `up`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.localcloud.layout import Layout
from harness.localcloud.processes import Failed, Process, log_tail, recorded, rss_mib, rss_mib_of, running, start, stop
from harness.netns import processes_in

PROCESS = "libvirtd"
POOL = "default"  # the name the committed kvm stack gives (ocp:libvirt.pool)
# What the daemon needs beyond what .ci/run installs for the cloud.
DEBIAN_PACKAGES = ("libvirt-daemon", "libvirt-daemon-driver-qemu", "libvirt-clients", "qemu-system-x86", "dnsmasq-base", "qemu-utils")
PROGRAMS = {
    "libvirtd": "libvirt-daemon",
    "virsh": "libvirt-clients",
    "qemu-system-x86_64": "qemu-system-x86",
    "dnsmasq": "dnsmasq-base",
    "qemu-img": "qemu-utils",
    "ip": "iproute2",
}
# libvirt's own directories, as a privileged daemon uses them, each replaced by one of the home's.
MASKED = {"etc": "/etc/libvirt", "run": "/run/libvirt", "lib": "/var/lib/libvirt", "log": "/var/log/libvirt", "cache": "/var/cache/libvirt"}
# The qemu driver resolves the user Debian builds it for before it reads qemu.conf; guests run as root here.
QEMU_USER = "libvirt-qemu"
BOOTED = "ocp stand-in booted"
PROBE_SECONDS = 30


@dataclass(frozen=True)
class Libvirt:
    """Where this home's libvirt keeps its things, and how a client reaches it."""

    layout: Layout

    @property
    def root(self) -> Path:
        return self.layout.home / "libvirt"

    def masked(self, name: str) -> Path:
        return self.root / name

    @property
    def namespace(self) -> str:
        # One per home, so two homes (two CI clones) never share a daemon.
        return "ocplv-" + hashlib.sha256(str(self.layout.home.resolve()).encode()).hexdigest()[:8]

    @property
    def socket(self) -> Path:
        return self.masked("run") / "libvirt-sock"

    @property
    def uri(self) -> str:
        return f"qemu:///system?socket={self.socket}"

    @property
    def pool(self) -> Path:
        return self.root / "pool"

    @property
    def image(self) -> Path:
        return self.root / "images" / "standin.qcow2"

    @property
    def domain_type_file(self) -> Path:
        return self.root / "domain-type"

    def domain_type(self) -> str | None:
        try:
            return self.domain_type_file.read_text().split()[0]
        except (OSError, IndexError):
            return None

    def serial_log(self, domain: str) -> Path:
        return self.masked("log") / "serial" / f"{domain}.log"

    def virsh(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["virsh", "-q", "-c", self.uri, *args], capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise Failed(f"virsh {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}; libvirtd's log: {self.masked('log') / 'libvirtd.log'}")
        return done

    def names(self, *list_args: str) -> list[str]:
        return [line for line in self.virsh(*list_args).stdout.split() if line]


def missing_programs() -> list[str]:
    return [f"{program} ({package})" for program, package in PROGRAMS.items() if not (shutil.which(program) or shutil.which(program, path="/usr/sbin"))]


def up(layout: Layout, say) -> Libvirt:
    missing = missing_programs()
    if missing:
        raise Failed(f"missing {', '.join(missing)}: apt-get install {' '.join(DEBIAN_PACKAGES)} (.ci/run does)")
    if os.geteuid() != 0:
        raise Failed("the local libvirt runs a privileged libvirtd in a network namespace: run as root")
    libvirt = Libvirt(layout)
    began = time.monotonic()
    if recorded(layout, PROCESS) and not running(layout, PROCESS):
        _stop_all(libvirt, say)
        say("libvirtd was not running (stale PID file and namespace cleared)")
    if running(layout, PROCESS):
        say("libvirtd already running")
    else:
        _namespace(libvirt)
        _configure(libvirt)
        start(layout, Process(PROCESS, ["ip", "netns", "exec", libvirt.namespace, "sh", "-ec", _launcher(libvirt)]))
        _wait_answering(libvirt)
        say(f"libvirtd up in namespace {libvirt.namespace} ({time.monotonic() - began:.1f} s); log {libvirt.masked('log') / 'libvirtd.log'}")
    _pool(libvirt)
    _standin_image(libvirt)
    if libvirt.domain_type() is None:
        began = time.monotonic()
        chosen, reason = _probe_domain_type(libvirt)
        libvirt.domain_type_file.write_text(f"{chosen}\n{reason}\n")
        say(f"domain type {chosen} ({time.monotonic() - began:.1f} s): {reason}")
    else:
        say(f"domain type {libvirt.domain_type()} (probed before; delete {libvirt.domain_type_file} to probe again)")
    return libvirt


def _namespace(libvirt: Libvirt) -> None:
    if not Path("/run/netns", libvirt.namespace).exists():
        subprocess.run(["ip", "netns", "add", libvirt.namespace], check=True, capture_output=True)
    subprocess.run(["ip", "-n", libvirt.namespace, "link", "set", "lo", "up"], check=True, capture_output=True)


def _configure(libvirt: Libvirt) -> None:
    for name in (*MASKED, "images"):
        libvirt.masked(name).mkdir(parents=True, exist_ok=True)
    libvirt.masked("run").chmod(0o700)
    (libvirt.masked("log") / "serial").mkdir(exist_ok=True)
    log = MASKED["log"]
    (libvirt.masked("etc") / "libvirtd.conf").write_text(
        "# The local libvirt (harness/localcloud/libvirt.py): one root-only UNIX socket, no TCP.\n"
        'unix_sock_rw_perms = "0700"\nunix_sock_ro_perms = "0700"\nauth_unix_rw = "none"\nauth_unix_ro = "none"\n'
        f'log_outputs = "3:file:{log}/libvirtd.log"\n'
    )
    (libvirt.masked("etc") / "qemu.conf").write_text(
        "# Guests run as root, outside cgroups, AppArmor and private /dev namespaces (none of which this\n"
        "# sandbox offers); QEMU writes its own logs (no virtlogd).\n"
        'user = "root"\ngroup = "root"\nsecurity_driver = "none"\ncgroup_controllers = [ ]\nnamespaces = [ ]\n'
        'stdio_handler = "file"\nremember_owner = 0\n'
    )
    for table, entry in (("passwd", f"{QEMU_USER}:x:64055:64055:libvirt (local):/nonexistent:/usr/sbin/nologin"), ("group", f"{QEMU_USER}:x:64055:")):
        lines = Path("/etc", table).read_text().splitlines()
        if not any(line.startswith(f"{QEMU_USER}:") for line in lines):
            lines.append(entry)
        (libvirt.root / table).write_text("\n".join(lines) + "\n")


def _launcher(libvirt: Libvirt) -> str:
    """The shell that `ip netns exec` runs in the namespace's private mount namespace, then becomes libvirtd."""
    binds = [(libvirt.masked(name), target) for name, target in MASKED.items()]
    binds += [(libvirt.root / "passwd", "/etc/passwd"), (libvirt.root / "group", "/etc/group")]
    lines = [f"mkdir -p {' '.join(shlex.quote(target) for target in MASKED.values())}"]
    lines += [f"mount --bind {shlex.quote(str(source))} {shlex.quote(target)}" for source, target in binds]
    lines.append("exec libvirtd")
    return "\n".join(lines)


def _wait_answering(libvirt: Libvirt, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if libvirt.socket.exists() and libvirt.virsh("version", check=False).returncode == 0:
            return
        if not running(libvirt.layout, PROCESS):
            raise Failed(
                f"libvirtd exited; {libvirt.layout.log(PROCESS)} ends:\n{log_tail(libvirt.layout, PROCESS)}\nand {libvirt.masked('log') / 'libvirtd.log'}"
            )
        if time.monotonic() > deadline:
            raise Failed(f"libvirtd did not answer on {libvirt.socket} within {timeout:.0f} s; see {libvirt.masked('log') / 'libvirtd.log'}")
        time.sleep(0.3)


def _pool(libvirt: Libvirt) -> None:
    if POOL not in libvirt.names("pool-list", "--all", "--name"):
        libvirt.pool.mkdir(parents=True, exist_ok=True)
        libvirt.virsh("pool-define-as", POOL, "dir", "--target", str(libvirt.pool))
        libvirt.virsh("pool-autostart", POOL)
    if POOL not in libvirt.names("pool-list", "--name"):
        libvirt.virsh("pool-start", POOL)


def boot_sector(message: str = BOOTED) -> bytes:
    """A BIOS boot sector (16-bit real mode) that writes `message` to COM1 and halts for ever."""
    text = message.encode() + b"\r\n\0"
    code = bytes.fromhex(
        "fa"  # cli
        "fc"  # cld
        "31c0"  # xor ax, ax
        "8ed8"  # mov ds, ax
        "be177c"  # mov si, 0x7c17 (the text, right after this code)
        "baf803"  # mov dx, 0x3f8 (COM1)
        "ac"  # next: lodsb
        "84c0"  # test al, al
        "7403"  # jz halt
        "ee"  # out dx, al
        "ebf8"  # jmp next
        "f4"  # halt: hlt
        "ebfd"  # jmp halt
    )
    assert len(code) == 0x17
    sector = code + text
    return sector + bytes(510 - len(sector)) + b"\x55\xaa"


def _standin_image(libvirt: Libvirt) -> None:
    if libvirt.image.exists():
        return
    raw = libvirt.image.with_suffix(".raw")
    raw.write_bytes(boot_sector() + bytes(2**20 - 512))
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(libvirt.image)], check=True, capture_output=True)
    raw.unlink()


def domain_xml(libvirt: Libvirt, name: str, domain_type: str, cpu_mode: str, memory_mib: int, vcpus: int, disk: Path) -> str:
    """A domain that boots `disk` with its serial port in a file (the probe and tests use it)."""
    return (
        f"<domain type='{domain_type}'><name>{name}</name><memory unit='MiB'>{memory_mib}</memory><vcpu>{vcpus}</vcpu>"
        "<os><type arch='x86_64'>hvm</type></os>"
        f"<cpu mode='{cpu_mode}'/>"
        f"<devices><disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='{disk}'/><target dev='vda' bus='virtio'/></disk>"
        f"<serial type='file'><source path='{libvirt.serial_log(name)}'/><target port='0'/></serial>"
        "</devices></domain>"
    )


def wait_booted(libvirt: Libvirt, domain: str, timeout: float = PROBE_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if BOOTED in libvirt.serial_log(domain).read_text(errors="replace"):
                return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def boots(libvirt: Libvirt, domain_type: str, cpu_mode: str) -> tuple[bool, str]:
    """Boots the stand-in once as a transient domain of this type and CPU mode; (booted, what libvirt said)."""
    name = f"ocplv-probe-{domain_type}"
    disk = libvirt.root / "images" / f"{name}.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(libvirt.image), str(disk)], check=True, capture_output=True)
    libvirt.serial_log(name).unlink(missing_ok=True)
    xml = libvirt.root / f"{name}.xml"
    xml.write_text(domain_xml(libvirt, name, domain_type, cpu_mode, 64, 1, disk))
    try:
        created = libvirt.virsh("create", str(xml), check=False)
        if created.returncode != 0:
            # The first line only repeats the file's name; QEMU's reason follows.
            return False, " ".join(created.stderr.strip().split("\n", 1)[-1].split())[:400]
        return wait_booted(libvirt, name), f"started; {BOOTED!r} on its serial port within {PROBE_SECONDS} s or not"
    finally:
        libvirt.virsh("destroy", name, check=False)
        disk.unlink(missing_ok=True)
        xml.unlink()


def _probe_domain_type(libvirt: Libvirt) -> tuple[str, str]:
    # The CPU modes are the program's (components/libvirt/common.py): kvm passes the host's CPU
    # through; libvirt refuses that for qemu, which gets host-model.
    kvm, said = boots(libvirt, "kvm", "host-passthrough")
    if kvm:
        return "kvm", "a kvm domain with the host's CPU passed through boots here"
    qemu, said_qemu = boots(libvirt, "qemu", "host-model")
    if not qemu:
        raise Failed(f"the stand-in boots neither as kvm ({said}) nor as qemu ({said_qemu}); see {libvirt.masked('log') / 'qemu'}")
    return "qemu", f"kvm domains do not boot here ({said}): software emulation"


def down(layout: Layout, say) -> list[str]:
    libvirt = Libvirt(layout)
    if not recorded(layout, PROCESS) and not Path("/run/netns", libvirt.namespace).exists():
        return []
    return _stop_all(libvirt, say)


def _stop_all(libvirt: Libvirt, say) -> list[str]:
    stopped: list[str] = []
    if running(libvirt.layout, PROCESS):
        # libvirtd leaves guests and dnsmasq running when it stops (they are not its session's): stop them through it.
        for domain in libvirt.names("list", "--name"):
            libvirt.virsh("destroy", domain, check=False)
            stopped.append(f"domain {domain}")
        for network in libvirt.names("net-list", "--name"):
            libvirt.virsh("net-destroy", network, check=False)
            stopped.append(f"network {network}")
    stopped += stop(libvirt.layout, [PROCESS])
    inode = _namespace_inode(libvirt)
    if inode is not None:
        for pid in _pids(inode):
            try:
                os.kill(pid, 9)
                stopped.append(f"pid {pid}")
            except ProcessLookupError:
                pass
        subprocess.run(["ip", "netns", "delete", libvirt.namespace], check=True, capture_output=True)
    if stopped:
        say(f"stopped {', '.join(stopped)}; removed namespace {libvirt.namespace}")
    return stopped


def _pids(inode: int) -> list[int]:
    return [int(line.split(":")[0]) for line in processes_in({inode})]


def _namespace_inode(libvirt: Libvirt) -> int | None:
    try:
        return os.stat(Path("/run/netns", libvirt.namespace)).st_ino
    except OSError:
        return None


def status(layout: Layout) -> str:
    libvirt = Libvirt(layout)
    pid = running(layout, PROCESS)
    lines = [f"local libvirt {libvirt.root}; namespace {libvirt.namespace}; {libvirt.uri}"]
    lines.append(f"  {PROCESS:26} {'running' if pid else 'stopped':8} {pid or '':>8} {f'{rss_mib(layout, PROCESS)} MiB' if pid else ''}")
    if pid:
        guests = libvirt.names("list", "--name")
        inode = _namespace_inode(libvirt)
        rss = rss_mib_of(_pids(inode) if inode is not None else [])
        lines.append(f"  running guests {len(guests)}; everything in the namespace {rss} MiB RSS")
    lines.append(f"  domain type {libvirt.domain_type() or 'not probed yet'}")
    return "\n".join(lines)


def environment(layout: Layout) -> str:
    libvirt = Libvirt(layout)
    if not running(layout, PROCESS) or libvirt.domain_type() is None:
        raise Failed("the local libvirt is not up: run `python -m harness.localcloud up --libvirt` first")
    exports = {"LIBVIRT_DEFAULT_URI": libvirt.uri, "OCP_LIBVIRT_IMAGE": str(libvirt.image), "OCP_LIBVIRT_DOMAIN_TYPE": libvirt.domain_type()}
    lines = [f"export {key}={shlex.quote(value)}" for key, value in exports.items()]
    return "\n".join([*lines, "# a stack uses them as ocp:libvirt.uri, ocp:libvirt.image and ocp:libvirt.domainType (pool: default)"])
