"""ocp/approver.py against a real Kubernetes API server (harness/kubeapi.py: etcd, kube-apiserver and
the csrsigning controller on 127.0.0.1): CSRs made with real keys, each sent as the identity that
would send it; only this stack's nodes' are approved (and then signed, with exactly the subject and
names the approver judged), every other stays pending. Crafted requests the API takes (Go's PEM
reading) stay pending; the client requests' times are the API server's, the servers' are set
relative to them."""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime, timedelta

from cryptography import x509

from cluster.csr import CLIENT_SIGNER, CLOCK_SKEW, NODE_BOOTSTRAPPER, SERVING_SIGNER, Verdict, parse_time
from harness import kubeapi
from ocp.approver import approve_until_ready, one_pass
from ocp.kube import Kube
from tests.ocp.played import PlayedCluster, request_pem
from tools import toolchain

NODES = {"ocp4-master-0": "192.0.2.20", "ocp4-worker-0": "192.0.2.30", "ocp4-worker-1": "192.0.2.31"}
DOMAIN = "ocp4.lab.local"
CLIENT = ["digital signature", "client auth"]
SERVING = ["digital signature", "server auth"]
NOW = timedelta(0)  # no settling where a test is about another rule (tests/ocp/test_csr_race.py has the period)


def submit(api: kubeapi.KubeAPI, name: str, requester: str, signer: str, usages: list[str], pem: str) -> None:
    """As the requester (impersonated by the admin): the API records it as spec.username."""
    PlayedCluster(api, {}, DOMAIN).submit(name, requester, signer, usages, pem)


def node(name: str) -> str:
    return f"system:node:{name}"


def kube(api: kubeapi.KubeAPI) -> Kube:
    return Kube(str(toolchain.binary("kubectl")), api.kubeconfig)


def csrs(api: kubeapi.KubeAPI) -> dict[str, dict]:
    return {i["metadata"]["name"]: i for i in json.loads(api.kubectl("get", "csr", "-o", "json").stdout)["items"]}


def created(api: kubeapi.KubeAPI, name: str) -> datetime:
    """A CSR's creationTimestamp: the API server's clock."""
    return parse_time(csrs(api)[name]["metadata"]["creationTimestamp"])


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def issued(api: kubeapi.KubeAPI, name: str, timeout: float = 60) -> x509.Certificate:
    deadline = time.monotonic() + timeout
    while True:
        certificate = (csrs(api)[name].get("status") or {}).get("certificate")
        if certificate:
            return x509.load_pem_x509_certificate(base64.b64decode(certificate))
        assert time.monotonic() < deadline, f"{name} was not signed in {timeout} s"
        time.sleep(0.5)


def signed_as_judged(api: kubeapi.KubeAPI, verdict: Verdict) -> None:
    """The certificate Kubernetes issued has exactly the subject and names the approver judged."""
    certificate = issued(api, verdict.csr)
    assert ", ".join(sorted(a.rfc4514_string() for a in certificate.subject)) == verdict.subject
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        found = sorted([*(f"DNS:{d}" for d in names.get_values_for_type(x509.DNSName)), *(f"IP:{i}" for i in names.get_values_for_type(x509.IPAddress))])
        assert len(found) == len(list(names))
    except x509.ExtensionNotFound:
        found = []
    assert tuple(found) == verdict.names, (verdict, found)


# name -> (requester, signer, usages, CSR, approved?): the cases, made by who would make them.
CASES = {
    "good-client": (NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, lambda: request_pem(node("ocp4-worker-0")), True),
    "good-serving": (node("ocp4-worker-0"), SERVING_SIGNER, SERVING, lambda: request_pem(node("ocp4-worker-0"), dns=["ocp4-worker-0"], ips=["192.0.2.30"]), True),
    "wrong-requester": ("system:serviceaccount:default:builder", CLIENT_SIGNER, CLIENT, lambda: request_pem(node("ocp4-worker-1")), False),
    "wrong-node": (NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, lambda: request_pem(node("ocp4-worker-7")), False),
    "other-cluster": (NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, lambda: request_pem(node("other-worker-0")), False),
    "extra-sans": (node("ocp4-worker-1"), SERVING_SIGNER, SERVING, lambda: request_pem(node("ocp4-worker-1"), dns=["ocp4-worker-1", "api.ocp4.lab.local"], ips=["192.0.2.31"]), False),
    "foreign-ip": (node("ocp4-worker-1"), SERVING_SIGNER, SERVING, lambda: request_pem(node("ocp4-worker-1"), dns=["ocp4-worker-1"], ips=["198.51.100.1"]), False),
    "serving-by-another": (node("ocp4-worker-0"), SERVING_SIGNER, SERVING, lambda: request_pem(node("ocp4-worker-1"), dns=["ocp4-worker-1"], ips=["192.0.2.31"]), False),
}


