"""Keystone over TLS for one test: an https front on loopback that hands each request to the local
cloud's Keystone (plain http on 127.0.0.1:5000) and its answer back, with a CA made for it.

The local cloud serves every endpoint over http. A test that needs an https auth_url (a clouds.yaml
entry of its own, naming the front and its CA) beside the catalog Keystone really answers with (whose
identity endpoint stays http) gets it here, without touching the catalog, the services or the
clouds.yaml the other tests share: the front lives in the test's process and goes with it. Only
version discovery documents are rewritten to name the front (keystoneauth follows their links);
tokens and their catalogs pass as Keystone wrote them. Test harness.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harness.kubeapi import make_ca, make_leaf
from harness.localcloud.layout import HOST, PORTS, url

# Hop-by-hop headers (RFC 9110 7.6.1) and what the front sets itself.
_NOT_PASSED = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "host"}
_DISCOVERY = {"/", "/v3", "/v3/"}


@dataclass
class TlsFront:
    url: str  # https://127.0.0.1:<port>/v3, an auth_url
    ca: Path  # the CA that signed the front's certificate (a clouds.yaml cacert)
    seen: list[str] = field(default_factory=list)  # "METHOD path" of each request that crossed it


@contextmanager
def keystone_over_tls(directory: Path) -> Iterator[TlsFront]:
    """The front, serving until the block ends; `directory` keeps its CA and key."""
    ca = make_ca(directory, "keystone-front-ca", "localcloud-keystone-front-ca")
    leaf = make_leaf(directory, "keystone-front", ca, "localcloud-keystone-front", server=True, address=HOST)
    seen: list[str] = []
    server = ThreadingHTTPServer((HOST, 0), _handler(seen))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(leaf.cert), str(leaf.key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    front = f"https://{HOST}:{server.server_address[1]}"
    server.front = front  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="keystone-tls-front", daemon=True)
    thread.start()
    try:
        yield TlsFront(f"{front}/v3", ca.cert, seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _handler(seen: list[str]) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            seen.append(f"{self.command} {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {name: value for name, value in self.headers.items() if name.lower() not in _NOT_PASSED}
            keystone = http.client.HTTPConnection(HOST, PORTS["keystone"], timeout=120)
            try:
                keystone.request(self.command, self.path, body=body, headers=headers)
                answer = keystone.getresponse()
                data = answer.read()
                passed = [(name, value) for name, value in answer.getheaders() if name.lower() not in _NOT_PASSED]
                status = answer.status
            finally:
                keystone.close()
            if self.command == "GET" and self.path.split("?")[0] in _DISCOVERY:
                data = data.replace(url("keystone").encode(), self.server.front.encode())  # type: ignore[attr-defined]
            self.send_response(status)
            for name, value in passed:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    return Forward
