"""The user's own balancer (`ocp:loadBalancer: UserManaged`) in the lab, driven through an install.

    python -m harness.lab.balancer --stack standalone [--json] [--keep]

The stack's offline plan, with `loadBalancer: UserManaged` (and no floating IPs, which the
config then refuses), gives the nodes: one namespace each, with OVN-Kubernetes' MCS rules and
the lab's stand-ins (harness/lab/standins.py: the API on 6443, the MCS on 22623 and 22624 on
the bootstrap and masters; the router's 1936, 80 and 443 on the router nodes), and nothing
else: the plan gives no node keepalived or haproxy, which the run checks first. A real haproxy
in a namespace of its own stands in for the user's balancer: it holds both VIPs and fronts
every pool of cluster/balancer.py (the product's contract) with its health checks. A client at
the gateway requests every frontend every 100 ms through the phases of an install:

- bootstrap: only the bootstrap serves (the masters' API and MCS are down);
- masters: the masters' APIs and MCSs come up, the balancer's checks take them in;
- bootstrap-done: bootkube is done, the bootstrap's API and MCS stop;
- removed: the bootstrap is taken out of the pools (the runtime API: maint, then deleted) and
  its server goes (its stand-ins stop, its cable is pulled).

Then: no node holds a VIP or answers on one (the client's ARP entries are the balancer's, and
with the balancer's haproxy stopped nothing answers there).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from cluster import balancer
from cluster.addresses import Role, plan_addresses
from cluster.config import load_config
from cluster.networking import API_PORT, MCS_HTTP_PORT, ROUTER_HEALTH_PORT
from harness import netns
from harness.lab import ovnk, standins
from harness.lab.client import Probe, Sample
from harness.lab.clock import wait_until
from harness.lab.nodes import LAB_IMAGES
from harness.lab.runner import _signals_interrupt, unavailable
from harness.lab.topology import CLIENT_INTERFACE, NICS, _certificate
from ignition.networking import HAPROXY_CFG, KEEPALIVED_CONF, MANIFESTS, REDIRECT_SCRIPT
from tools.mock_run import run_program
from tools.plan import PlanError, stack_config, write_plan

# What the VIP handling would put on a node; none may be in the plan.
VIP_FILES = (KEEPALIVED_CONF, HAPROXY_CFG, f"{MANIFESTS}/keepalived.yaml", f"{MANIFESTS}/haproxy.yaml", REDIRECT_SCRIPT)
REQUEST_INTERVAL = 0.1
PHASE_S = 1.5  # how long each phase is watched once it is in force
STEP_TIMEOUT = 15.0
PHASES = ("bootstrap", "masters", "bootstrap-done", "removed")
BALANCER_INTERFACE = "eth0"
# What the client requests of each pool of cluster/balancer.py: the scheme and path clients use.
REQUESTS = {
    "api": ("https", "/readyz"),
    "machine-config": ("https", "/config/master"),
    "machine-config-http": ("http", "/config/worker"),
    "ingress-http": ("http", "/"),
    "ingress-https": ("https", "/"),
}


@dataclass(frozen=True)
class PlanNode:
    name: str
    role: Role
    ip: IPv4Address
    files: Path
    control_plane: bool  # a member of the API and MCS pools
    router: bool  # a member of the ingress pools


@dataclass(frozen=True)
class BalancerPlan:
    stack: str
    network: IPv4Network
    gateway: IPv4Address
    vips: dict[str, IPv4Address]  # api, ingress
    nodes: tuple[PlanNode, ...]
    pools: tuple[balancer.Pool, ...]
    vip_files: dict[str, list[str]]  # node: the VIP handling's files its plan has (none, or it is wrong)


@dataclass
class Phase:
    requests: int = 0
    failed: int = 0
    answered_by: dict[str, list[str]] = field(default_factory=dict)  # target: nodes, sorted
    failures: list[str] = field(default_factory=list)  # the first few: target, detail


@dataclass
class BalancerRun:
    stack: str
    phases: dict[str, Phase] = field(default_factory=dict)
    vip_files: dict[str, list[str]] = field(default_factory=dict)
    nodes_holding_a_vip: list[str] = field(default_factory=list)
    vip_macs_are_the_balancers: bool = False
    answers_without_the_balancer: int = 0  # connections to a VIP answered with the balancer's haproxy stopped
    wall_s: float = 0.0
    leftovers: list[str] = field(default_factory=list)
    error: str | None = None


def load_balancer_plan(stack: str | None, config_file: str | None, out: Path) -> BalancerPlan:
    """The stack with the user's balancer, its plan written to `out`."""
    stack_name, config, _notes = stack_config(stack, config_file, None)
    config["ocp:loadBalancer"] = "UserManaged"
    if "ocp:openstack" in config:
        section = json.loads(config["ocp:openstack"])
        config["ocp:openstack"] = json.dumps({**section, "apiFloatingIp": "none", "ingressFloatingIp": "none"})
    networking = json.loads(config.get("ocp:networking", "{}"))
    config["ocp:networking"] = json.dumps({**networking, "images": {**LAB_IMAGES, **networking.get("images", {})}})
    write_plan(run_program(config, stack=stack_name), out)
    cluster = load_config(config)
    if cluster.integrated:
        raise PlanError(f"stack {stack_name} is in integrated mode: the MCO, not this program, makes its nodes' files")
    plan = plan_addresses(cluster)
    pools = balancer.pools(cluster, plan)
    control_plane = {node.name for pool in pools if pool.vip == "api" for node in pool.members}
    routers = {node.name for pool in pools if pool.vip == "ingress" for node in pool.members}
    nodes = tuple(
        PlanNode(node.name, node.role, node.ip, out / "nodes" / node.name / "files", node.name in control_plane, node.name in routers)
        for node in plan.nodes
    )
    found = {node.name: [path for path in VIP_FILES if (node.files / path.lstrip("/")).exists()] for node in nodes}
    return BalancerPlan(
        stack_name, plan.network, plan.gateway, {"api": plan.api_vip, "ingress": plan.ingress_vip}, nodes, pools,
        {name: paths for name, paths in found.items() if paths},
    )


