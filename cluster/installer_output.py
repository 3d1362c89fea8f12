"""What `openshift-install` leaves behind, as the program reads it. Pure Python.

Its files (`ASSET_FILES`) reach the program as `<path> <base64>` lines (`bundle`), plus three of
the run script's own (the install record, the release payload's images, the cluster's random root), parsed into
`InstallerAssets`; `check_assets` says whether a set of configs belongs to this stack.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatch
from functools import cached_property
from ipaddress import ip_network
from pathlib import Path
from typing import Any

from cluster import machine_yaml
from cluster.config import ClusterConfig
from cluster.dataurl import file_contents
from cluster.identity import ClusterIdentity

ASSET_FILES = (
    "bootstrap.ign",
    "master.ign",
    "worker.ign",
    "metadata.json",
    "auth/kubeconfig",
    "auth/kubeadmin-password",
)
# Lines the run script adds to the installer's files.
RECORD_FILE = "ocp-install-record.json"
RELEASE_FILE = "ocp-release-images.json"
# 32 random bytes, the root of every secret the program derives for the cluster (cluster/identity.py).
ROOT_FILE = "ocp-cluster-root"
ROOT_BYTES = 32
# The installer's infra ID: the cluster name with anything but [A-Za-z0-9-] as '-', runs of '-' as one,
# cut to 21 characters (27 less the suffix), trailing '-' trimmed, then '-' and 5 random characters
# (openshift/installer pkg/asset/installconfig/clusterid.go, generateInfraID, maxLen 27, randomLen 5).
# It names files and directories (tools.plan's nodes/<server>) and cloud resources: nothing else passes.
INFRA_ID = re.compile(r"(?!-)(?!.*--)[A-Za-z0-9-]{0,21}(?<!-)-[a-z0-9]{5}")
# Images of the release payload the on-node networking runs (platform none), by payload name.
RELEASE_COMPONENTS = ("keepalived-ipfailover", "haproxy-router", "coredns")
# Integrated mode is UPI: the machines are this program's, so the installer's Machine and
# MachineSet manifests go before the ignition configs are made (install_upi.md for OpenStack).
UPI_REMOVED_MANIFESTS = (
    "openshift/99_openshift-cluster-api_master-machines-*.yaml",
    "openshift/99_openshift-cluster-api_worker-machineset-*.yaml",
    "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
)
# Marks a directory the run script made, so it never deletes one it did not.
DIR_MARKER = ".ocp-pulumi-installer-dir"
# The bundle as last printed, kept beside the configs for the command's update path.
KEPT_BUNDLE = ".ocp-pulumi-bundle"
# Where the bootstrap's config carries the install-config the installer consumed.
CLUSTER_CONFIG_MANIFEST = "/opt/openshift/manifests/cluster-config.yaml"
# Several certificates in the configs are valid 24 hours; leave time to boot.
MAX_BOOTSTRAP_AGE_HOURS = 20
# From this minor on, once any MachineSet exists, the MCO re-signs the machine config server's
# certificate with a CA of its own and rewrites the user-data secrets (MCO release-4.19
# pkg/controller/certrotation): the installer's pointers then fail TLS on new nodes, whatever
# release the cluster was installed at (one installed at 4.17 and upgraded rotates too).
MCS_CA_ROTATION_MINOR = 19
# Where the running cluster keeps the pointer of each role that it trusts (from 4.14, so every
# release this program installs; the MCO rewrites both when it rotates its CA, as the CPMS boots
# masters from it).
POINTER_SECRETS = {
    "master": ("openshift-machine-api", "master-user-data-managed", "userData"),
    "worker": ("openshift-machine-api", "worker-user-data-managed", "userData"),
}
WORKER_POINTER_SECRET = POINTER_SECRETS["worker"]


# --------------------------------------------------------------------------- the installer's output


@dataclass(frozen=True)
class InstallRecord:
    """When the configs were made, which generation, and the stack's settings then (absent
    for configs the user generated: only what the configs themselves say is known)."""

    generated_at: float
    generation: int = 1
    stack: Mapping[str, Any] | None = None
    # Made by a release whose masters have pointer commands from install on: every one made
    # later is a master made again. An earlier stack makes them on its next run, masters running.
    master_pointers: bool = False

    def age_hours(self, now: float) -> float:
        return (now - self.generated_at) / 3600


@dataclass(frozen=True)
class InstallerAssets:
    bootstrap: dict[str, Any]
    master: dict[str, Any]
    worker: dict[str, Any]
    metadata: dict[str, Any]
    kubeconfig: str
    kubeadmin_password: str
    record: InstallRecord | None = None
    release_image: str | None = None
    release_images: Mapping[str, str] = field(default_factory=dict)
    # The run script's random bytes (ROOT_FILE); None in a bundle recorded before it made them.
    root: bytes | None = None

    @property
    def infra_id(self) -> str:
        return self.metadata["infraID"]

    @property
    def identity(self) -> ClusterIdentity:
        if self.root is not None:
            return ClusterIdentity(self.infra_id, self.root, self.release_image, self.release_images)
        # Recorded before the random root: the kubeadmin password's hash, as then, so that the VRRP
        # passwords of masters made now match the running ones (from_files refuses an empty password).
        legacy = hashlib.sha256(b"ocp-cluster-secret\0" + self.kubeadmin_password.encode()).digest()
        return ClusterIdentity(self.infra_id, legacy, self.release_image, self.release_images, legacy=True)

    # Read once per run: the program asks for each several times.
    @cached_property
    def api_url(self) -> str:
        """The API server's URL the installer's admin kubeconfig names ("" where it names none)."""
        kubeconfig = machine_yaml.load(self.kubeconfig) or {}
        return next((entry.get("cluster", {}).get("server", "") for entry in kubeconfig.get("clusters") or []), "")

    @cached_property
    def install_config(self) -> dict[str, Any]:
        """The install-config the installer consumed, as the bootstrap hands it to the cluster
        (`cluster-config-v1`); without the pull secret."""
        for entry in self.bootstrap.get("storage", {}).get("files", []):
            if entry.get("path") == CLUSTER_CONFIG_MANIFEST:
                manifest = machine_yaml.load(file_contents(entry) or b"{}") or {}
                return machine_yaml.load(manifest.get("data", {}).get("install-config", "")) or {}
        return {}

    def pointer_from_cluster(self, bootstrap_enabled: bool) -> bool:
        """Whether a master or worker created now must get the pointer the running cluster serves instead of
        the installer's: once the bootstrap is gone (day 2), on every release. The configs name the
        release the cluster was installed at, not the one it runs: one installed before 4.19 and
        upgraded gets the MCO's CA rotation too, and the managed secret is right on every release."""
        return not bootstrap_enabled

    @property
    def bootstrap_manifests(self) -> list[str]:
        """The manifests the bootstrap applies, relative to /opt/openshift (`openshift/...`)."""
        paths = (entry.get("path", "") for entry in self.bootstrap.get("storage", {}).get("files", []))
        return sorted(
            path.removeprefix("/opt/openshift/")
            for path in paths
            if path.startswith(("/opt/openshift/manifests/", "/opt/openshift/openshift/"))
        )

    @classmethod
    def from_files(cls, files: Mapping[str, bytes]) -> InstallerAssets:
        missing = [name for name in ASSET_FILES if name not in files]
        if missing:
            raise ValueError(f"installer output lacks {', '.join(missing)}")
        record = release = None
        if RECORD_FILE in files:
            data = json.loads(files[RECORD_FILE])
            record = InstallRecord(
                float(data["generatedAt"]), int(data.get("generation", 1)), data.get("stack"), bool(data.get("masterPointers"))
            )
        if RELEASE_FILE in files:
            release = json.loads(files[RELEASE_FILE])
        metadata = json.loads(files["metadata.json"])
        infra_id = metadata.get("infraID") if isinstance(metadata, dict) else None
        if not isinstance(infra_id, str) or not INFRA_ID.fullmatch(infra_id):
            raise ValueError(
                f"installer output: metadata.json's infraID {infra_id!r} is not an infra ID openshift-install makes "
                "(the cluster name's first 21 characters of [A-Za-z0-9-], '-' and 5 random characters): point "
                "ocp:installer.assetsDir (or --assets) at the --dir of `openshift-install create ignition-configs`"
            )
        password = files["auth/kubeadmin-password"].decode().strip()
        if not password:
            raise ValueError(
                "installer output: auth/kubeadmin-password is empty: the cluster would have no admin login, and a "
                "stack recorded before ocp-cluster-root derives its secrets from it: point ocp:installer.assetsDir "
                "(or --assets) at the --dir of `openshift-install create ignition-configs`, which writes one"
            )
        root = files.get(ROOT_FILE)
        if root is not None and len(root) != ROOT_BYTES:
            raise ValueError(f"installer output: {ROOT_FILE} holds {len(root)} bytes, not {ROOT_BYTES}: the bundle was altered")
        return cls(
            bootstrap=json.loads(files["bootstrap.ign"]),
            master=json.loads(files["master.ign"]),
            worker=json.loads(files["worker.ign"]),
            metadata=metadata,
            kubeconfig=files["auth/kubeconfig"].decode(),
            kubeadmin_password=password,
            record=record,
            release_image=(release or {}).get("release") or None,
            release_images=dict((release or {}).get("images") or {}),
            root=root,
        )


