"""Throw-away network namespaces for tests and labs, always cleaned up.

    with netns.lab("kt") as lab:
        node = lab.namespace("master-0")
        lab.attach(node, "br-ex", "10.0.0.20/16")   # on the lab's shared L2 segment
        lab.run(node, ["keepalived", "-t", "-f", conf])

Names carry a prefix unique to this process and lab, so parallel runs never collide. The
bridge joining the namespaces lives in a namespace of its own: the host's network is never
touched. Leaving the `with` block stops every process started in the lab's namespaces and
deletes the namespaces, which takes their interfaces along. Needs root and `ip`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

BRIDGE = "br0"


def unavailable() -> str | None:
    """Why labs cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class Lab:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.namespaces: list[str] = []
        self.processes: list[subprocess.Popen[Any]] = []
        self._switch: str | None = None
        self._ports = 0

    def namespace(self, label: str) -> str:
        """A new namespace with loopback up; returns its name."""
        name = f"{self.prefix}-{label}"
        _ip("netns", "add", name)
        self.namespaces.append(name)
        _ip("-n", name, "link", "set", "lo", "up")
        return name

    def attach(self, namespace: str, interface: str, address: str) -> None:
        """Give `namespace` an interface `interface` with `address` (CIDR) on the lab's segment."""
        if self._switch is None:
            self._switch = self.namespace("switch")
            _ip("-n", self._switch, "link", "add", BRIDGE, "type", "bridge")
            _ip("-n", self._switch, "link", "set", BRIDGE, "up")
        self._ports += 1
        port = f"p{self._ports}"
        _ip("-n", self._switch, "link", "add", port, "type", "veth", "peer", "name", interface, "netns", namespace)
        _ip("-n", self._switch, "link", "set", port, "master", BRIDGE, "up")
        _ip("-n", namespace, "addr", "add", address, "dev", interface)
        _ip("-n", namespace, "link", "set", interface, "up")

    def run(self, namespace: str, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run a command inside `namespace` to completion; output captured as text."""
        return subprocess.run(["ip", "netns", "exec", namespace, *argv], capture_output=True, text=True, **kwargs)

    def start(self, namespace: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start a background command inside `namespace`; it is stopped when the lab closes."""
        process = subprocess.Popen(["ip", "netns", "exec", namespace, *argv], **kwargs)
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for name in reversed(self.namespaces):
            # Daemons that forked away from the processes above still live in the namespace.
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
        self.namespaces.clear()
        self.processes.clear()


@contextmanager
def lab(label: str = "lab") -> Iterator[Lab]:
    """A lab whose namespaces are all named `<label>-<pid>-<random>-*`, removed on exit."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    instance = Lab(f"{label}-{os.getpid()}-{secrets.token_hex(3)}")
    try:
        yield instance
    finally:
        instance.close()
