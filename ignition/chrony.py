"""Time sync (ocp:ntpServers): chrony.conf for the bootstrap, and for masters and workers the
MachineConfigs OpenShift documents for it (`99-master-chrony`, `99-worker-chrony`), added to
the installer's manifests so the MCO owns the file from the first boot on."""

from __future__ import annotations

import base64

import yaml

from cluster.config import ClusterConfig
from ignition.assembly import Additions, File
from ignition.render import render

CHRONY_CONF = "/etc/chrony.conf"
# The Ignition spec the MCO takes in a MachineConfig on every release this program installs.
MACHINE_CONFIG_IGNITION = "3.2.0"


def chrony_conf(config: ClusterConfig) -> str:
    return render("chrony.conf.j2", servers=config.ntp_servers) + "\n"


def bootstrap_additions(config: ClusterConfig) -> Additions:
    return Additions(files=(File(CHRONY_CONF, chrony_conf(config).encode()),)) if config.ntp_servers else Additions()


def machine_configs(config: ClusterConfig) -> dict[str, bytes]:
    """The installer's `openshift/` manifests, by file name; none without ocp:ntpServers."""
    if not config.ntp_servers:
        return {}
    source = "data:text/plain;charset=utf-8;base64," + base64.b64encode(chrony_conf(config).encode()).decode()
    manifests = {}
    for role in ("master", "worker"):
        document = {
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": {"name": f"99-{role}-chrony", "labels": {"machineconfiguration.openshift.io/role": role}},
            "spec": {
                "config": {
                    "ignition": {"version": MACHINE_CONFIG_IGNITION},
                    "storage": {"files": [{"path": CHRONY_CONF, "mode": 0o644, "overwrite": True, "contents": {"source": source}}]},
                }
            },
        }
        manifests[f"99_openshift-machineconfig_99-{role}-chrony.yaml"] = yaml.safe_dump(document, sort_keys=True).encode()
    return manifests