def missing_asset_files(directory: str | Path) -> list[str]:
    directory = Path(directory)
    return [name for name in ASSET_FILES if not (directory / name).is_file()]


def bundle(files: Mapping[str, bytes]) -> str:
    """The line format the run script prints: `<path> <base64>` per file, extras last."""
    names = [*ASSET_FILES, *(name for name in (RECORD_FILE, RELEASE_FILE, ROOT_FILE) if name in files)]
    return "".join(f"{name} {base64.b64encode(files[name]).decode()}\n" for name in names)


def unbundle(text: str) -> dict[str, bytes]:
    files = {}
    for line in text.splitlines():
        if line.strip():
            name, _, payload = line.partition(" ")
            files[name] = base64.b64decode(payload)
    return files


# --------------------------------------------------------------------------- do the configs fit the stack


def installed_settings(assets: InstallerAssets) -> dict[str, Any]:
    """What the configs themselves say about the stack they were made for, in stack-file
    keys: the install-config carried in the bootstrap config, and the infra ID's name."""
    document = assets.install_config
    settings: dict[str, Any] = {}
    name = (document.get("metadata") or {}).get("name") or assets.metadata.get("clusterName")
    if name:
        settings["clusterName"] = name
    if document.get("baseDomain"):
        settings["baseDomain"] = document["baseDomain"]
    networks = (document.get("networking") or {}).get("machineNetwork") or []
    if networks:
        settings["machineNetwork"] = one_or_all([ip_network(network["cidr"]) for network in networks])
    replicas = (document.get("controlPlane") or {}).get("replicas")
    if replicas is not None:
        settings["masters.count"] = int(replicas)
    if document.get("sshKey"):
        settings["sshKey"] = document["sshKey"].strip()
    if document.get("additionalTrustBundle"):
        settings["additionalTrustBundle"] = document["additionalTrustBundle"]
    platform = document.get("platform") or {}
    for key, field_name in (("apiVip", "apiVIPs"), ("ingressVip", "ingressVIPs")):
        for section in platform.values():
            if isinstance(section, dict) and section.get(field_name):
                settings[key] = one_or_all(section[field_name])
    return settings


