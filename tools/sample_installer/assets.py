"""The public API: what `create manifests` and `create ignition-configs` write, by relative path."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from tools.sample_installer.bootstrap import _bootstrap_files, _units
from tools.sample_installer.cluster_manifests import _cvo_ignore, _is_machine_manifest, _manifests
from tools.sample_installer.install_config import _Cluster, _parse
from tools.sample_installer.pki import _PKI, _pki
from tools.sample_installer.release import IGNITION_VERSION
from tools.sample_installer.render import _json, _kubeconfig, _pointer_ignition, _yaml
from tools.sample_installer.x509 import _Rand

_PASSWORD_ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHIJKLMNPQRSTUVWXYZ23456789"
_BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _kubeadmin_password(rand: _Rand) -> str:
    raw = rand.text("kubeadmin-password", _PASSWORD_ALPHABET, 20)
    return "-".join(raw[i : i + 5] for i in range(0, 20, 5))


@dataclass(frozen=True)
class _Install:
    """Everything one install-config determines: the same for `create manifests` and
    `create ignition-configs`, so the two steps agree as the real installer's do."""

    cluster: _Cluster
    pki: _PKI
    rand: _Rand
    password: str
    password_hash: str


def _install(install_config_yaml: str) -> _Install:
    rand = _Rand(hashlib.sha256(install_config_yaml.encode()).digest())
    try:
        cluster = _parse(install_config_yaml, rand)
    except (KeyError, TypeError, AttributeError) as err:  # e.g. a network entry without "cidr"
        raise ValueError(f"install-config has an unexpected shape: {err!r}") from err
    password = _kubeadmin_password(rand)
    # Stands in for the bcrypt hash the installer stores; only its shape matters here.
    password_hash = "$2a$10$" + rand.text("kubeadmin-hash", _BCRYPT_ALPHABET, 53)
    return _Install(cluster, _pki(cluster, rand), rand, password, password_hash)


def manifests(install_config_yaml: str) -> dict[str, bytes]:
    """What `create manifests --dir D` writes into D/manifests and D/openshift, by relative path.
    Raises ValueError like generate()."""
    install = _install(install_config_yaml)
    return {path: _yaml(doc).encode() for path, doc in _manifests(install.cluster, install.pki, install.password_hash).items()}


def generate(install_config_yaml: str) -> dict[str, bytes]:
    """Return {relative path: content} exactly like `openshift-install create ignition-configs --dir D` leaves in D.

    Keys are OUTPUT_FILES.  Deterministic: everything is seeded from a sha256 of the install-config.
    Raises ValueError for an install-config that is not a YAML mapping, lacks metadata.name or
    baseDomain, is otherwise malformed, has invalid network CIDRs or a pullSecret that is not JSON.
    """
    return ignition_configs(install_config_yaml, manifests(install_config_yaml))


def _parent_order(names: Iterable[str], generated: list[str]) -> list[str]:
    """The installer's order of /opt/openshift/{manifests,openshift}/*: manifests, then the
    other openshift/ files by name, then its machine assets' files (as generated, added ones last)."""
    rank = {name: index for index, name in enumerate(generated)}

    def key(name: str) -> tuple[Any, ...]:
        if _is_machine_manifest(name):
            return (2, rank.get(name, len(rank)), name)
        return (0 if name.startswith("manifests/") else 1, name)

    return sorted(names, key=key)


def ignition_configs(install_config_yaml: str, manifest_files: Mapping[str, bytes]) -> dict[str, bytes]:
    """What `create ignition-configs` writes given the manifests in its directory (as `create
    manifests` wrote them, minus what the caller deleted, plus what it edited or added), by
    path relative to it. The mapping's order does not matter. Raises ValueError like generate(),
    and for a manifest that is not YAML."""
    install = _install(install_config_yaml)
    cluster, pki = install.cluster, install.pki
    generated = list(_manifests(cluster, pki, install.password_hash))
    parent_files = {name: manifest_files[name] for name in _parent_order(manifest_files, generated)}
    parent_files.update(_cvo_ignore(parent_files))  # replaces cvo-overrides.yaml in place, adds the patch
    certs, bundles = pki.certs, pki.bundles
    server_ca = bundles["kube-apiserver-complete-server-ca-bundle"]
    admin, kubelet = certs["admin-kubeconfig-client"], certs["kubelet-client"]
    api, api_int = f"https://{cluster.api}:6443", f"https://{cluster.api_int}:6443"
    localhost_ca = bundles["kube-apiserver-localhost-ca-bundle"]
    kubeconfigs = {
        "admin": _kubeconfig(cluster, api, server_ca, "admin", admin),
        "admin-internal": _kubeconfig(cluster, api_int, server_ca, "admin", admin),
        "kubelet": _kubeconfig(cluster, api_int, server_ca, "kubelet", kubelet),
        "loopback": _kubeconfig(cluster, "https://localhost:6443", localhost_ca, "loopback", admin),
    }
    bootstrap = {
        "ignition": {"version": IGNITION_VERSION},
        # The user's key (empty when the install-config has none) and the installer's own, to
        # reach the bootstrap node when it fails.
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": [cluster.ssh_key, pki.bootstrap_ssh_key]}]},
        "storage": {"files": _bootstrap_files(cluster, pki, kubeconfigs, parent_files)},
        "systemd": {"units": _units()},
    }
    metadata: dict[str, Any] = {"clusterName": cluster.name, "clusterID": cluster.cluster_id, "infraID": cluster.infra_id}
    if cluster.openstack:
        metadata["openstack"] = {"cloud": cluster.openstack.cloud, "identifier": {"openshiftClusterID": cluster.infra_id}}
    metadata["featureSet"] = cluster.install_config.get("featureSet") or ""
    metadata["customFeatureSet"] = None  # set for featureSet CustomNoUpgrade only, which the fake does not model
    root_ca = certs["root-ca"].cert
    return {
        "bootstrap.ign": _json(bootstrap),
        "master.ign": _pointer_ignition(cluster, "master", root_ca),
        "worker.ign": _pointer_ignition(cluster, "worker", root_ca),
        "metadata.json": _json(metadata),
        "auth/kubeconfig": kubeconfigs["admin"].encode(),
        "auth/kubeadmin-password": install.password.encode(),
    }


def write_files(files: dict[str, bytes], directory: Path) -> None:
    for relative, content in files.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
