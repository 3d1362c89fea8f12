"""The cluster's API through `oc` or `kubectl` (ocp:installer.oc), with the stack's kubeconfig."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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

    def items(self, kind: str) -> list[dict[str, Any]]:
        return json.loads(self.run("get", kind, "-o", "json")).get("items") or []

    def approve(self, names: Sequence[str]) -> None:
        # oc keeps it under `adm`; kubectl has it at the top.
        verb = ["certificate", "approve"] if Path(self.binary).name.startswith("kubectl") else ["adm", "certificate", "approve"]
        self.run(*verb, *names)


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
