"""The lab's parts that need no namespaces: config and log reading, the arithmetic of the
figures, scenario order, reporting, and the client against a loopback server."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Address

import pytest

from cluster.addresses import plan_addresses
from harness.lab import report, runner, standins
from harness.lab.client import LONGEST_LIFE_S, Probe, Sample, _insecure_context, _request, first_lasting_success, first_success
from harness.lab.keepalived import Status, parse
from harness.lab.runner import LabRun, order
from harness.lab.observation import Observation, Result, _path, takeover_budget, two_holders
from ignition.networking import KEEPALIVED_CONF
from tests.ignition.test_networking import standalone_config, files_of


def _conf(role: str, workers: int | None = None) -> str:
    config = standalone_config(workers=workers)
    plan = plan_addresses(config)
    node = {
        "bootstrap": plan.bootstrap,
        "master": plan.masters[0],
        "worker": plan.workers[0] if plan.workers else None,
    }[role]
    assert node is not None
    return files_of(config, node)[KEEPALIVED_CONF].decode()


def test_reads_what_each_node_kind_runs():
    bootstrap, master, worker = parse(_conf("bootstrap")), parse(_conf("master")), parse(_conf("worker"))
    compact_master = parse(_conf("master", workers=0))
    assert [(i.name, i.priority, i.healthy_priority) for i in bootstrap.instances] == [("api", 50, 100)]
    assert [(i.name, i.priority, i.healthy_priority) for i in master.instances] == [("api", 40, 90)]
    assert [(i.name, i.healthy_priority) for i in worker.instances] == [("ingress", 40)]
    assert [i.name for i in compact_master.instances] == ["api", "ingress"]
    api = master.instance("api")
    assert api is not None and api.vip == IPv4Address("10.0.0.5") and api.advert_int == 1
    assert [(s.name, s.interval, s.rise, s.fall, s.weight) for s in api.scripts] == [
        ("api_ready", 2, 3, 2, 15),
        ("api_haproxy", 2, 3, 2, 15),
        ("mcs_listening", 1, 3, 2, 20),
    ]


def test_follows_interface_state_and_priority_from_the_log():
    status = Status(parse(_conf("master")))
    assert not status.healthy() and status.interface is None  # no state yet
    status.feed("starting keepalived on ens3, which holds 10.0.0.20")
    status.feed("Sun Nov 22 05:02:18 2026: (api) Entering BACKUP STATE (init)")
    status.feed("Sun Nov 22 05:02:22 2026: (api) Changing effective priority from 40 to 70")
    assert not status.healthy()
    status.feed("Sun Nov 22 05:02:24 2026: (api) Changing effective priority from 70 to 90")
    assert status.healthy() and (status.interface, status.starts) == ("ens3", 1)
    status.feed("Sun Nov 22 05:02:30 2026: (api) Entering FAULT STATE")
    assert not status.healthy()
    # keepalived-run follows the address: a new keepalived, from its base priority.
    status.feed("starting keepalived on br-ex, which holds 10.0.0.20")
    assert (status.interface, status.starts) == ("br-ex", 2)
    assert status.describe() == "api - 40"


HISTORY = [(0.0, frozenset()), (1.0, frozenset({"a"})), (5.0, frozenset({"a", "b"})), (5.5, frozenset({"b"}))]


def test_counts_time_with_two_holders_within_a_window():
    assert two_holders(HISTORY, 0, 10) == pytest.approx(0.5)
    assert two_holders(HISTORY, 5.2, 10) == pytest.approx(0.3)
    assert two_holders(HISTORY, 0, 5.1) == pytest.approx(0.1)
    assert two_holders(HISTORY[:3], 0, 6) == pytest.approx(1.0)  # still two at the end


def test_counts_time_with_two_holders_one_of_them_a_given_node():
    """A former holder beside a newcomer (stale) is told from newcomers racing each other."""
    raced = [(0.0, frozenset({"a"})), (1.0, frozenset()), (2.0, frozenset({"b", "c"})), (2.1, frozenset({"c"}))]
    assert two_holders(raced, 0, 10) == pytest.approx(0.1)
    assert two_holders(raced, 0, 10, among="a") == 0
    assert two_holders(raced, 0, 10, among="b") == pytest.approx(0.1)
    assert two_holders(HISTORY, 0, 10, among="a") == pytest.approx(0.5)


def test_path_lists_the_holders_from_the_fault_on():
    assert _path(HISTORY, 2.0, 10) == ["a", "a+b", "b"]
    assert _path(HISTORY, 0.5, 4) == ["-", "a"]


def test_first_success_is_the_first_to_finish_after_the_fault():
    samples = [Sample("api", 0.9, 1.0, True, ""), Sample("api", 1.1, 1.6, True, ""), Sample("api", 1.2, 1.3, True, "")]
    assert first_success(samples, 1.0) == samples[2]
    assert first_success(samples, 2.0) is None


def test_requests_failing_before_the_new_holder_answers_are_in_the_window():
    """address-moves as CI saw it: the former holder answered 0.42 s after the fault, the VIP
    reached its new holder at 0.78 s; the requests that failed between were the takeover's own."""
    observation = Observation.__new__(Observation)
    observation.result = Result("address-moves", "api", fault_at=10.0, moved_s=0.78)
    observation._in_force_at, observation._second_window = 10.0, None
    observation._samples = [
        Sample("api", 10.1, 10.42, True, "through the former holder"),
        Sample("api", 10.65, 10.7, False, "ConnectionResetError"),
        Sample("api", 10.69, 10.72, False, "ConnectionResetError"),
        Sample("api", 10.8, 10.9, True, "through the new holder"),
        Sample("api", 11.5, 11.6, False, "a stray after the takeover"),
    ]
    observation._recovered_at = 10.42
    observation.hold_window_until_the_new_holder_answers()
    assert observation.result.figures["answers_after_move_s"] == 0.9
    failed = [sample for sample in observation._samples if not sample.ok]
    assert [observation._in_second_window(sample) for sample in failed] == [True, True, False]


