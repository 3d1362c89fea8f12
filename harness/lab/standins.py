"""Stand-ins for what the cluster would run on a node, each healthy, unhealthy or stopped.

- api: the kube-apiserver, HTTPS on 6443, `GET /readyz`;
- mcs: the machine config server's plain-HTTP listener on 22624, any path (`/healthz`,
  `/config/worker`), and where asked its HTTPS one (22623);
- router: the router's health endpoint, HTTP on 1936 `GET /healthz/ready`, and the ingress
  port (80) answering any path, and where asked 443 over HTTPS.

Healthy answers 200, unhealthy 500 on every path, stopped closes the ports (connections are
refused). One process per node namespace, run as a script with the standard library only:

    python standins.py --control SOCKET --name NODE --cert CERT --key KEY \\
        [--api PORT] [--mcs PORT] [--router HEALTH_PORT,INGRESS_PORT] [--mcs-tls PORT] [--router-tls PORT]

The lab switches a service by sending `<service> <state>\\n` to the Unix socket SOCKET (a
file, so reachable from outside the namespace) and waits for `ok\\n`: the change is in force
when the answer comes.
"""

from __future__ import annotations

import argparse
import socket
import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HEALTHY, UNHEALTHY, STOPPED = "healthy", "unhealthy", "stopped"
STATES = (HEALTHY, UNHEALTHY, STOPPED)
API, MCS, ROUTER = "api", "mcs", "router"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        service = self.server.service
        healthy = service.serving == HEALTHY
        body = f"{service.node} {service.name} {'ok' if healthy else 'unhealthy'}\n".encode()
        self.send_response(200 if healthy else 500)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def listen_backlog() -> int:
    """The kernel's limit, as Go's net.Listen asks for it (the kube-apiserver's and the MCS's
    listeners). socketserver's default of 5 overflowed when the lab's shapes ran side by side
    on two cores: the SYNs it dropped were retried a second later, past the client's timeout."""
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return socket.SOMAXCONN


class _Server(ThreadingHTTPServer):
    """Listens on both families (IPv4 as mapped addresses), as the cluster's own servers do."""

    daemon_threads = True
    address_family = socket.AF_INET6
    request_queue_size = listen_backlog()

    def __init__(self, port: int, service: _Service, tls: ssl.SSLContext | None, host: str = "::"):
        self.service, self.tls = service, tls
        super().__init__((host, port), _Handler)

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    def finish_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        # The TLS handshake happens here, in the request's own thread, so that a slow
        # client never holds up the accept loop.
        if self.tls is not None:
            request.settimeout(2)
            request = self.tls.wrap_socket(request, server_side=True)
        super().finish_request(request, client_address)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that give up halfway (health checks, timeouts) are normal here


class _Service:
    """`ports`: each port, and the TLS context it serves with (None: plain HTTP)."""

    def __init__(self, node: str, name: str, ports: list[tuple[int, ssl.SSLContext | None]]):
        self.node, self.name, self.ports = node, name, ports
        self.state = STOPPED
        # What an answer says: the state of the last start or switch. Stopping closes the ports
        # but lets the connections already accepted be answered as before, as a server that
        # shuts down drains them (they answered 500 "unhealthy" before, strays in backend-dies).
        self.serving = HEALTHY
        self._servers: list[_Server] = []

    def set(self, state: str) -> None:
        if state == STOPPED:
            for server in self._servers:
                # Refuse new connections at once (what a dead process's port does); then let the
                # serving loop notice, which takes up to its poll interval.
                server.socket.shutdown(socket.SHUT_RDWR)
                server.shutdown()
                server.server_close()
            self._servers = []
        elif not self._servers:
            self._servers = [_Server(port, self, tls) for port, tls in self.ports]
            for server in self._servers:
                threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        if state != STOPPED:
            self.serving = state
        self.state = state


def serve(arguments: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Stand-ins for a node's API and router")
    parser.add_argument("--control", required=True, type=Path, help="Unix socket to take commands on")
    parser.add_argument("--name", required=True, help="the node's name, in every answer")
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--api", type=int, help="the API's port")
    parser.add_argument("--mcs", type=int, help="the machine config server's HTTP port")
    parser.add_argument("--router", help="HEALTH_PORT,INGRESS_PORT of the router")
    parser.add_argument("--mcs-tls", type=int, help="the machine config server's HTTPS port (with --mcs)")
    parser.add_argument("--router-tls", type=int, help="the router's HTTPS ingress port (with --router)")
    args = parser.parse_args(arguments)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.cert, args.key)
    services = {}
    if args.api:
        services[API] = _Service(args.name, API, [(args.api, tls)])
    if args.mcs:
        services[MCS] = _Service(args.name, MCS, [(args.mcs, None)] + ([(args.mcs_tls, tls)] if args.mcs_tls else []))
    if args.router:
        ports = [(int(port), None) for port in args.router.split(",")]
        services[ROUTER] = _Service(args.name, ROUTER, ports + ([(args.router_tls, tls)] if args.router_tls else []))

    class Control(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for line in self.rfile:
                service, state = line.decode().split()
                services[service].set(state)
                self.wfile.write(b"ok\n")

    with socketserver.UnixStreamServer(str(args.control), Control) as control:
        control.serve_forever()


class StandIns:
    """The lab's side: switches the services of one running stand-in process."""

    def __init__(self, control: Path):
        self.control = control

    def ready(self) -> bool:
        """Taking commands: the socket file appears before it listens, so connect to see."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            try:
                connection.connect(str(self.control))
            except OSError:
                return False
        return True

    def set(self, service: str, state: str) -> None:
        if state not in STATES:
            raise ValueError(f"{state!r} is not one of {', '.join(STATES)}")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(5)
            connection.connect(str(self.control))
            connection.sendall(f"{service} {state}\n".encode())
            if connection.makefile().readline().strip() != "ok":
                raise RuntimeError(f"the stand-in at {self.control} did not switch {service} to {state}")


if __name__ == "__main__":
    serve()
