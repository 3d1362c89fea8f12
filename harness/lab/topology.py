"""The lab's network and everything running on it.

One namespace per node, named after it, with one link named as the NIC of a real node of its
role (NICS: nothing in the rendered files names one) and the node's address in the machine
network; a namespace for the client at the gateway's address (where traffic from outside
would come from); all joined by a bridge in a namespace of its own (harness.netns). A node's
address can move from its NIC to a bridge br-ex in its namespace, as OVN-Kubernetes moves it
(`move_address`). With two address families a node has an address of each on its link (IPv6
without duplicate address detection, as the client's). Every node's namespace has OVN-Kubernetes' rules that reject connections
from the node to the machine config server (harness.lab.ovnk): the bootstrap's too, which runs
no OVN-Kubernetes, so that no check anywhere may connect to an MCS. A node can join later
(`add_node`), without those rules, as a node at first boot. Nothing is added to the host's own
network namespace.
"""

from __future__ import annotations

import subprocess
import threading
import time
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

from cluster.addresses import Role
from cluster.networking import API_PORT, MCS_HTTP_PORT
from harness import netns
from harness.lab import ovnk
from harness.lab.client import Probe
from harness.lab.nodes import LabNode, LabPlan
from harness.lab.services import INGRESS_PORT, NodeServices

POLL_INTERVAL = 0.05
REQUEST_INTERVAL = 0.05  # per target: a takeover is seen to within this
PROBE_LIMIT_S = 60.0  # no scenario observes longer; the client stops by itself then
CLIENT_INTERFACE = "eth0"
# The NIC's name on real nodes: the bootstrap a q35 machine's virtio NIC, masters and workers
# the `pc` machine type's.
NICS: dict[Role, str] = {"bootstrap": "enp1s0", "master": "ens3", "worker": "ens3"}
OVS_BRIDGE = "br-ex"


def url_host(address: IPv4Address | IPv6Address) -> str:
    """`address` as a URL's host: IPv6 in brackets."""
    return f"[{address}]" if address.version == 6 else str(address)


class Holders:
    """Who holds each VIP: `ip addr show` (both families) in every node's namespace, every 50 ms.

    Keeps every change with the time it was seen, for the scenarios to measure from."""

    def __init__(self, namespaces: dict[str, str], vips: dict[str, IPv4Address | IPv6Address]):
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
                ["ip", "-n", namespace, "-o", "addr", "show"], capture_output=True, text=True
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

    def at(self, vip: str, moment: float) -> frozenset[str]:
        """The holders seen last before `moment`."""
        return next((holders for seen, holders in reversed(self.history(vip)) if seen <= moment), frozenset())


class Testbed:
    """A lab built from a plan: namespaces, links, each node's services, holders, the client."""

    def __init__(self, lab: netns.Lab, plan: LabPlan, workdir: Path):
        self.lab, self.plan, self.workdir = lab, plan, workdir
        tls = _certificate(workdir)
        self.namespaces: dict[str, str] = {}
        self._ports: dict[str, str] = {}
        self.nodes: dict[str, NodeServices] = {}
        for node in plan.nodes:
            namespace = lab.namespace(node.name)
            self.namespaces[node.name] = namespace
            # No flooding to a node's port: its br-ex (after `move_address`) would take frames meant
            # for another node (a cut one) and answer for the VIP through its redirect.
            first, *more = plan.interfaces(node.ips)
            self._ports[node.name] = lab.attach(namespace, NICS[node.role], first, flood=False, more=more)
            ovnk.block_mcs(namespace)
            self.nodes[node.name] = NodeServices(lab, node, namespace, workdir, tls)
        self.client = lab.namespace("client")
        first, *more = plan.interfaces(plan.gateways)
        lab.attach(self.client, CLIENT_INTERFACE, first, more=more)
        api, ingress = url_host(plan.vip("api")), url_host(plan.vip("ingress"))
        self.urls = {"api": f"https://{api}:{API_PORT}/readyz", "ingress": f"http://{ingress}:{INGRESS_PORT}/"}
        # Not a VIP of its own: what a new node fetches through the API VIP at first boot.
        self.fetch_urls = {"mcs": f"http://{api}:{MCS_HTTP_PORT}/config/worker"}
        self.holders = Holders(self.namespaces, {vip: plan.vip(vip) for vip in self.urls})
        self.holders.start()

    def close(self) -> None:
        self.holders.stop()

    def vip_label(self, vip: str, node: str) -> str | None:
        """The label `node` holds the VIP under (`ip -o` ends the scope with it), None if it does not hold it.
        IPv6 has no labels: "deprecated" when the VIP is (so never a source address), else None."""
        address = self.plan.vip(vip)
        line = subprocess.run(
            ["ip", "-n", self.namespaces[node], "-o", "addr", "show", "to", f"{address}/{address.max_prefixlen}"],
            capture_output=True, text=True,
        ).stdout
        if " scope " not in line:
            return None
        if address.version == 6:
            return "deprecated" if " deprecated" in line else None
        scope = line.split(" scope ", 1)[1].split("\\", 1)[0].split()
        return scope[1] if len(scope) > 1 else None

    def add_node(self, label: str, addresses: tuple[IPv4Address | IPv6Address, ...]) -> str:
        """A new worker's namespace at `addresses` (one per family), on the lab's network: a node
        booting for the first time (no OVN-Kubernetes yet, so no rules). Returns the namespace."""
        namespace = self.lab.namespace(label)
        first, *more = self.plan.interfaces(addresses)
        self.lab.attach(namespace, NICS["worker"], first, flood=False, more=more)
        return namespace

    def connects(self, node: str, url: str) -> bool:
        """Whether a process on `node` itself gets a TCP connection for `url` (curl: any answer
        counts; exit 7 is "could not connect")."""
        result = self.lab.run(self.namespaces[node], ["curl", "-s", "-o", "/dev/null", "--max-time", "2", url])
        return result.returncode != 7

    def probe(self, *targets: str, source: str | None = None) -> Probe:
        """Start request loops against `targets` ("api", "ingress", "mcs") from the client's
        namespace, or from `source`'s."""
        urls = {**self.urls, **self.fetch_urls}
        command = Probe.command({target: urls[target] for target in targets}, REQUEST_INTERVAL, PROBE_LIMIT_S)
        process = self.lab.start(
            source or self.client,
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

    def move_address(self, node: str) -> None:
        """Move the node's address from its NIC to a new bridge br-ex with the NIC as its port,
        as OVN-Kubernetes' first configuration does: the NIC's addresses (a VIP too) are
        flushed, the bridge takes the NIC's MAC and the addresses (IPv6 without duplicate address
        detection: the lab's links have no other holder of them)."""
        namespace, nic = self.namespaces[node], NICS[self.plan_node(node).role]
        addresses = self.plan.interfaces(self.plan_node(node).ips)
        for command in (
            ["addr", "flush", "dev", nic],
            ["link", "add", OVS_BRIDGE, "type", "bridge"],
            ["link", "set", nic, "master", OVS_BRIDGE],
            ["link", "set", OVS_BRIDGE, "up"],
            *(["addr", "add", address, "dev", OVS_BRIDGE, *(["nodad"] if ":" in address else [])] for address in addresses),
        ):
            subprocess.run(["ip", "-n", namespace, *command], check=True, capture_output=True)

    def plan_node(self, name: str) -> LabNode:
        return next(node for node in self.plan.nodes if node.name == name)


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