def haproxy_config(plan: BalancerPlan, stats_socket: Path) -> str:
    """The balancer's haproxy.cfg: a frontend on its VIP per pool, TCP passed through to the
    pool's members, each checked as cluster/balancer.py says; a connection a member refuses is
    tried on another at once (`option redispatch`)."""
    lines = [
        "global",
        "    maxconn 1000",
        f"    stats socket {stats_socket} mode 600 level admin",
        "defaults",
        "    mode tcp",
        "    timeout connect 1s",
        "    timeout client 86400s",
        "    timeout server 86400s",
        "    retries 3",
        "    option redispatch 1",
    ]
    for pool in plan.pools:
        tls = " check-ssl verify none" if pool.check_scheme == "https" else ""
        lines += [
            f"frontend {pool.name}",
            f"    bind {plan.vips[pool.vip]}:{pool.port}",
            f"    default_backend {pool.name}",
            f"backend {pool.name}",
            f"    option httpchk GET {pool.check_path}",
            f"    default-server check{tls} port {pool.check_port} inter 1s fall 2 rise 2",
            *(f"    server {node.name} {node.ip}:{pool.port}" for node in pool.members),
        ]
    return "\n".join(lines) + "\n"


def admin(stats_socket: Path, command: str) -> str:
    """One command of haproxy's runtime API, its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(5)
        connection.connect(str(stats_socket))
        connection.sendall(command.encode() + b"\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer.decode()


def server_states(stats_socket: Path) -> dict[tuple[str, str], bool]:
    """(backend, server): up, from `show stat`."""
    rows = [line.split(",") for line in admin(stats_socket, "show stat").splitlines() if line and not line.startswith("#")]
    return {(row[0], row[1]): row[17].startswith("UP") for row in rows if row[1] not in ("FRONTEND", "BACKEND")}


class Bed:
    """The namespaces, the stand-ins, the balancer and the client of one run."""

    def __init__(self, lab: netns.Lab, plan: BalancerPlan, workdir: Path):
        self.lab, self.plan, self.workdir = lab, plan, workdir
        cert, key = _certificate(workdir)
        prefix = plan.network.prefixlen
        self.namespaces: dict[str, str] = {}
        self.ports: dict[str, str] = {}
        self.standins: dict[str, standins.StandIns] = {}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        for node in plan.nodes:
            namespace = self.namespaces[node.name] = lab.namespace(node.name)
            self.ports[node.name] = lab.attach(namespace, NICS[node.role], f"{node.ip}/{prefix}", flood=False)
            ovnk.block_mcs(namespace)
            if not (node.control_plane or node.router):
                continue
            control = workdir / f"{node.name}.sock"
            self.standins[node.name] = standins.StandIns(control)
            argv = [sys.executable, standins.__file__, f"--control={control}", f"--name={node.name}", f"--cert={cert}", f"--key={key}"]
            if node.control_plane:
                argv += [f"--api={API_PORT}", f"--mcs={MCS_HTTP_PORT}", f"--mcs-tls={balancer.MCS_PORT}"]
            if node.router:
                argv += [f"--router={ROUTER_HEALTH_PORT},{balancer.INGRESS_HTTP_PORT}", f"--router-tls={balancer.INGRESS_HTTPS_PORT}"]
            self.processes[node.name] = lab.start(namespace, argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.balancer = lab.namespace("balancer")
        lab.attach(self.balancer, BALANCER_INTERFACE, f"{plan.vips['api']}/{prefix}", flood=False)
        lab.run(self.balancer, ["ip", "addr", "add", f"{plan.vips['ingress']}/{prefix}", "dev", BALANCER_INTERFACE], check=True)
        self.client = lab.namespace("client")
        lab.attach(self.client, CLIENT_INTERFACE, f"{plan.gateway}/{prefix}")
        for name, each in self.standins.items():
            wait_until(each.ready, 10, f"the stand-ins of {name}")
        self.stats = workdir / "haproxy.sock"
        self.config = workdir / "haproxy.cfg"
        self.config.write_text(haproxy_config(plan, self.stats))
        self.haproxy: subprocess.Popen[str] | None = None

    def start_balancer(self) -> None:
        with (self.workdir / "haproxy.log").open("a") as log:
            self.haproxy = self.lab.start(self.balancer, ["haproxy", "-db", "-f", str(self.config)], stdout=log, stderr=subprocess.STDOUT, text=True)
        wait_until(lambda: self.stats.exists() and bool(_quietly(lambda: server_states(self.stats))), 10, "the balancer's haproxy")

    def stop_balancer(self) -> None:
        if self.haproxy is not None:
            self.haproxy.terminate()
            self.haproxy.wait(timeout=10)

    def set(self, nodes: list[PlanNode], service: str, state: str) -> None:
        for node in nodes:
            self.standins[node.name].set(service, state)

    def urls(self) -> dict[str, str]:
        """Each pool's frontend, as a client requests it."""
        return {
            pool.name: f"{REQUESTS[pool.name][0]}://{self.plan.vips[pool.vip]}:{pool.port}{REQUESTS[pool.name][1]}"
            for pool in self.plan.pools
        }

    def holders(self) -> list[str]:
        """The nodes that have a VIP on an interface."""
        vips = [f" {vip}/" for vip in self.plan.vips.values()]
        return [
            name
            for name, namespace in self.namespaces.items()
            if any(vip in subprocess.run(["ip", "-n", namespace, "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout for vip in vips)
        ]

    def vip_macs_are_the_balancers(self) -> bool:
        mac = subprocess.run(["ip", "-n", self.balancer, "-o", "link", "show", BALANCER_INTERFACE], capture_output=True, text=True).stdout
        own = mac.split("link/ether ", 1)[1].split()[0] if "link/ether " in mac else None
        seen = [
            subprocess.run(["ip", "-n", self.client, "neigh", "show", str(vip)], capture_output=True, text=True).stdout
            for vip in self.plan.vips.values()
        ]
        return own is not None and all(f"lladdr {own} " in line for line in seen)


def _quietly(call):
    try:
        return call()
    except OSError:
        return None


def _phase(samples: list[Sample], start: float, end: float) -> Phase:
    phase = Phase()
    for sample in samples:
        if not start <= sample.start < end:
            continue
        phase.requests += 1
        if sample.ok:
            phase.answered_by.setdefault(sample.target, []).append(sample.detail.split()[1])
        else:
            phase.failed += 1
            if len(phase.failures) < 5:
                phase.failures.append(f"{sample.target}: {sample.detail}")
    phase.answered_by = {target: sorted(set(nodes)) for target, nodes in sorted(phase.answered_by.items())}
    return phase


def drive(bed: Bed, run: BalancerRun) -> None:
    """The install's phases, each watched for PHASE_S once in force."""
    plan = bed.plan
    bootstrap = [node for node in plan.nodes if node.role == "bootstrap"]
    masters = [node for node in plan.nodes if node.role == "master"]
    bed.set([node for node in plan.nodes if node.router], standins.ROUTER, standins.HEALTHY)
    bed.set(bootstrap, standins.API, standins.HEALTHY)
    bed.set(bootstrap, standins.MCS, standins.HEALTHY)
    bed.start_balancer()
    probe = bed.lab.start(
        bed.client, Probe.command(bed.urls(), REQUEST_INTERVAL, 60), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )
    client = Probe(probe)
    marks: list[tuple[str, float]] = []
    ended = 0.0
    try:
        wait_until(lambda: any(sample.ok for sample in client.samples("api")), STEP_TIMEOUT, "the API through the balancer")
        marks.append(("bootstrap", time.monotonic()))
        time.sleep(PHASE_S)
        for service in (standins.API, standins.MCS):
            bed.set(masters, service, standins.HEALTHY)
        marks.append(("masters", time.monotonic()))
        control_plane = [pool.name for pool in plan.pools if pool.vip == "api"]
        wait_until(
            lambda: all(server_states(bed.stats).get((pool, node.name)) for pool in control_plane for node in masters),
            STEP_TIMEOUT, "the balancer to take the masters in",
        )
        time.sleep(PHASE_S)
        for service in (standins.API, standins.MCS):
            bed.set(bootstrap, service, standins.STOPPED)
        marks.append(("bootstrap-done", time.monotonic()))
        wait_until(
            lambda: not any(server_states(bed.stats).get((pool, node.name)) for pool in control_plane for node in bootstrap),
            STEP_TIMEOUT, "the balancer to mark the bootstrap down",
        )
        time.sleep(PHASE_S)
        marks.append(("removed", time.monotonic()))
        for node in bootstrap:
            for pool in control_plane:
                for command in (f"set server {pool}/{node.name} state maint", f"del server {pool}/{node.name}"):
                    answer = admin(bed.stats, command).strip()
                    if answer and answer != "Server deleted.":
                        raise RuntimeError(f"haproxy's `{command}`: {answer}")
            bed.processes[node.name].terminate()
            bed.lab.set_port(bed.ports[node.name], up=False)
        time.sleep(PHASE_S)
        ended = time.monotonic()
        run.nodes_holding_a_vip = bed.holders()
    finally:
        samples = client.stop()
    for (name, start), (_, end) in zip(marks, [*marks[1:], ("end", ended or time.monotonic())], strict=True):
        run.phases[name] = _phase(samples, start, end)
    run.vip_macs_are_the_balancers = bed.vip_macs_are_the_balancers()
    bed.stop_balancer()
    tried = [url.replace("/readyz", "/healthz") for url in bed.urls().values()]
    run.answers_without_the_balancer = sum(
        1 for url in tried if bed.lab.run(bed.client, ["curl", "-sk", "-o", "/dev/null", "--max-time", "1", url]).returncode != 7
    )


def run_balancer_lab(plan: BalancerPlan, workdir: Path) -> BalancerRun:
    run = BalancerRun(plan.stack, vip_files=plan.vip_files)
    started = time.monotonic()
    lab: netns.Lab | None = None
    try:
        with _signals_interrupt() as shield, netns.lab("ulb") as lab:
            try:
                drive(Bed(lab, plan, workdir), run)
            except Exception as error:  # noqa: BLE001 - reported in the run, after the clean-up
                run.error = f"{type(error).__name__}: {error}"
            finally:
                shield()
    finally:
        if lab is not None:
            run.leftovers = lab.leftovers()
        run.wall_s = round(time.monotonic() - started, 1)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.lab.balancer", description="A stack with your own balancer, through an install (docs/lab.md)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack")
    source.add_argument("--config-file")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (plan, haproxy.cfg and its log)")
    args = parser.parse_args(argv)
    reason = unavailable()
    if reason:
        print(f"error: the lab cannot run here: {reason}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="ocp-lab-balancer-"))
    try:
        result = run_balancer_lab(load_balancer_plan(args.stack, args.config_file, workdir / "plan"), workdir)
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"work directory: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(asdict(result), indent=2) if args.json else _text(result))
    return 1 if result.error or result.leftovers else 0


def _text(run: BalancerRun) -> str:
    lines = [f"lab {run.stack}, your own balancer: {run.wall_s:g} s in all"]
    for name, phase in run.phases.items():
        answered = "; ".join(f"{target} by {', '.join(nodes)}" for target, nodes in phase.answered_by.items())
        lines.append(f"  {name}: {phase.requests} requests, {phase.failed} failed; {answered}")
    lines.append(f"  nodes holding a VIP: {', '.join(run.nodes_holding_a_vip) or 'none'}; VIP addresses the balancer's: {run.vip_macs_are_the_balancers}")
    lines.append(f"  answers on a VIP with the balancer stopped: {run.answers_without_the_balancer}")
    lines.append(f"  VIP handling in the plan: {run.vip_files or 'none'}; left behind: {', '.join(run.leftovers) or 'nothing'}")
    if run.error:
        lines.append(f"  ERROR: {run.error}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