def test_a_lasting_success_is_one_that_every_request_of_the_hold_after_it_matches():
    # A first answer, then a second of failures (the client took a loser's gratuitous ARP), then answers.
    ticks = [round(1.0 + 0.05 * n, 2) for n in range(100)]
    samples = [Sample("api", t, t + 0.01, t == 1.2 or t >= 2.3, "") for t in ticks]
    assert first_success(samples, 1.0).start == 1.2
    assert first_lasting_success(samples, 1.0, 1.0).start == 2.3
    # Not before the requests of its hold have all ended: one may still be timing out.
    ended = 2.3 + 1.0 + LONGEST_LIFE_S  # 5.8: the hold's last request has timed out by then
    assert first_lasting_success([s for s in samples if s.start < ended - 0.1], 1.0, 1.0) is None
    assert first_lasting_success([s for s in samples if s.start <= ended], 1.0, 1.0).start == 2.3


def test_runs_what_a_scenario_needs_first_in_order():
    assert order([]) == [
        "bring-up",
        "bootstrap-done",
        "address-moves",
        "holder-killed",
        "api-unhealthy",
        "link-cut",
        "backend-dies",
        "new-node",
        "keepalived-restart",
        "ingress",
    ]
    assert order(["link-cut"]) == ["bring-up", "bootstrap-done", "link-cut"]
    assert order(["ingress"]) == ["bring-up", "ingress"]


def test_takeover_budget():
    assert takeover_budget(1) == 4
    assert takeover_budget(2) == 7


def test_says_everything_missing_in_one_message(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner.shutil, "which", lambda command: None if command in ("keepalived", "nft") else "/bin/x")
    monkeypatch.setattr(runner.netns, "unavailable", lambda: "network namespaces need root")
    assert runner.unavailable() == (
        "network namespaces need root; not installed: keepalived, nft (Debian packages: keepalived nftables)"
    )


