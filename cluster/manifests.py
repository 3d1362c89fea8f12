"""The user's own manifests (ocp:installer.extraManifests): the *.yaml, *.yml and *.json files
of one directory, each checked as YAML before anything runs, added to the installer's
`openshift/` between `create manifests` and `create ignition-configs` (cluster/installer.py),
as OpenShift's docs do for MachineConfigs; those of its subdirectory `manifests/` go to the
installer's `manifests/` (what must exist before the cluster's operators start), as the
installer's own directory has them: one key, one record of digests, one warning on day 2.
The installer's cloud provider config there is not replaced but merged into
(ocp:installer.cloudProviderConfig, cluster/cloud_provider_config.py).

The bootstrap applies every file of both directories, so a file holding an object the installer
makes (INSTALLER_OBJECTS: the installer's cloud provider config, its cloud credentials, ...)
would replace it whatever the file's name: each document's (group, kind, namespace, name) is
compared with the installer's, and a clash refused naming the file and the object. Only regular
files are read, opened without following a link and without waiting (a FIFO would hang the run):
a link out of the directory, a FIFO or a device is refused. Pure Python but for reading that
directory."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

KEY = "ocp:installer.extraManifests"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# The subdirectory whose files go to the installer's manifests/ (named so in the run script's list).
EARLY = "manifests"
# The installer's own file there that users used to edit by hand: merged into, never replaced.
CLOUD_PROVIDER_CONFIG = "cloud-provider-config.yaml"
# The run script gets every added manifest in one environment string (EXTRA_MANIFESTS), which Linux
# caps at 128 KiB (MAX_ARG_STRLEN); the rest is left to ocp:ntpServers' MachineConfigs.
ENVIRONMENT_BUDGET = 120 * 1024
# Names the run script writes without quoting problems.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# What `openshift-install create manifests` writes (4.19, both modes), by object (apiVersion's group, kind,
# namespace, name) -> its file; the Machine API's machines a UPI install deletes (UPI_REMOVED_MANIFESTS) left out.
# Held to the real installer (platform none) and the fake (both modes) by tests/cluster/test_manifests.py; platform
# openstack's three to the installer's source (pkg/asset/manifests/cloudproviderconfig.go and openshift.go, from
# data/data/manifests/openshift/cloud-creds-secret.yaml.template and role-cloud-creds-secret-reader.yaml.template).
INSTALLER_OBJECTS: dict[tuple[str, str, str, str], str] = {
    ("", "ConfigMap", "kube-system", "cluster-config-v1"): "manifests/cluster-config.yaml",
    ("", "ConfigMap", "kube-system", "root-ca"): "manifests/kube-system-configmap-root-ca.yaml",
    ("", "ConfigMap", "openshift-config", "cloud-provider-config"): "manifests/cloud-provider-config.yaml",
    ("", "ConfigMap", "openshift-config", "openshift-install-manifests"): "openshift/openshift-install-manifests.yaml",
    ("", "ConfigMap", "openshift-machine-config-operator", "machine-config-server-ca"): "manifests/machine-config-server-ca-configmap.yaml",
    ("", "Secret", "kube-system", "kube-cloud-cfg"): "manifests/kube-cloud-config.yaml",
    ("", "Secret", "kube-system", "kubeadmin"): "openshift/99_kubeadmin-password-secret.yaml",
    ("", "Secret", "kube-system", "openstack-credentials"): "openshift/99_cloud-creds-secret.yaml",
    ("", "Secret", "openshift-config", "pull-secret"): "manifests/openshift-config-secret-pull-secret.yaml",
    ("", "Secret", "openshift-machine-api", "master-user-data"): "openshift/99_openshift-cluster-api_master-user-data-secret.yaml",
    ("", "Secret", "openshift-machine-api", "worker-user-data"): "openshift/99_openshift-cluster-api_worker-user-data-secret.yaml",
    ("", "Secret", "openshift-machine-config-operator", "machine-config-server-ca"): "manifests/machine-config-server-ca-secret.yaml",
    ("", "Secret", "openshift-machine-config-operator", "machine-config-server-tls"): "manifests/machine-config-server-tls-secret.yaml",
    ("config.openshift.io", "ClusterVersion", "openshift-cluster-version", "version"): "manifests/cvo-overrides.yaml",
    ("config.openshift.io", "DNS", "", "cluster"): "manifests/cluster-dns-02-config.yml",
    ("config.openshift.io", "FeatureGate", "", "cluster"): "openshift/99_feature-gate.yaml",
    ("config.openshift.io", "Infrastructure", "", "cluster"): "manifests/cluster-infrastructure-02-config.yml",
    ("config.openshift.io", "Ingress", "", "cluster"): "manifests/cluster-ingress-02-config.yml",
    ("config.openshift.io", "Network", "", "cluster"): "manifests/cluster-network-02-config.yml",
    ("config.openshift.io", "Proxy", "", "cluster"): "manifests/cluster-proxy-01-config.yaml",
    ("config.openshift.io", "Scheduler", "", "cluster"): "manifests/cluster-scheduler-02-config.yml",
    ("machineconfiguration.openshift.io", "MachineConfig", "", "99-master-ssh"): "openshift/99_openshift-machineconfig_99-master-ssh.yaml",
    ("machineconfiguration.openshift.io", "MachineConfig", "", "99-worker-ssh"): "openshift/99_openshift-machineconfig_99-worker-ssh.yaml",
    ("rbac.authorization.k8s.io", "Role", "kube-system", "openstack-creds-secret-reader"): "openshift/99_role-cloud-creds-secret-reader.yaml",
}
# What to write instead of replacing these.
_INSTEAD = {
    ("", "ConfigMap", "openshift-config", "cloud-provider-config"): (
        "its [Global] section holds what the installer read from your cloud): write your settings in "
        "ocp:installer.cloudProviderConfig instead, which merges them into it"
    ),
    ("", "Secret", "kube-system", "openstack-credentials"): "made from your clouds.yaml entry, ocp:openstack.cloud): leave it out",
}


def read_extra_manifests(directory: str | None, ours: Mapping[str, bytes] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The directory's manifests by file name, and one problem per bad file (each naming the key
    and the file); nothing without a directory. `ours`: the program's own manifests by file name
    (ocp:ntpServers' MachineConfigs), which no file may replace by name or by object."""
    if directory is None:
        return {}, []
    path = Path(directory)
    if not path.is_dir():
        return {}, [f"{KEY}: {directory} is not a directory: name the directory that holds the manifests to add"]
    early = path / EARLY
    if early.is_symlink():
        return {}, [f"{KEY}: {EARLY}/ in {directory} is a symbolic link, which this program does not follow: make it a directory there"]
    try:
        names = [(p, p.name) for p in _listed(path)]
        if early.is_dir():
            names += [(p, f"{EARLY}/{p.name}") for p in _listed(early)]
    except OSError as error:
        return {}, [f"{KEY}: {directory} cannot be read ({error.strerror})"]
    if not names:
        return {}, [f"{KEY}: {directory} holds no .yaml, .yml or .json file (nor its {EARLY}/): add the manifests, or remove the key"]
    files: dict[str, bytes] = {}
    problems = []
    for file, name in names:
        try:
            data = _read_regular(file)
        except OSError as error:
            problems.append(f"{KEY}: {name} in {directory} {_unreadable(error)}")
            continue
        problem = manifest_problem(file.name, data) or (
            _replaces_early(file.name) if name != file.name else _replaces(file.name, data, ours or {})
        ) or _installers(data)
        if problem:
            problems.append(f"{KEY}: {name} in {directory} {problem}")
        else:
            files[name] = data
    size = sum(len(name) + 2 + 4 * -(-len(data) // 3) for name, data in files.items())
    if size > ENVIRONMENT_BUDGET:
        problems.append(
            f"{KEY}: the manifests in {directory} take {size // 1024} KiB as the installer's command carries them "
            f"(base64, in one environment string, which Linux caps at 128 KiB), over {ENVIRONMENT_BUDGET // 1024} KiB: "
            "keep bulky data out of install-time manifests and `oc apply -f` it once the cluster runs"
        )
    return files, problems


def _listed(directory: Path) -> list[Path]:
    """The directory's entries with a manifest's suffix but its subdirectories (a link is listed: it is refused)."""
    return [p for p in sorted(directory.iterdir()) if p.suffix in MANIFEST_SUFFIXES and (p.is_symlink() or not p.is_dir())]


def _read_regular(file: Path) -> bytes:
    """A regular file's bytes, at most one read past the budget: opened without following a link or waiting for a writer."""
    descriptor = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "FIFO" if stat.S_ISFIFO(mode) else "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "socket")
        chunks, size = [], 0
        while size <= ENVIRONMENT_BUDGET and (chunk := os.read(descriptor, 65536)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _unreadable(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "is a symbolic link, which this program does not follow: copy the file itself into the directory"
    if error.errno == errno.EINVAL:
        return f"is a {error.strerror}, not a regular file: take it out of the directory"
    return f"cannot be read ({error.strerror})"


def _objects(data: bytes) -> set[tuple[str, str, str, str]]:
    """Each object the file holds (a List's items too): its apiVersion's group, kind, namespace and name."""
    found = set()
    for document in _documents(d for d in yaml.safe_load_all(data) if isinstance(d, dict)):
        metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
        group = str(document.get("apiVersion") or "").rpartition("/")[0]
        found.add((group, str(document.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name"))))
    return found


def _documents(documents: Iterable[dict]) -> Iterable[dict]:
    for document in documents:
        yield document
        if str(document.get("kind", "")).endswith("List") and isinstance(document.get("items"), list):
            yield from _documents(item for item in document["items"] if isinstance(item, dict))


def _shown(key: tuple[str, str, str, str]) -> str:
    _, kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _installers(data: bytes) -> str | None:
    """Why the file would replace an object the installer makes (the bootstrap applies both), or None."""
    clash = sorted(_objects(data) & set(INSTALLER_OBJECTS))
    if not clash:
        return None
    key = clash[0]
    instead = _INSTEAD.get(key, "this program sets what it must of it from the stack): leave it out, or change it once the cluster runs")
    more = f" (and {', '.join(_shown(k) for k in clash[1:])})" if clash[1:] else ""
    return f"holds {_shown(key)}{more}, which the installer makes and this would replace ({INSTALLER_OBJECTS[key]}; {instead}"


def _replaces_early(name: str) -> str | None:
    if name == CLOUD_PROVIDER_CONFIG:
        return (
            "would replace the installer's cloud provider config (its [Global] section holds what the installer read from "
            "your cloud): write your settings in ocp:installer.cloudProviderConfig instead, which merges them into it"
        )
    return None


def _replaces(name: str, data: bytes, ours: Mapping[str, bytes]) -> str | None:
    # Both would land in openshift/: one file would silently replace the other, or two objects share a name.
    if name in ours:
        return "has the name of a manifest this program makes from ocp:ntpServers: rename it, or leave ntpServers out"
    theirs = {_shown(key) for made in ours.values() for key in _objects(made)}
    clash = sorted(theirs & {_shown(key) for key in _objects(data)})
    if clash:
        return f"holds {', '.join(clash)}, which this program makes from ocp:ntpServers: remove it, or leave ntpServers out"
    return None


def manifest_problem(name: str, data: bytes) -> str | None:
    """Why the installer or the bootstrap would not take this file as a manifest, or None."""
    if not _SAFE_NAME.match(name):
        return "has a name the installer's directory should not take: rename it with letters, digits, '.', '_' and '-' only"
    try:
        documents = [document for document in yaml.safe_load_all(data) if document is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        return f"is not valid YAML{line} ({getattr(error, 'problem', None) or error}): fix it, or move it out of the directory"
    if not documents:
        return "is empty: remove it"
    for number, document in enumerate(documents, 1):
        which = f"document {number}" if len(documents) > 1 else "it"
        if not isinstance(document, dict) or not all(isinstance(document.get(k), str) and document[k] for k in ("apiVersion", "kind")):
            return f"is not a Kubernetes manifest ({which} lacks apiVersion or kind): write objects with apiVersion, kind and metadata.name"
        metadata = document.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            return f"is not a Kubernetes manifest ({which} has no metadata.name)"
    return None


def digests(files: Mapping[str, bytes]) -> dict[str, str]:
    """What the install record keeps of each file: its name and sha256."""
    return {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in files.items()}
