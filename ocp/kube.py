"""The cluster's API through `oc` or `kubectl` (ocp:installer.oc), with the stack's kubeconfig."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any


class KubeError(RuntimeError):
    pass


class Kube:
    def __init__(self, binary: str, kubeconfig: Path, timeout: float = 30):
        self.binary, self.kubeconfig, self.timeout = binary, kubeconfig, timeout

    def run(self, *args: str) -> str:
        command = [self.binary, f"--kubeconfig={self.kubeconfig}", f"--request-timeout={int(self.timeout)}s", *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout + 10)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise KubeError(f"{Path(self.binary).name} {' '.join(args)}: {error}") from error
        if done.returncode != 0:
            raise KubeError(f"{Path(self.binary).name} {' '.join(args)}: {done.stderr.strip()[-400:]}")
        return done.stdout

    def json(self, *args: str) -> Any:
        text = self.run(*args)
        try:
            return json.loads(text) if text.strip() else None
        except ValueError as error:
            raise KubeError(f"{Path(self.binary).name} {' '.join(args)}: no JSON ({error})") from error

    def items(self, kind: str) -> list[dict[str, Any]]:
        return (self.json("get", kind, "-o", "json") or {}).get("items") or []

    def approve(self, name: str) -> None:
        """One request, by its name: after `--`, so that a name is never taken for a flag (a request
        may be named `--server=...`)."""
        # oc keeps it under `adm`; kubectl has it at the top.
        verb = ["certificate", "approve"] if Path(self.binary).name.startswith("kubectl") else ["adm", "certificate", "approve"]
        self.run(*verb, "--", name)

    def server_time(self) -> datetime:
        """The API server's clock now: the creation time it gives a SelfSubjectReview (`auth whoami`),
        its time.Now() (kubernetes pkg/registry/authentication/selfsubjectreview/rest.go); a read that
        stores nothing, through the same client as every other call (oc and kubectl show no headers)."""
        review = self.json("auth", "whoami", "-o", "json") or {}
        stamp = (review.get("metadata") or {}).get("creationTimestamp")
        try:
            return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError as error:
            raise KubeError(f"the API server's time cannot be read from its SelfSubjectReview (creationTimestamp {stamp!r})") from error

    def bootstrap_complete(self) -> bool:
        """Whether the bootstrap has handed over: its kube-system/bootstrap ConfigMap says so, as
        `openshift-install wait-for bootstrap-complete` waits for."""
        found = self.json("get", "configmap", "-n", "kube-system", "--ignore-not-found", "-o", "json", "--", "bootstrap") or {}
        return (found.get("data") or {}).get("status") == "complete"


@contextmanager
def private_kubeconfig(text: str) -> Iterator[Path]:
    """The kubeconfig in a file only its owner can read, gone afterwards."""
    with tempfile.TemporaryDirectory(prefix="ocp-kube-") as scratch:
        path = Path(scratch) / "kubeconfig"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        yield path


def ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
