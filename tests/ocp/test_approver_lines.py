"""What ocp/approver.py prints of a verdict (`tell`), pure: names are one shell word each, a command it
offers, pasted, runs that command and nothing else, and each request shows its key to match on the node.
tests/ocp/test_approver.py runs the same against a real API server."""

from __future__ import annotations

import subprocess

from cluster.csr import Verdict
from ocp.approver import ISSUED_KEY, JOURNAL, PENDING_KEY, tell

KEY = "5d0f" * 16


def told(verdict: Verdict, stack: str = "lab") -> list[str]:
    said: list[str] = []
    tell(verdict, said.append, stack)
    return said


def pasted(line: str, work) -> list[str]:
    """The line's `python -m ocp ...`, run by a shell whose `python` prints its arguments."""
    command = line[line.index("python -m ocp"):]
    return subprocess.run(["sh", "-c", 'python() { printf "%s\\n" "$@"; }; ' + command], cwd=work, capture_output=True, text=True).stdout.splitlines()


def test_a_request_offered_by_name_is_one_shell_word_with_what_to_check_on_its_node(tmp_path):
    verdict = Verdict("csr-8b2br", "ocp4-worker-0", "client", False, "2 client requests for ocp4-worker-0", by_name=True, key=KEY)
    lines = told(verdict, stack="lab; touch pwned")
    assert lines[0] == f"csr: left pending csr-8b2br (client): 2 client requests for ocp4-worker-0; key SHA-256 {KEY}"
    assert lines[1].startswith(f"csr:   approve it only if ocp4-worker-0's kubelet made it: on ocp4-worker-0 (its console or ssh), `{JOURNAL}` names it")
    assert pasted(lines[1], tmp_path) == ["-m", "ocp", "approve-csrs", "--stack", "lab; touch pwned", "--csr", "csr-8b2br"]
    assert lines[2] == f"csr:   once approved, on ocp4-worker-0: `{ISSUED_KEY}` prints {KEY}, or the certificate went to another requester"
    assert list(tmp_path.iterdir()) == []


def test_a_kubelet_without_rotation_is_checked_by_its_pending_key():
    name = "node-csr-" + "a" * 43
    lines = told(Verdict(name, "ocp4-master-0", "client", False, "a master", by_name=True, key=KEY))
    assert f"`{PENDING_KEY}` prints its key {KEY} (the kubelet's pending key)" in lines[1]


def test_what_a_requester_named_is_shown_quoted_and_escaped(tmp_path):
    name = "csr-8b2br;touch pwned\x1b[2K"
    (line,) = told(Verdict(name, "ocp4-worker-0", "client", False, "its name is not one a kubelet gives"))
    assert line == "csr: left pending 'csr-8b2br;touch pwned\\x1b[2K' (client): its name is not one a kubelet gives"
    (approved,) = told(Verdict("--server=10.6.6.6:6443", "ocp4-worker-0", "serving", True, "serving certificate"))
    assert approved == "csr: approved --server=10.6.6.6:6443: serving certificate"
