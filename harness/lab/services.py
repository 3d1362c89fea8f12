"""The processes of one lab node: what its files would run, and stand-ins for the cluster.

keepalived (through keepalived-run) and haproxy run with the command line of the node's
rendered static pod, the API VIP redirect with the ExecStart of its rendered unit (through
`sh`: the plan keeps no file modes). Only paths are mapped: a file the node gets is read from
the plan, a binary is the host's of that name, and a runtime directory (under /run: the pod's
emptyDir) is one in the node's work directory. Added are what the host needs, nothing that
changes behaviour: keepalived's `--no-syslog` (its log is read from the console, where
keepalived-run writes too); haproxy's `-n` only where the host's open-file limit is below what
its maxconn needs.

Every process starts in a session of its own, so that a kill reaches its children too
(keepalived's VRRP process and check scripts, haproxy's worker, the redirect's `sleep`).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import yaml

from cluster.networking import API_PORT, MCS_HTTP_PORT, ROUTER_HEALTH_PORT
from harness import netns
from harness.lab import standins
from harness.lab.clock import wait_until
from harness.lab.keepalived import Status
from harness.lab.nodes import LabNode
from ignition.networking import HAPROXY_CFG, MANIFESTS, REDIRECT_UNIT

INGRESS_PORT = 80  # the routers' plain HTTP port: what the client requests through the Ingress VIP
KEEPALIVED, HAPROXY, REDIRECT, STANDINS = "keepalived", "haproxy", "redirect", "standins"
STOP_TIMEOUT = 5.0
# Besides 2 per connection: listeners, health checks of every backend server, pipes, logs.
HAPROXY_SPARE_FILES = 100


class NodeServices:
    def __init__(self, lab: netns.Lab, node: LabNode, namespace: str, workdir: Path, tls: tuple[Path, Path]):
        self.lab, self.node, self.namespace, self.tls = lab, node, namespace, tls
        self.workdir = workdir / node.name
        self.workdir.mkdir(parents=True)
        self.keepalived = Status(node.keepalived)
        self.standins = standins.StandIns(self.workdir / "standins.sock")
        self._processes: dict[str, subprocess.Popen[str]] = {}

    @property
    def standin_services(self) -> tuple[str, ...]:
        """The kube-apiserver and the machine config server run on the bootstrap and the
        masters, routers on the Ingress VIP's nodes."""
        return ((standins.API, standins.MCS) if self.node.role != "worker" else ()) + (
            (standins.ROUTER,) if self.node.may_hold("ingress") else ()
        )

    @property
    def services(self) -> tuple[str, ...]:
        """What runs on this node, in start order (the stand-ins first: keepalived checks them)."""
        return (STANDINS, KEEPALIVED) + ((HAPROXY, REDIRECT) if self.node.runs_haproxy else ())

    def start(self, service: str) -> None:
        if self.running(service):
            raise RuntimeError(f"{service} already runs on {self.node.name}")
        log = self.workdir / f"{service}.log"
        if service == STANDINS:
            self.standins.control.unlink(missing_ok=True)  # a killed stand-in leaves its socket
        if service == KEEPALIVED:
            self.keepalived.reset()
            process = self._start(self._keepalived_command(), subprocess.PIPE)
            threading.Thread(target=self._follow, args=(process, log), daemon=True).start()
        else:
            with log.open("a") as output:
                process = self._start(self._command(service), output)
        self._processes[service] = process
        if service == STANDINS:
            wait_until(self.standins.ready, 5, f"the stand-ins of {self.node.name}")

    def restore(self) -> None:
        """Every service running again and every stand-in healthy, as after a repair."""
        for service in self.services:
            if not self.running(service):
                self.start(service)
            if service == STANDINS:
                for standin in self.standin_services:
                    self.standins.set(standin, standins.HEALTHY)

    def stop(self, service: str, wait: bool = True) -> None:
        """SIGTERM, as a clean shutdown: keepalived sends priority 0 and drops its VIPs.
        Without `wait`, returns at once (the lab reaps the process when it closes)."""
        self._signal([service], signal.SIGTERM, wait)

    def kill(self, *services: str) -> None:
        """SIGKILL, all at once, and wait: no clean handover, VIPs stay where they were."""
        self._signal(list(services), signal.SIGKILL, wait=True)

    def running(self, service: str) -> bool:
        process = self._processes.get(service)
        return process is not None and process.poll() is None

    def _signal(self, services: list[str], number: signal.Signals, wait: bool) -> None:
        processes = [self._processes.pop(service) for service in services if service in self._processes]
        for process in processes:
            with contextlib.suppress(ProcessLookupError):  # it may have just died by itself
                os.killpg(process.pid, number)
        for process in processes if wait else []:
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def _start(self, argv: list[str], output: int | IO[str]) -> subprocess.Popen[str]:
        return self.lab.start(
            self.namespace,
            argv,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def _follow(self, process: subprocess.Popen[str], log: Path) -> None:
        assert process.stdout is not None
        with log.open("a") as output:
            for line in process.stdout:
                output.write(line)
                output.flush()
                self.keepalived.feed(line)

    def _keepalived_command(self) -> list[str]:
        # Passed on to keepalived: not the host's syslog, the log is read from the console.
        return self._pod_command("keepalived") + ["--no-syslog"]

    def _command(self, service: str) -> list[str]:
        if service == HAPROXY:
            return self._pod_command("haproxy") + self._haproxy_maxconn()
        if service == REDIRECT:
            unit = self.node.file(f"/etc/systemd/system/{REDIRECT_UNIT}").read_text()
            exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
            return ["sh"] + [self._mapped(word) for word in shlex.split(exec_start.removeprefix("ExecStart="))]
        router = f"{ROUTER_HEALTH_PORT},{INGRESS_PORT}"
        cert, key = self.tls
        return [
            sys.executable,
            standins.__file__,
            f"--control={self.standins.control}",
            f"--name={self.node.name}",
            f"--cert={cert}",
            f"--key={key}",
            *([f"--api={API_PORT}"] if standins.API in self.standin_services else []),
            *([f"--mcs={MCS_HTTP_PORT}"] if standins.MCS in self.standin_services else []),
            *([f"--router={router}"] if standins.ROUTER in self.standin_services else []),
        ]

    def _haproxy_maxconn(self) -> list[str]:
        """haproxy needs 2 open files per connection of its maxconn, and some more: a node allows
        that, a sandbox may not (nor let it raise its hard limit). Then, and only then, `-n`
        caps maxconn to fit; no lab scenario comes near either number."""
        match = re.search(r"^\s*maxconn\s+(\d+)", self.node.file(HAPROXY_CFG).read_text(), re.MULTILINE)
        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if match is None or hard == resource.RLIM_INFINITY or 2 * int(match[1]) + HAPROXY_SPARE_FILES <= hard:
            return []  # without maxconn, haproxy derives it from the limit itself
        return ["-n", str((hard - HAPROXY_SPARE_FILES) // 2)]

    def _pod_command(self, pod: str) -> list[str]:
        manifest = yaml.safe_load(self.node.file(f"{MANIFESTS}/{pod}.yaml").read_text())
        binary, *arguments = manifest["spec"]["containers"][0]["command"]
        host_binary = shutil.which(Path(binary).name)
        if host_binary is None:
            raise RuntimeError(f"{Path(binary).name} is not installed")
        return [host_binary] + [self._mapped(argument) for argument in arguments]

    def _mapped(self, argument: str) -> str:
        """A path of a file the node gets, as written in the plan; a runtime directory, in the
        node's work directory; anything else unchanged."""
        if argument.startswith("/") and self.node.file(argument).is_file():
            return str(self.node.file(argument))
        if argument.startswith("/run/"):
            return str(self.workdir / argument.lstrip("/"))
        return argument
