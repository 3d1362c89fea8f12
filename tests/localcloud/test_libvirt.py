"""The local libvirt (harness/localcloud/libvirt.py) itself: what `env` gives, the stand-in image,
the confinement. The kvm stack running on it: test_libvirt_lifecycle.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


from harness.localcloud.libvirt import BOOTED, POOL, PROCESS, boot_sector
from harness.localcloud.processes import recorded
from tests.localcloud.conftest import libvirt_exports as exports

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