def test_results_survive_json_and_show_in_the_table():
    result = Result(
        "holder-killed", "api", "ocp4-master-2", "ocp4-master-1", ["ocp4-master-2", "ocp4-master-1"], 3.3, 3.31
    )
    result.requests, result.failed, result.failed_outside, result.settled = 100, 60, 0, True
    run = LabRun(
        "dev", 1.0, {"ocp4-bootstrap": "bootstrap", "ocp4-master-1": "master", "ocp4-master-2": "master"}, [result]
    )
    assert LabRun.from_dict(json.loads(report.as_json([run]))[0]) == run
    text = report.as_text([run])
    assert "takeover target 4 s" in text
    assert "holder-killed  master-2 > master-1  3.30     3.31       100       60 (0)" in text
    assert "left behind: nothing" in text


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ok\n"
        self.send_response(200 if self.path == "/ok" else 500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_probe_counts_successes_and_failures(loopback_server: int):
    targets = {"good": f"http://127.0.0.1:{loopback_server}/ok", "bad": f"http://127.0.0.1:{loopback_server}/no"}
    process = subprocess.Popen(
        Probe.command(targets, interval=0.05, max_seconds=0.5), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    probe = Probe(process)
    process.wait(timeout=10)  # it stops by itself after max_seconds
    samples = probe.stop()
    good, bad = [s for s in samples if s.target == "good"], [s for s in samples if s.target == "bad"]
    assert good and all(sample.ok for sample in good)
    assert bad and not any(sample.ok for sample in bad) and bad[0].detail == "500 ok"
    assert all(sample.start <= sample.end for sample in samples)


def test_a_failed_request_says_whether_tcp_tls_or_the_answer_failed():
    """TCP gets the connect timeout and TLS the answer's: a TLS handshake slowed by a busy CPU
    is not taken for a VIP that does not route (connecting timeouts in bring-up and
    bootstrap-done came past 0.5 s by 0.01-0.2 s, TCP and TLS together)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)  # the kernel completes TCP; nobody speaks TLS
    port = listener.getsockname()[1]
    try:
        ok, detail = _request(f"https://127.0.0.1:{port}/readyz", 0.5, 0.3, _insecure_context())
        assert (ok, detail) == (False, "TimeoutError handshaking")
        ok, detail = _request(f"http://127.0.0.1:{port}/", 0.5, 0.3, _insecure_context())
        assert (ok, detail) == (False, "TimeoutError waiting")
    finally:
        listener.close()
    ok, detail = _request(f"https://127.0.0.1:{port}/readyz", 0.5, 0.3, _insecure_context())
    assert (ok, detail) == (False, "ConnectionRefusedError connecting")


def test_quiet_times_are_the_gaps_between_faults(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runner.time, "monotonic", lambda: 100.0)
    results = [Result("a", "api", fault_at=1, settled_at=10), Result("b", "api", fault_at=12, settled_at=20)]
    results.append(Result("no fault", "api"))  # skipped: never injected
    assert runner._quiet_times(results) == [(10, 12), (20, 100.0)]


def test_a_stand_in_takes_a_burst_of_connections_before_it_accepts_any():
    """Connections the kernel completes wait in the listener's queue until the serving loop
    accepts them. The stand-in asks for as long a queue as the kube-apiserver does, so a burst
    while its loop waits for the CPU is not dropped (the lab's bring-up on two busy cores: 41
    SYNs dropped by a queue of 5, each a client timeout)."""
    service = standins._Service("node", standins.API, [])
    server = standins._Server(0, service, None, host="::1")  # its loop not started: nothing is accepted
    port = server.server_address[1]
    burst = []
    try:
        for _ in range(64):
            connection = socket.create_connection(("::1", port), timeout=0.5)
            burst.append(connection)
    finally:
        for connection in burst:
            connection.close()
        server.server_close()
    assert len(burst) == 64


def test_a_stand_in_stopped_answers_what_it_had_accepted_as_before():
    """Stopping closes the ports; a request already accepted is answered as a server that drains
    its connections would, not with an error it never gave before the stop."""
    service = standins._Service("node", standins.API, [])
    service.set(standins.HEALTHY)
    server = standins._Server(0, service, None, host="::1")
    try:
        with socket.create_connection(("::1", server.server_address[1]), timeout=2) as client:
            client.sendall(b"GET /readyz HTTP/1.0\r\n\r\n")
            service.set(standins.STOPPED)
            server.handle_request()
            answer = client.makefile("rb").read()
    finally:
        server.server_close()
    assert answer.startswith(b"HTTP/1.0 200"), answer
