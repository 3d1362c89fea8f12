"""Throw-away network namespaces for tests and labs, always cleaned up.

    with netns.lab("kt") as lab:
        node = lab.namespace("master-0")
        port = lab.attach(node, "br-ex", "10.0.0.20/16")   # on the lab's shared L2 segment
        lab.run(node, ["keepalived", "-t", "-f", conf])
        lab.set_port(port, up=False)                       # pull the cable, at the switch

Names carry a prefix unique to this process and lab, so parallel runs never collide. The
bridge joining the namespaces lives in a namespace of its own: the host's network is never
touched. Leaving the `with` block stops every process started in the lab's namespaces and
deletes the namespaces, which takes their interfaces along; `leftovers()` then checks that
nothing is left. Needs root and `ip`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
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


def processes_in(namespaces: set[int]) -> list[str]:
    """Processes (`pid: command line`) in any of the network namespaces with these inodes
    (`os.stat("/run/netns/NAME").st_ino`): found even after the names are deleted."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            inode = os.stat(entry / "ns" / "net").st_ino
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone meanwhile
        if inode in namespaces:
            found.append(f"{entry.name}: {command}")
    return found


def host_links() -> set[str]:
    """Names of the links in this process's own namespace (the host's): a lab adds none."""
    lines = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return {line.split(": ")[1].split("@")[0] for line in lines.splitlines()}


class Lab:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.namespaces: list[str] = []
        self.processes: list[subprocess.Popen[Any]] = []
        # Every namespace ever made, by the inode that identifies it while anything is in it.
        self.created: dict[str, int] = {}
        self._switch: str | None = None
        self._ports = 0
        self._host_links = host_links()

    def namespace(self, label: str) -> str:
        """A new namespace with loopback up; returns its name."""
        name = f"{self.prefix}-{label}"
        _ip("netns", "add", name)
        self.namespaces.append(name)
        self.created[name] = os.stat(f"/run/netns/{name}").st_ino
        _ip("-n", name, "link", "set", "lo", "up")
        return name

    def attach(self, namespace: str, interface: str, address: str, flood: bool = True, more: Sequence[str] = ()) -> str:
        """Give `namespace` an interface `interface` with `address` (CIDR) on the lab's segment, and
        the addresses `more` too; IPv6 ones without duplicate address detection, so usable at once.

        Without `flood`, the switch sends the port no unicast frame for a MAC it has not
        learnt there (broadcasts still go), as a cloud's port security does: a bridge inside
        the namespace would otherwise see other nodes' traffic whenever the switch floods.
        Returns the name of its port on the bridge, for `set_port`."""
        if self._switch is None:
            self._switch = self.namespace("switch")
            _ip("-n", self._switch, "link", "add", BRIDGE, "type", "bridge")
            _ip("-n", self._switch, "link", "set", BRIDGE, "up")
        self._ports += 1
        port = f"p{self._ports}"
        _ip("-n", self._switch, "link", "add", port, "type", "veth", "peer", "name", interface, "netns", namespace)
        _ip("-n", self._switch, "link", "set", port, "master", BRIDGE, "up")
        if not flood:
            _ip("-n", self._switch, "link", "set", port, "type", "bridge_slave", "flood", "off")
        for each in (address, *more):
            _ip("-n", namespace, "addr", "add", each, "dev", interface, *(["nodad"] if ":" in each else []))
        _ip("-n", namespace, "link", "set", interface, "up")
        return port

    def set_port(self, port: str, up: bool) -> None:
        """Plug or pull the cable of a port `attach` made, at the bridge: the namespace's end
        loses its carrier, as with a switch port going down."""
        if self._switch is None:
            raise ValueError(f"no port {port}: nothing is attached yet")
        _ip("-n", self._switch, "link", "set", port, "up" if up else "down")

    def run(self, namespace: str, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Run a command inside `namespace` to completion; output captured as text."""
        return subprocess.run(["ip", "netns", "exec", namespace, *argv], capture_output=True, text=True, **kwargs)

    def start(self, namespace: str, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start a background command inside `namespace`; it is stopped when the lab closes."""
        process = subprocess.Popen(["ip", "netns", "exec", namespace, *argv], **kwargs)
        self.processes.append(process)
        return process

    def close(self) -> None:
        # All asked to stop first, then waited for: daemons that take a second to stop
        # (keepalived) stop side by side rather than one after the other.
        running = [process for process in self.processes if process.poll() is None]
        for process in running:
            process.terminate()
        deadline = time.monotonic() + 5
        for process in running:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.01))
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
        # A killed process keeps its namespace until it has finished exiting (its command
        # line already empty): give those a moment, so `leftovers` names only what stayed.
        deadline = time.monotonic() + 5
        while processes_in(set(self.created.values())) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.namespaces.clear()
        self.processes.clear()

    def leftovers(self) -> list[str]:
        """What is left of the lab after `close`: its namespaces still listed, processes still
        inside one of them (even one no longer listed). Empty when all is gone."""
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        found = [f"namespace {name}" for name in listed if name.startswith(f"{self.prefix}-")]
        found += [f"link {name} in the host's namespace" for name in sorted(host_links() - self._host_links)]
        return found + [f"process {process}" for process in processes_in(set(self.created.values()))]


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
