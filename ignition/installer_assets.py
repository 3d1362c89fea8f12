"""The files `openshift-install create ignition-configs` writes, parsed. Pure Python."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.identity import ClusterIdentity

ASSET_FILES = (
    "bootstrap.ign",
    "master.ign",
    "worker.ign",
    "metadata.json",
    "auth/kubeconfig",
    "auth/kubeadmin-password",
)


@dataclass(frozen=True)
class InstallerAssets:
    bootstrap: dict[str, Any]
    master: dict[str, Any]
    worker: dict[str, Any]
    metadata: dict[str, Any]
    kubeconfig: str
    kubeadmin_password: str

    @property
    def infra_id(self) -> str:
        return self.metadata["infraID"]

    @property
    def identity(self) -> ClusterIdentity:
        # The kubeadmin password is random per installer run and secret: a fine root for
        # per-cluster secrets such as the VRRP password.
        root = hashlib.sha256(b"ocp-cluster-secret\0" + self.kubeadmin_password.encode()).digest()
        return ClusterIdentity(infra_id=self.infra_id, secret=root)

    @classmethod
    def from_files(cls, files: Mapping[str, bytes]) -> InstallerAssets:
        missing = [name for name in ASSET_FILES if name not in files]
        if missing:
            raise ValueError(f"installer output lacks {', '.join(missing)}")
        return cls(
            bootstrap=json.loads(files["bootstrap.ign"]),
            master=json.loads(files["master.ign"]),
            worker=json.loads(files["worker.ign"]),
            metadata=json.loads(files["metadata.json"]),
            kubeconfig=files["auth/kubeconfig"].decode(),
            kubeadmin_password=files["auth/kubeadmin-password"].decode().strip(),
        )


def read_assets_dir(directory: str | Path) -> dict[str, bytes]:
    """Read an installer's output directory; raises FileNotFoundError naming what is missing."""
    directory = Path(directory)
    missing = [name for name in ASSET_FILES if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{directory} lacks {', '.join(missing)}")
    return {name: (directory / name).read_bytes() for name in ASSET_FILES}


def bundle(files: Mapping[str, bytes]) -> str:
    """The line format the installer command prints: `<path> <base64>` per file."""
    return "".join(f"{name} {base64.b64encode(files[name]).decode()}\n" for name in ASSET_FILES)


def unbundle(text: str) -> dict[str, bytes]:
    files = {}
    for line in text.splitlines():
        if line.strip():
            name, _, payload = line.partition(" ")
            files[name] = base64.b64decode(payload)
    return files
