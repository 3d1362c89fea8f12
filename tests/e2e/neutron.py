"""A cloud of ports for the real OpenStack plugin: Keystone's password token (with a catalog)
and Neutron's port API, nothing else. Test harness.

    python -m tests.e2e.neutron PORT STATE_FILE [--latency-ms N] [--no-log]

It listens on 127.0.0.1:PORT and keeps the ports in STATE_FILE (JSON, read and written on every
request), so a test edits the cloud between runs as a controller of the cluster would: an
EgressIP in a port's allowed_address_pairs, an `lb-sg-*` group among its security groups. Every
request is appended to STATE_FILE's `requests`, so a test sees what the plugin asked for
(`--no-log`: not, for a benchmark's thousands). `--latency-ms`: each answer waits that long
first, requests side by side waiting together, as a remote cloud's round trip and API work do.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock

from harness import child

PROJECT = "0123456789abcdef0123456789abcdef"
# Neutron's own defaults for what the plugin reads back and does not set.
PORT_DEFAULTS = {
    "admin_state_up": True,
    "description": "",
    "device_id": "",
    "device_owner": "",
    "status": "DOWN",
    "tags": [],
    "security_groups": [],
    "allowed_address_pairs": [],
    "extra_dhcp_opts": [],
    "port_security_enabled": True,
    "binding:host_id": "",
    "binding:profile": {},
    "binding:vif_details": {},
    "binding:vif_type": "unbound",
    "binding:vnic_type": "normal",
}


def token(port: int) -> dict:
    return {
        "token": {
            "methods": ["password"],
            "expires_at": "2999-01-01T00:00:00.000000Z",
            "issued_at": "2026-01-01T00:00:00.000000Z",
            "user": {"id": "u1", "name": "tester", "domain": {"id": "default", "name": "Default"}},
            "project": {"id": PROJECT, "name": "tester", "domain": {"id": "default", "name": "Default"}},
            "roles": [{"id": "r1", "name": "member"}],
            "catalog": [
                {
                    "type": "network",
                    "name": "neutron",
                    "id": "n1",
                    "endpoints": [
                        {"id": "e1", "interface": interface, "region": "RegionOne", "region_id": "RegionOne", "url": f"http://127.0.0.1:{port}/network"}
                        for interface in ("public", "internal")
                    ],
                }
            ],
        }
    }


class Cloud(BaseHTTPRequestHandler):
    state_file: Path
    latency_s = 0.0
    log_requests = True
    lock = Lock()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def _answer(self, status: int, body: dict | None = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        time.sleep(self.latency_s)  # outside the lock: the cloud's requests wait side by side
        with self.lock:
            state = json.loads(self.state_file.read_text())
            if self.log_requests:
                state.setdefault("requests", []).append({"method": method, "path": self.path, "body": body})
            status, answer, headers = self._route(method, self.path.split("?")[0].rstrip("/"), body, state.setdefault("ports", {}))
            self.state_file.write_text(json.dumps(state, indent=1))
        self._answer(status, answer, headers)

    def _route(self, method: str, path: str, body: dict, ports: dict) -> tuple[int, dict | None, dict[str, str] | None]:
        port = self.server.server_address[1]
        if path in ("", "/v3") and method == "GET":
            version = {"id": "v3.14", "status": "stable", "links": [{"rel": "self", "href": f"http://127.0.0.1:{port}/v3/"}]}
            return 200, ({"version": version} if path else {"versions": {"values": [version]}}), None
        if path == "/v3/auth/tokens" and method == "POST":
            return 201, token(port), {"X-Subject-Token": "fake-token-" + uuid.uuid4().hex}
        if path == "/network" and method == "GET":
            return 200, {"versions": [{"id": "v2.0", "status": "CURRENT", "links": []}]}, None
        if path == "/network/v2.0/networks" and method == "GET":
            # The network a port is made on, as the provider's lookup by ID or name reads it: one, with a subnet.
            asked = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            network = {
                "id": asked.get("id", ["net-additional"])[0], "name": asked.get("name", ["additional"])[0], "subnets": ["subnet-additional"],
                "admin_state_up": True, "status": "ACTIVE", "mtu": 1500, "shared": False, "router:external": False,
                "port_security_enabled": True, "tags": [], "tenant_id": PROJECT, "project_id": PROJECT,
            }
            return 200, {"networks": [network]}, None
        if path == "/network/v2.0/ports" and method == "POST":
            new = {**PORT_DEFAULTS, **body["port"], "id": str(uuid.uuid4()), "tenant_id": PROJECT, "project_id": PROJECT}
            new["mac_address"] = "fa:16:3e:00:00:%02x" % (len(ports) + 1)
            new["fixed_ips"] = body["port"].get("fixed_ips", [])
            ports[new["id"]] = new
            return 201, {"port": new}, None
        if path == "/network/v2.0/ports" and method == "GET":
            return 200, {"ports": list(ports.values())}, None
        found = re.fullmatch(r"/network/v2\.0/ports/([^/]+)(/tags)?", path)
        if found and found.group(1) in ports:
            item = ports[found.group(1)]
            if found.group(2):
                if method == "PUT":
                    item["tags"] = body["tags"]
                    return 200, {"tags": item["tags"]}, None
                return 200, {"tags": item["tags"]}, None
            if method == "GET":
                return 200, {"port": item}, None
            if method == "PUT":
                item.update(body["port"])
                return 200, {"port": item}, None
            if method == "DELETE":
                del ports[found.group(1)]
                return 204, None, None
        return 404, {"NeutronError": {"type": "NotFound", "message": f"{method} {path}", "detail": ""}}, None

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


def start(port: int, state_file: Path, *flags: str, timeout: float = 30) -> subprocess.Popen:
    """This cloud as a process of the caller's (stopped with harness.child.stop), returned once it accepts
    connections: the state file exists before the port listens, and a restart finds it already there."""
    command = [sys.executable, "-m", "tests.e2e.neutron", str(port), str(state_file), *flags]
    process = subprocess.Popen(command, cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.1)
    child.stop(process)
    raise RuntimeError(f"the cloud of ports did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # several plugins' requests at once; socketserver's 5 drops SYNs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.neutron", description="A cloud of ports on loopback")
    parser.add_argument("port", type=int)
    parser.add_argument("state_file", type=Path)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--no-log", action="store_true")
    args = parser.parse_args(argv)
    port, state_file = args.port, args.state_file
    if not state_file.exists():
        state_file.write_text(json.dumps({"ports": {}, "requests": []}))
    Cloud.state_file, Cloud.latency_s, Cloud.log_requests = state_file, args.latency_ms / 1000, not args.no_log
    Server(("127.0.0.1", port), Cloud).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