def test_only_this_stacks_nodes_certificates_are_approved_and_signed_as_judged(api):
    for name, (requester, signer, usages, pem, _) in CASES.items():
        submit(api, name, requester, signer, usages, pem())
    # The servers were made a minute before the first request.
    servers = {name: stamp(min(created(api, csr) for csr in CASES) - timedelta(minutes=1)) for name in NODES}
    result = one_pass(kube(api), NODES, DOMAIN, servers, settle=NOW)
    verdicts = {v.csr: v for v in result.verdicts}
    assert {name: v.approve for name, v in verdicts.items()} == {name: case[4] for name, case in CASES.items()}
    assert "not the node bootstrapper" in verdicts["wrong-requester"].reason
    assert "ocp4-worker-7 is not a node of this stack" in verdicts["wrong-node"].reason
    assert "other-worker-0 is not a node of this stack" in verdicts["other-cluster"].reason
    assert "DNS names ['api.ocp4.lab.local']" in verdicts["extra-sans"].reason
    assert "IP addresses ['198.51.100.1']" in verdicts["foreign-ip"].reason
    assert "not by system:node:ocp4-worker-1 itself" in verdicts["serving-by-another"].reason
    # What the API says: the approved are signed, as judged; the rest have no condition at all.
    for name in ("good-client", "good-serving"):
        signed_as_judged(api, verdicts[name])
    items = csrs(api)
    assert {name for name, item in items.items() if (item.get("status") or {}).get("certificate")} == {"good-client", "good-serving"}
    pending = {name for name, item in items.items() if not (item.get("status") or {}).get("conditions")}
    assert pending == {name for name, case in CASES.items() if not case[4]}


# The crafted requests: what the API takes (Go's pem.Decode and ParseCSR) but is not one block alone.
PEM_NODES = {"pem-master-0": "192.0.2.120", "pem-worker-0": "192.0.2.130"}


def crafted() -> dict[str, str]:
    worker, master = request_pem(node("pem-worker-0")), request_pem(node("pem-master-0"))
    return {
        # Go reads the master's (the worker's BEGIN starts no line); cryptography read the worker's.
        "pem-space-worker-master": " " + worker + master,
        "pem-two-blocks": worker + master,
        "pem-trailing-garbage": worker + "garbage\n",
        "pem-text-before": "hello\n" + worker,
        "pem-headers": worker.replace("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n", 1),
    }


def test_crafted_requests_the_api_takes_stay_pending(api):
    requests = crafted()
    for name, pem in requests.items():
        submit(api, name, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, pem)
    servers = {name: stamp(created(api, "pem-space-worker-master") - timedelta(minutes=1)) for name in PEM_NODES}
    verdicts = {v.csr: v for v in one_pass(kube(api), PEM_NODES, DOMAIN, servers, settle=NOW).verdicts if v.csr in requests}
    assert {name: v.approve for name, v in verdicts.items()} == dict.fromkeys(requests, False)
    assert "the request holds 2 PEM blocks, not one" in verdicts["pem-space-worker-master"].reason
    assert "the request holds 2 PEM blocks, not one" in verdicts["pem-two-blocks"].reason
    for name in ("pem-trailing-garbage", "pem-text-before", "pem-headers"):
        assert "not one CERTIFICATE REQUEST PEM block" in verdicts[name].reason, verdicts[name]
    # Why it matters: approved by hand, the first is signed as the master, not the worker it shows first.
    api.kubectl("certificate", "approve", "pem-space-worker-master")
    assert issued(api, "pem-space-worker-master").subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == node("pem-master-0")


def test_two_claims_of_one_node_approve_neither_until_one_is_gone(api):
    nodes = {"dup-worker-0": "192.0.2.140"}
    for name in ("dup-a", "dup-b"):
        submit(api, name, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("dup-worker-0")))
    servers = {"dup-worker-0": stamp(created(api, "dup-a") - timedelta(minutes=1))}
    verdicts = {v.csr: v for v in one_pass(kube(api), nodes, DOMAIN, servers, settle=NOW).verdicts if v.csr.startswith("dup-")}
    assert not verdicts["dup-a"].approve and not verdicts["dup-b"].approve
    assert verdicts["dup-a"].reason == "2 client requests for dup-worker-0 since its server was made (dup-a, dup-b): none is approved automatically, as one may be a forger's"
    api.kubectl("delete", "csr", "dup-b")
    again = {v.csr: v for v in one_pass(kube(api), nodes, DOMAIN, servers, settle=NOW).verdicts if v.csr.startswith("dup-")}
    assert again["dup-a"].approve
    signed_as_judged(api, again["dup-a"])