def one_or_all(values: Any) -> str | list[str]:
    """One family's value as one string, as the stack file and the install record write it; two as a list."""
    shown = [str(value) for value in values]
    return shown[0] if len(shown) == 1 else shown


def check_assets(config: ClusterConfig, api_vip: str | list[str], ingress_vip: str | list[str], assets: InstallerAssets) -> list[str]:
    """Configs made for another cluster (name, domain, machine network, VIPs, control plane
    size) would build nodes that never join this one: one problem per disagreement."""
    stack = {
        "clusterName": config.cluster_name,
        "baseDomain": config.base_domain,
        "machineNetwork": one_or_all(config.machine_networks),
        "masters.count": config.masters.count,
        "apiVip": api_vip,
        "ingressVip": ingress_vip,
    }
    problems = []
    for key, value in installed_settings(assets).items():
        if key in stack and stack[key] != value:
            problems.append(
                f"ocp:{key}: the stack says {stack[key]} but the installer configs were made for {value}: "
                "point ocp:installer.assetsDir (or --assets) at the configs of this cluster, or regenerate them "
                "from this stack"
            )
    problems += _platform_problems(config, assets)
    return problems


def _platform_problems(config: ClusterConfig, assets: InstallerAssets) -> list[str]:
    """Configs for the other mode would bring the wrong VIP handling (two VRRP stacks, or none);
    integrated configs that still hold the installer's machines would make a second set of servers."""
    platforms = sorted((assets.install_config.get("platform") or {}).keys())
    wanted = "openstack" if config.integrated else "none"
    if platforms and platforms != [wanted]:
        key = "openstack.mode" if config.platform == "openstack" else "platform"
        return [
            f"ocp:{key}: the stack needs configs for platform: {wanted} but the installer configs were made for "
            f"platform: {platforms[0]}: make them with platform: {wanted}, or leave ocp:installer.assetsDir out so "
            "that the program runs the installer with this stack's install-config"
        ]
    if not config.integrated:
        return []
    left = [name for name in assets.bootstrap_manifests if any(fnmatch(name, p) for p in UPI_REMOVED_MANIFESTS)]
    if not left:
        return []
    return [
        f"ocp:installer.assetsDir: the configs still hold the installer's machines ({', '.join(left[:3])}"
        f"{', ...' if len(left) > 3 else ''}): the Machine API would make servers beside this program's. Delete "
        f"{', '.join(UPI_REMOVED_MANIFESTS)} after `openshift-install create manifests` and before `create ignition-configs`"
    ]
