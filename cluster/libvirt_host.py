"""libvirt: a kvm domain needs a usable /dev/kvm where it runs. The one check that reads this
machine (it opens the device): when ocp:libvirt.uri names this machine, components/program.py
checks it with the local files, before any resource.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from urllib.parse import urlsplit

from cluster.config import ClusterConfig

# QEMU opens it for every kvm domain; read at call time, so tests can point it elsewhere.
KVM_DEVICE = Path("/dev/kvm")
# The URIs whose QEMU runs on this machine: no host (qemu:///system, qemu:///session, any query).
LOCAL_SCHEMES = ("qemu", "qemu+unix")


def libvirt_is_local(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme in LOCAL_SCHEMES and not parts.netloc


def kvm_unusable(device: Path, system: bool) -> str | None:
    """Why QEMU could not run a kvm domain with this device, or None. With qemu:///system QEMU
    runs as libvirt's own user (usually in the kvm group): a device this user may not open is
    no proof it cannot."""
    try:
        os.close(os.open(device, os.O_RDWR | os.O_CLOEXEC))
    except FileNotFoundError:
        return f"there is no {device}"
    except OSError as error:
        if system and error.errno in (errno.EACCES, errno.EPERM) and os.geteuid() != 0:
            return None
        return f"{device} cannot be opened read-write ({error.strerror})"
    return None


def libvirt_host_problems(config: ClusterConfig, kvm_device: Path | None = None) -> list[str]:
    """A kvm domain on this machine without usable KVM fails when QEMU starts, midway through `pulumi up`."""
    settings = config.libvirt
    if settings is None or settings.domain_type != "kvm" or not libvirt_is_local(settings.uri):
        return []
    device = kvm_device or KVM_DEVICE
    why = kvm_unusable(device, urlsplit(settings.uri).path == "/system")
    if why is None:
        return []
    return [
        f"ocp:libvirt.domainType: kvm (the default), but {why} on this machine, where ocp:libvirt.uri "
        f"{settings.uri} runs the domains: set ocp:libvirt.domainType: qemu (software emulation, far slower; "
        "docs/libvirt.md) or enable KVM (virtualisation on in the firmware, the kvm_intel or kvm_amd module "
        f"loaded, nested virtualisation on a VM, read-write access to {device})"
    ]