def test_a_client_request_is_tied_to_its_servers_creation(api):
    nodes = {"time-worker-0": "192.0.2.150"}
    submit(api, "time-a", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("time-worker-0")))
    made = created(api, "time-a")

    def verdict(server: datetime) -> Verdict:
        return next(v for v in one_pass(kube(api), nodes, DOMAIN, {"time-worker-0": stamp(server)}, settle=NOW).verdicts if v.csr == "time-a")

    # A server made after the request: the request is not its kubelet's.
    assert "before time-worker-0's server" in verdict(made + timedelta(minutes=1)).reason
    # A server made 51 minutes before now: past the window.
    late = verdict(made - timedelta(minutes=121))
    assert not late.approve and "more than 120 min ago" in late.reason and "replace time-worker-0's server" in late.reason
    # The bootstrap (in the stack's nodes while it exists): never, its server's time whatever it is.
    submit(api, "time-bootstrap", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("time-bootstrap")))
    servers = {"time-bootstrap": stamp(made - timedelta(minutes=1)), "time-worker-0": stamp(made + timedelta(minutes=1))}
    found = {v.csr: v for v in one_pass(kube(api), {**nodes, "time-bootstrap": "192.0.2.10"}, DOMAIN, servers, settle=NOW).verdicts}
    assert not found["time-bootstrap"].approve and found["time-bootstrap"].reason == "time-bootstrap is the bootstrap, which never joins the cluster as a Node"
    # Made a minute before the request: approved, and signed as judged.
    good = verdict(made - timedelta(minutes=1))
    assert good.approve
    signed_as_judged(api, good)


def test_a_node_whose_node_was_deleted_joins_again_only_on_a_new_server(api):
    nodes = {"gone-worker-0": "192.0.2.160"}
    submit(api, "gone-first", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("gone-worker-0")))
    first = created(api, "gone-first")
    server = {"gone-worker-0": stamp(first - timedelta(minutes=1))}
    assert [v.csr for v in one_pass(kube(api), nodes, DOMAIN, server, settle=NOW).verdicts if v.approve] == ["gone-first"]
    issued(api, "gone-first")
    api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gone-worker-0"}}))
    api.kubectl("delete", "node", "gone-worker-0")
    time.sleep(CLOCK_SKEW.total_seconds() + 2)  # the new server below is made after the first approval, beyond the clocks' skew
    submit(api, "gone-again", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("gone-worker-0")))
    again = next(v for v in one_pass(kube(api), nodes, DOMAIN, server, settle=NOW).verdicts if v.csr == "gone-again")
    assert not again.approve
    assert again.reason.startswith("a client certificate of gone-worker-0 was approved already (gone-first) and there is no Node gone-worker-0: its Node was deleted")
    # Its server replaced (made a second before the new request): it joins.
    replaced = {"gone-worker-0": stamp(created(api, "gone-again") - timedelta(seconds=1))}
    joined = next(v for v in one_pass(kube(api), nodes, DOMAIN, replaced, settle=NOW).verdicts if v.csr == "gone-again")
    assert joined.approve
    signed_as_judged(api, joined)


def test_control_characters_never_reach_a_printed_line(api):
    line = "\x1b[2K\rcsr: approved ctl-x"  # a terminal erasing the line, then a line of its own
    submit(api, "ctl-subject", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node(line)))
    said: list[str] = []
    approve_until_ready(kube(api), NODES, {"ocp4-worker-0"}, DOMAIN, time.monotonic(), said.append, interval=0.1)
    (told,) = [text for text in said if "ctl-subject" in text]
    assert all(c.isprintable() for text in said for c in text), said
    assert "\\x1b[2K\\rcsr: approved ctl-x" in told


def test_the_loop_ends_when_the_workers_are_ready(api):
    kube = Kube(str(toolchain.binary("kubectl")), api.kubeconfig)
    for name in ("ocp4-worker-0", "ocp4-worker-1"):
        api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready", "lastHeartbeatTime": None, "lastTransitionTime": None}]}}
    api.kubectl("patch", "node", "ocp4-worker-0", "--subresource=status", "--type=merge", "-p", json.dumps(ready))
    said: list[str] = []
    # Worker 1 not Ready: the deadline ends it, saying who is missing.
    assert not approve_until_ready(kube, NODES, {"ocp4-worker-0", "ocp4-worker-1"}, DOMAIN, time.monotonic() + 1, said.append, interval=0.2)
    assert said[-1] == "csr: not Ready by the deadline: ocp4-worker-1"
    api.kubectl("patch", "node", "ocp4-worker-1", "--subresource=status", "--type=merge", "-p", json.dumps(ready))
    assert approve_until_ready(kube, NODES, {"ocp4-worker-0", "ocp4-worker-1"}, DOMAIN, time.monotonic() + 30, said.append, interval=0.2)
    # A client CSR of a node that registered is not approved (its kubelet renews itself).
    submit(api, "after-register", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("ocp4-worker-1")))
    verdict = next(v for v in one_pass(kube, NODES, DOMAIN).verdicts if v.csr == "after-register")
    assert not verdict.approve and "Node ocp4-worker-1 exists" in verdict.reason
