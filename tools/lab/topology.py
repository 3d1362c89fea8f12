"""The lab's network and everything running on it.

One namespace per node, named after it, with one link named as the node's keepalived.conf
says (br-ex, ens3, ...) and the node's address in the machine network; a namespace for the
client at the gateway's address (where traffic from outside would come from); all joined
by a bridge in a namespace of its own (tools.netns). Nothing is added to the host's own
network namespace.
"""

from __future__ import annotations

import subprocess
import threading
import time
from ipaddress import IPv4Address
from pathlib import Path

from cluster.networking import API_PORT
from tools import netns
from tools.lab.client import Probe
from tools.lab.nodes import LabPlan
from tools.lab.services import INGRESS_PORT, NodeServices

POLL_INTERVAL = 0.05
REQUEST_INTERVAL = 0.05  # per target: a takeover is seen to within this
PROBE_LIMIT_S = 60.0  # no scenario observes longer; the client stops by itself then
CLIENT_INTERFACE = "eth0"


class Holders:
    """Who holds each VIP: `ip -4 addr show` in every node's namespace, every 50 ms.

    Keeps every change with the time it was seen, for the scenarios to measure from."""

    def __init__(self, namespaces: dict[str, str], vips: dict[str, IPv4Address]):
        self._namespaces, self._vips = namespaces, vips
        self._history: dict[str, list[tuple[float, frozenset[str]]]] = {vip: [] for vip in vips}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._poll()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(POLL_INTERVAL):
            self._poll()

    def _poll(self) -> None:
        # `ip -n` rather than `ip netns exec`: no mount namespace to set up, half the cost.
        addresses = {
            node: subprocess.run(
                ["ip", "-n", namespace, "-4", "-o", "addr", "show"], capture_output=True, text=True
            ).stdout
            for node, namespace in self._namespaces.items()
        }
        seen = time.monotonic()
        with self._lock:
            for vip, address in self._vips.items():
                holders = frozenset(node for node, text in addresses.items() if f" {address}/" in text)
                history = self._history[vip]
                if not history or history[-1][1] != holders:
                    history.append((seen, holders))

    def current(self, vip: str) -> frozenset[str]:
        with self._lock:
            return self._history[vip][-1][1]

    def history(self, vip: str) -> list[tuple[float, frozenset[str]]]:
        """Every change: (time seen, holders from then on)."""
        with self._lock:
            return list(self._history[vip])


class Testbed:
    """A lab built from a plan: namespaces, links, each node's services, holders, the client."""

    def __init__(self, lab: netns.Lab, plan: LabPlan, workdir: Path):
        self.lab, self.plan, self.workdir = lab, plan, workdir
        tls = _certificate(workdir)
        prefix = plan.network.prefixlen
        self.namespaces: dict[str, str] = {}
        self._ports: dict[str, str] = {}
        self.nodes: dict[str, NodeServices] = {}
        for node in plan.nodes:
            namespace = lab.namespace(node.name)
            self.namespaces[node.name] = namespace
            self._ports[node.name] = lab.attach(namespace, node.keepalived.interface, f"{node.ip}/{prefix}")
            self.nodes[node.name] = NodeServices(lab, node, namespace, workdir, tls)
        self.client = lab.namespace("client")
        lab.attach(self.client, CLIENT_INTERFACE, f"{plan.gateway}/{prefix}")
        self.urls = {
            "api": f"https://{plan.vip('api')}:{API_PORT}/readyz",
            "ingress": f"http://{plan.vip('ingress')}:{INGRESS_PORT}/",
        }
        self.holders = Holders(self.namespaces, {vip: plan.vip(vip) for vip in self.urls})
        self.holders.start()

    def close(self) -> None:
        self.holders.stop()

    def probe(self, *targets: str) -> Probe:
        """Start the client's request loops against the VIPs `targets` ("api", "ingress")."""
        command = Probe.command({target: self.urls[target] for target in targets}, REQUEST_INTERVAL, PROBE_LIMIT_S)
        process = self.lab.start(
            self.client,
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        return Probe(process)

    def set_link(self, node: str, up: bool) -> None:
        self.lab.set_port(self._ports[node], up)


def _certificate(workdir: Path) -> tuple[Path, Path]:
    """A self-signed certificate for the stand-in APIs, made once per lab run."""
    cert, key = workdir / "api.crt", workdir / "api.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1", "-subj", "/CN=kube-apiserver-stand-in",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key
