"""etcd on a local disk (ocp:masters.etcdDisk): the masters' MachineConfig `98-var-lib-etcd`, added to the
installer's `openshift/` manifests in both modes, so that the MCO renders it into the masters' first-boot
config and owns it from then on.

What it does is openshift-docs' "Deploying on OpenStack with rootVolume and etcd on local disk" (4.13+,
modules/installation-osp-local-disk-deployment.adoc): Nova formats the flavor's ephemeral disk and labels
it `ephemeral0`; a oneshot makes an XFS file system labelled `local-etcd` on it once (only while no such
label exists), required by that label's device unit; a mount unit mounts it on /var/lib/etcd with project
quotas before local-fs.target; a oneshot restores the SELinux labels under it before CRI-O starts etcd.
The guide's migration unit (copying an existing member directory off the root) is left out: at install
there is none, and on day 2 the key is refused. Built from data; the units are checked by
`systemd-analyze verify` and the config by `ignition-validate` (tests/ignition/test_etcd_disk.py)."""

from __future__ import annotations

import yaml

from cluster.config import ClusterConfig
from ignition.chrony import MACHINE_CONFIG_IGNITION

NAME = "98-var-lib-etcd"
MANIFEST = f"98_openshift-machineconfig_{NAME}.yaml"
# Nova's label for a server's first ephemeral disk (the libvirt driver's `ephemeral0`), and the file system's.
EPHEMERAL = "/dev/disk/by-label/ephemeral0"
LOCAL_ETCD = "/dev/disk/by-label/local-etcd"
# systemd's name for that path's device unit (systemd-escape --path): what the file system's oneshot is required by.
LOCAL_ETCD_DEVICE = r"dev-disk-by\x2dlabel-local\x2detcd.device"


def _unit(sections: dict[str, list[tuple[str, str]]]) -> str:
    return "\n".join(f"[{name}]\n" + "".join(f"{key}={value}\n" for key, value in entries) for name, entries in sections.items())


UNITS: dict[str, str] = {
    "var-lib-etcd.mount": _unit({
        "Unit": [("Description", "etcd's data on the local disk")],
        "Mount": [("What", LOCAL_ETCD), ("Where", "/var/lib/etcd"), ("Type", "xfs"), ("Options", "defaults,prjquota")],
        "Install": [("WantedBy", "local-fs.target")],
    }),
    "create-local-etcd.service": _unit({
        "Unit": [
            ("Description", "XFS file system for etcd on the ephemeral disk"),
            ("DefaultDependencies", "no"),
            ("After", "local-fs-pre.target"),
            # Once: a reboot finds the label and keeps the data.
            ("ConditionPathIsSymbolicLink", f"!{LOCAL_ETCD}"),
        ],
        "Service": [
            ("Type", "oneshot"),
            ("RemainAfterExit", "yes"),
            # No ephemeral disk (a flavor without one, a server made without it): fail saying so, format nothing else.
            ("ExecStart", f'/bin/bash -c "[ -L {EPHEMERAL} ] || {{ echo The ephemeral disk {EPHEMERAL} does not exist >&2; exit 1; }}"'),
            ("ExecStart", f"/usr/sbin/mkfs.xfs -f -L local-etcd {EPHEMERAL}"),
        ],
        "Install": [("RequiredBy", LOCAL_ETCD_DEVICE)],
    }),
    "relabel-var-lib-etcd.service": _unit({
        "Unit": [("Description", "SELinux labels of etcd's data on the local disk"), ("After", "var-lib-etcd.mount"), ("Before", "crio.service")],
        "Service": [
            ("Type", "oneshot"),
            ("RemainAfterExit", "yes"),
            # Only where a label is wrong: the recursive pass is slow on a large data directory.
            ("ExecCondition", '/bin/bash -c "[ -n \\"$(/usr/sbin/restorecon -nv /var/lib/etcd)\\" ]"'),
            ("ExecStart", "/usr/sbin/restorecon -R /var/lib/etcd"),
        ],
        "Install": [("RequiredBy", "var-lib-etcd.mount")],
    }),
}


def machine_config() -> dict:
    """The MachineConfig, as the MCO reads it (spec.config is an Ignition config of MACHINE_CONFIG_IGNITION)."""
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": NAME, "labels": {"machineconfiguration.openshift.io/role": "master"}},
        "spec": {
            "config": {
                "ignition": {"version": MACHINE_CONFIG_IGNITION},
                "systemd": {"units": [{"name": name, "enabled": True, "contents": contents} for name, contents in UNITS.items()]},
            }
        },
    }


def machine_configs(config: ClusterConfig) -> dict[str, bytes]:
    """The installer's `openshift/` manifests, by file name; none without ocp:masters.etcdDisk."""
    if config.masters.etcd_disk is None:
        return {}
    return {MANIFEST: yaml.safe_dump(machine_config(), sort_keys=True).encode()}
