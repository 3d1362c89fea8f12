"""The lab's client: timed request loops against the VIPs, from a namespace of its own.

The probe (this file run as a script, standard library only) starts one request every
INTERVAL seconds per target, each on a new connection with short timeouts, without waiting
for the ones still running: a takeover is seen within one interval, however long the
failing requests before it take. It prints one JSON line per request and stops when its
standard input closes or after MAX_SECONDS, whichever comes first:

    python client.py --target api=https://10.0.0.5:6443/readyz --target ingress=http://10.0.0.7/ \\
        [--interval 0.05] [--connect-timeout 0.5] [--timeout 1] [--max-seconds 60]

A request succeeds when the answer's status is 200. Times are CLOCK_MONOTONIC, which every
process on the machine shares, so they compare with the lab's own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

# Requests in flight at most, per target: one interval's worth for every timeout second, and then some.
MAX_IN_FLIGHT = 64
# Each request's limits (--connect-timeout for TCP; --timeout for TLS and for the answer):
# one started earlier than LONGEST_LIFE_S has ended.
CONNECT_TIMEOUT_S = 0.5
TIMEOUT_S = 1.0
LONGEST_LIFE_S = CONNECT_TIMEOUT_S + 2 * TIMEOUT_S


def _insecure_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the stand-in API's certificate is self-signed
    return context


def _request(url: str, connect_timeout: float, timeout: float, tls: ssl.SSLContext) -> tuple[bool, str]:
    """One request on a new connection. A failure says where it came: `connecting` (TCP: the
    VIP's route to a listening node, the kernel's work on both sides), `handshaking` (TLS: the
    server's CPU) or `waiting` for the answer. The TCP handshake has `connect_timeout`; the TLS
    handshake and each read of the answer have `timeout`, as clients give TLS a budget of its
    own (client-go: 10 s)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    phase = "connecting"
    try:
        sock = socket.create_connection((host, port), timeout=connect_timeout)
        sock.settimeout(timeout)
        if parts.scheme == "https":
            phase = "handshaking"
            sock = tls.wrap_socket(sock, server_hostname=host)
        connection.sock = sock
        phase = "waiting"
        connection.request("GET", parts.path or "/", headers={"Connection": "close"})
        response = connection.getresponse()
        body = response.read().decode(errors="replace").strip()
        return response.status == 200, f"{response.status} {body}"
    except (OSError, http.client.HTTPException) as error:
        return False, f"{type(error).__name__} {phase}"
    finally:
        connection.close()


def probe(arguments: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Timed request loops against URLs")
    parser.add_argument("--target", action="append", required=True, help="NAME=URL")
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--connect-timeout", type=float, default=CONNECT_TIMEOUT_S)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S)
    parser.add_argument("--max-seconds", type=float, default=60)
    args = parser.parse_args(arguments)
    targets = dict(target.split("=", 1) for target in args.target)
    tls = _insecure_context()  # one per probe: a context per request cost CPU the lab is short of
    lock = threading.Lock()
    stop = threading.Event()

    def one(name: str, url: str) -> None:
        start = time.monotonic()
        ok, detail = _request(url, args.connect_timeout, args.timeout, tls)
        line = json.dumps({"target": name, "start": start, "end": time.monotonic(), "ok": ok, "detail": detail})
        with lock:
            print(line, flush=True)

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    deadline = time.monotonic() + args.max_seconds
    with ThreadPoolExecutor(max_workers=MAX_IN_FLIGHT * len(targets)) as pool:
        tick = time.monotonic()
        while not stop.is_set() and tick < deadline:
            for name, url in targets.items():
                pool.submit(one, name, url)
            tick += args.interval
            stop.wait(max(tick - time.monotonic(), 0))


@dataclass(frozen=True)
class Sample:
    target: str
    start: float
    end: float
    ok: bool
    detail: str


class Probe:
    """The lab's side: a running probe and the samples it has sent back so far."""

    def __init__(self, process: subprocess.Popen[str]):
        self._process = process
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @staticmethod
    def command(targets: dict[str, str], interval: float, max_seconds: float) -> list[str]:
        flags = [f"--target={name}={url}" for name, url in targets.items()]
        return [sys.executable, __file__, *flags, f"--interval={interval}", f"--max-seconds={max_seconds}"]

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            sample = Sample(**json.loads(line))
            with self._lock:
                self._samples.append(sample)

    def samples(self, target: str | None = None) -> list[Sample]:
        with self._lock:
            return [sample for sample in self._samples if target in (None, sample.target)]

    def stop(self) -> list[Sample]:
        """Stop sending, wait for the requests in flight, and return every sample."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=10)
        self._reader.join(timeout=10)
        return self.samples()


def first_success(samples: Sequence[Sample], after: float) -> Sample | None:
    """The first request started at or after `after` that succeeded."""
    return min((sample for sample in samples if sample.ok and sample.start >= after), key=lambda s: s.end, default=None)


def first_lasting_success(samples: Sequence[Sample], after: float, hold: float) -> Sample | None:
    """The first success started at or after `after` that every request started in the `hold`
    seconds after it matches; None until all of those have ended (one that started a request's
    longest life later has come back)."""
    started = sorted((sample for sample in samples if sample.start >= after), key=lambda s: s.start)
    if not started:
        return None
    last = started[-1].start
    for index, sample in enumerate(started):
        if not sample.ok:
            continue
        if last < sample.start + hold + LONGEST_LIFE_S:
            return None
        if all(later.ok for later in started[index + 1 :] if later.start <= sample.start + hold):
            return sample
    return None


if __name__ == "__main__":
    probe()
