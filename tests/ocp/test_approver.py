"""ocp/approver.py against a real Kubernetes API server (harness/kubeapi.py: etcd, kube-apiserver and
the csrsigning controller on 127.0.0.1): CSRs made with real keys, each sent as the identity that
would send it; only this stack's nodes' are approved (and then signed, with exactly the subject and
names the approver judged), every other stays pending. Crafted requests the API takes (Go's PEM
reading, a SAN cryptography cannot read) stay pending, and so does a request no kubelet would name so;
the client requests' times are the API server's, the servers' are set relative to them, and the pass
judges at the API server's time. Requests are named as the API server names a kubelet's (`csr-` and
five characters it adds) unless a test is about the name."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from cluster.csr import CLIENT_SIGNER, CLOCK_SKEW, NODE_BOOTSTRAPPER, SERVING_SIGNER, Verdict, parse_time
from harness import kubeapi
from ocp.approver import ISSUED_KEY, PENDING_KEY, PKI, approve_until_ready, one_pass
from ocp.kube import Kube
from tests.certs import EDI_PARTY_NAME, X400_ADDRESS, der, request_with_names
from tests.ocp.played import PlayedCluster, request_pem
from tools import toolchain

NODES = {"ocp4-master-0": "192.0.2.20", "ocp4-worker-0": "192.0.2.30", "ocp4-worker-1": "192.0.2.31"}
DOMAIN = "ocp4.lab.local"
CLIENT = ["digital signature", "client auth"]
SERVING = ["digital signature", "server auth"]
NOW = timedelta(0)  # no settling where a test is about another rule (tests/ocp/test_csr_race.py has the period)


def submit(api: kubeapi.KubeAPI, requester: str, signer: str, usages: list[str], pem: str | bytes, name: str = "csr-") -> str:
    """As the requester (impersonated by the admin): the API records it as spec.username. Named as a
    kubelet's request is (`csr-` and what the API server adds) unless `name` says otherwise: its name."""
    return PlayedCluster(api, {}, DOMAIN).submit(name, requester, signer, usages, pem)


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


# name -> (requester, signer, usages, CSR, approved?): the issue's cases, made by who would make them.
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
    names = {case: submit(api, requester, signer, usages, pem()) for case, (requester, signer, usages, pem, _) in CASES.items()}
    # The servers were made a minute before the first request.
    servers = {name: stamp(min(created(api, csr) for csr in names.values()) - timedelta(minutes=1)) for name in NODES}
    result = one_pass(kube(api), NODES, DOMAIN, servers, settle=NOW)
    verdicts = {case: next(v for v in result.verdicts if v.csr == name) for case, name in names.items()}
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
    items = {name: item for name, item in csrs(api).items() if name in names.values()}
    assert {name for name, item in items.items() if (item.get("status") or {}).get("certificate")} == {names["good-client"], names["good-serving"]}
    pending = {name for name, item in items.items() if not (item.get("status") or {}).get("conditions")}
    assert pending == {names[case] for case, details in CASES.items() if not details[4]}


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
        submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, pem, name=name)
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
    a, b = (submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("dup-worker-0"))) for _ in range(2))
    servers = {"dup-worker-0": stamp(created(api, a) - timedelta(minutes=1))}
    verdicts = {v.csr: v for v in one_pass(kube(api), nodes, DOMAIN, servers, settle=NOW).verdicts if v.csr in (a, b)}
    assert not verdicts[a].approve and not verdicts[b].approve
    assert verdicts[a].reason == f"2 client requests for dup-worker-0 since its server was made ({', '.join(sorted([a, b]))}): none is approved automatically, as one may be a forger's"
    api.kubectl("delete", "csr", b)
    again = {v.csr: v for v in one_pass(kube(api), nodes, DOMAIN, servers, settle=NOW).verdicts if v.csr in (a, b)}
    assert again[a].approve
    signed_as_judged(api, again[a])


def test_a_client_request_is_tied_to_its_servers_creation(api):
    nodes = {"time-worker-0": "192.0.2.150"}
    request = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("time-worker-0")))
    made = created(api, request)

    def verdict(server: datetime) -> Verdict:
        return next(v for v in one_pass(kube(api), nodes, DOMAIN, {"time-worker-0": stamp(server)}, settle=NOW).verdicts if v.csr == request)

    # A server made after the request: the request is not its kubelet's.
    assert "before time-worker-0's server" in verdict(made + timedelta(minutes=1)).reason
    # A server made 51 minutes before now: past the window.
    late = verdict(made - timedelta(minutes=121))
    assert not late.approve and "more than 120 min ago" in late.reason and "replace time-worker-0's server" in late.reason
    # The bootstrap (in the stack's nodes while it exists): never, its server's time whatever it is.
    bootstrap = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("time-bootstrap")))
    servers = {"time-bootstrap": stamp(made - timedelta(minutes=1)), "time-worker-0": stamp(made + timedelta(minutes=1))}
    found = {v.csr: v for v in one_pass(kube(api), {**nodes, "time-bootstrap": "192.0.2.10"}, DOMAIN, servers, settle=NOW).verdicts}
    assert not found[bootstrap].approve and found[bootstrap].reason == "time-bootstrap is the bootstrap, which never joins the cluster as a Node"
    # Made a minute before the request: approved, and signed as judged.
    good = verdict(made - timedelta(minutes=1))
    assert good.approve
    signed_as_judged(api, good)


def test_a_node_whose_node_was_deleted_joins_again_only_on_a_new_server(api):
    nodes = {"gone-worker-0": "192.0.2.160"}
    gone = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("gone-worker-0")))
    first = created(api, gone)
    server = {"gone-worker-0": stamp(first - timedelta(minutes=1))}
    assert [v.csr for v in one_pass(kube(api), nodes, DOMAIN, server, settle=NOW).verdicts if v.approve] == [gone]
    issued(api, gone)
    api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gone-worker-0"}}))
    api.kubectl("delete", "node", "gone-worker-0")
    time.sleep(CLOCK_SKEW.total_seconds() + 2)  # the new server below is made after the first approval, beyond the clocks' skew
    back = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("gone-worker-0")))
    again = next(v for v in one_pass(kube(api), nodes, DOMAIN, server, settle=NOW).verdicts if v.csr == back)
    assert not again.approve
    assert again.reason.startswith(f"a client certificate of gone-worker-0 was approved already ({gone}) and there is no Node gone-worker-0: its Node was deleted")
    # Its server replaced (made a second before the new request): it joins.
    replaced = {"gone-worker-0": stamp(created(api, back) - timedelta(seconds=1))}
    joined = next(v for v in one_pass(kube(api), nodes, DOMAIN, replaced, settle=NOW).verdicts if v.csr == back)
    assert joined.approve
    signed_as_judged(api, joined)


def test_control_characters_never_reach_a_printed_line(api):
    line = "\x1b[2K\rcsr: approved ctl-x"  # a terminal erasing the line, then a line of its own
    name = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node(line)))
    said: list[str] = []
    approve_until_ready(kube(api), NODES, {"ocp4-worker-0"}, DOMAIN, time.monotonic(), said.append, interval=0.1)
    (told,) = [text for text in said if name in text]
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
    name = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("ocp4-worker-1")))
    verdict = next(v for v in one_pass(kube, NODES, DOMAIN).verdicts if v.csr == name)
    assert not verdict.approve and "Node ocp4-worker-1 exists" in verdict.reason


# ---- names are data (issue 49, finding 2)


def run_printed(line: str, work: Path) -> list[str]:
    """The `python -m ocp approve-csrs ...` of a printed line, pasted into a shell (`python` a function
    printing its arguments): what it ran with, one argument a line. Whatever else the line runs, runs."""
    command = line[line.index("python -m ocp approve-csrs"):]
    done = subprocess.run(["sh", "-c", 'python() { printf "%s\\n" "$@"; }; ' + command], cwd=work, capture_output=True, text=True)
    return done.stdout.splitlines()


def test_a_name_is_data_never_a_flag_nor_a_shell_line(api, tmp_path):
    """A forger's duplicate named as a shell line, a node's own serving request named as a flag of `oc`:
    neither is approved nor offered by name; every name printed is one shell word; a flag-like name reaches
    the API as a name (`--` before it), and the rest of the pass is approved as ever."""
    nodes = {"name-worker-0": "192.0.2.90", "name-worker-1": "192.0.2.91"}
    flag = submit(api, node("name-worker-0"), SERVING_SIGNER, SERVING, request_pem(node("name-worker-0"), dns=["name-worker-0"], ips=["192.0.2.90"]), name="--server=127.0.0.1:9")
    good = submit(api, node("name-worker-1"), SERVING_SIGNER, SERVING, request_pem(node("name-worker-1"), dns=["name-worker-1"], ips=["192.0.2.91"]))
    forged = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("name-worker-0")), name="csr-8b2br;touch pwned")
    kubelets = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node("name-worker-0")))
    servers = {name: stamp(created(api, forged) - timedelta(minutes=1)) for name in nodes}
    said: list[str] = []
    assert approve_until_ready(kube(api), nodes, set(), DOMAIN, time.monotonic(), said.append, created=servers, stack="lab", settle=NOW)
    mine = [line for line in said if any(name in line for name in (flag, good, forged, kubelets))]
    assert "csr: left pending --server=127.0.0.1:9 (serving): its name --server=127.0.0.1:9 is not one a kubelet gives its request" in "\n".join(mine), mine
    assert any(line.startswith(f"csr: approved {good}: serving certificate of name-worker-1") for line in mine), mine
    assert any(line.startswith("csr: left pending 'csr-8b2br;touch pwned' (client): ") for line in mine), mine
    # Pasted, each offered command names exactly the kubelet's request, and runs nothing else.
    offered = [line for line in said if "python -m ocp approve-csrs" in line]
    assert [run_printed(line, tmp_path) for line in offered if kubelets in line] == [["-m", "ocp", "approve-csrs", "--stack", "lab", "--csr", kubelets]]
    assert not any(forged in line or flag in line for line in offered), offered
    assert list(tmp_path.iterdir()) == []
    conditions = {name: {c["type"] for c in (item.get("status") or {}).get("conditions") or ()} for name, item in csrs(api).items()}
    assert conditions[good] == {"Approved"} and conditions[flag] == conditions[forged] == conditions[kubelets] == set()
    # By hand (`oc adm certificate approve`), a flag-like name reaches the API as a name, after `--`.
    kube(api).approve(flag)
    assert {c["type"] for c in csrs(api)[flag]["status"]["conditions"]} == {"Approved"}


def test_the_printed_key_is_the_requests_and_the_one_its_node_holds(api, tmp_path):
    """The fingerprint printed is openssl's of the request as the API holds it, and the node-side
    commands print it from the kubelet's files: kubelet-client-current.pem (the certificate, then the key)
    once issued, kubelet-client.key.tmp while pending (a kubelet without rotation)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, node("key-worker-0")), x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, "system:nodes")])
    pem = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    name = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, pem)
    servers = {"key-worker-0": stamp(created(api, name) - timedelta(minutes=1))}
    said: list[str] = []
    approve_until_ready(kube(api), {"key-worker-0": "192.0.2.95"}, set(), DOMAIN, time.monotonic(), said.append, created=servers, settle=NOW)
    (line,) = [line for line in said if line.startswith(f"csr: approved {name}: ")]
    printed = line.rsplit("; key SHA-256 ", 1)[1]
    held = base64.b64decode(csrs(api)[name]["spec"]["request"])
    public = subprocess.run(["openssl", "req", "-pubkey", "-noout"], input=held, capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=public, capture_output=True, check=True).stdout
    assert subprocess.run(["openssl", "sha256"], input=der, capture_output=True, check=True).stdout.decode().split("= ")[1].strip() == printed
    # On the node: the kubelet's files, as client-go's certificate store and the bootstrap write them.
    pki = tmp_path / "pki"
    pki.mkdir()
    sec1 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    (pki / "kubelet-client-current.pem").write_bytes(issued(api, name).public_bytes(serialization.Encoding.PEM) + sec1)
    (pki / "kubelet-client.key.tmp").write_bytes(sec1)
    for command in (ISSUED_KEY, PENDING_KEY):
        done = subprocess.run(["sh", "-c", command.replace(PKI, str(pki))], capture_output=True, text=True, check=True)
        assert done.stdout.split("= ")[1].strip() == printed, command


# ---- no request stops the approver (finding 3)


def test_no_request_and_no_failed_pass_stops_the_approver(api):
    """A node's own serving request whose SAN holds an x400Address (or an ediPartyName): Go reads it and
    checks its signature, so the API server takes it; cryptography cannot read it. It stays pending with
    why, and the pass goes on; a pass that fails is told, and the next one comes."""
    nodes = {"odd-worker-0": "192.0.2.100", "odd-worker-1": "192.0.2.101"}
    odd = {
        kind: submit(api, node("odd-worker-0"), SERVING_SIGNER, SERVING, request_with_names(node("odd-worker-0"), der(0x82, b"odd-worker-0") + names))
        for kind, names in (("x400Address", X400_ADDRESS), ("ediPartyName", EDI_PARTY_NAME))
    }
    good = submit(api, node("odd-worker-1"), SERVING_SIGNER, SERVING, request_pem(node("odd-worker-1"), dns=["odd-worker-1"], ips=["192.0.2.101"]))
    verdicts = {v.csr: v for v in one_pass(kube(api), nodes, DOMAIN, settle=NOW).verdicts}
    for name in odd.values():
        assert (verdicts[name].approve, verdicts[name].reason) == (
            False, "the request's extensions cannot be read here (UnsupportedGeneralNameType: x400Address/EDIPartyName are not supported types)"
        )
    assert verdicts[good].approve
    issued(api, good)

    class Flaky(Kube):
        """The first listing fails as no API error does (a bug, a proxy's HTML)."""

        failed = False

        def items(self, kind: str) -> list[dict]:
            if not Flaky.failed:
                Flaky.failed = True
                raise RuntimeError("the first listing fails")
            return super().items(kind)

    api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "odd-worker-1"}}))
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready", "lastHeartbeatTime": None, "lastTransitionTime": None}]}}
    api.kubectl("patch", "node", "odd-worker-1", "--subresource=status", "--type=merge", "-p", json.dumps(ready))
    said: list[str] = []
    flaky = Flaky(str(toolchain.binary("kubectl")), api.kubeconfig)
    assert approve_until_ready(flaky, nodes, {"odd-worker-1"}, DOMAIN, time.monotonic() + 30, said.append, interval=0.2, settle=NOW)
    assert said[0] == "csr: asking the API failed (RuntimeError: the first listing fails); trying again", said


# ---- the masters during the bootstrap (finding 5), both families' addresses (finding 7)


def test_while_the_bootstrap_runs_the_masters_join_through_this_approver_alone(api):
    """The installer's approve-csr.service is masked (ignition/nodes.py): the masters' kubelets ask (the
    played cluster), and this approver, told the bootstrap is there, approves their client and serving
    requests by the workers' rules until they are Ready; a master's client request from another requester
    stays pending. Once the bootstrap has handed over (its ConfigMap), a master's client request waits for
    its name. The nodes are dual-stack: their serving requests name both families' addresses."""
    nodes = {"boot-bootstrap": ["192.0.2.110", "2001:db8::110"]}
    nodes |= {f"boot-master-{i}": [f"192.0.2.11{i + 1}", f"2001:db8::11{i + 1}"] for i in range(3)}
    nodes |= {"boot-worker-0": ["192.0.2.120", "2001:db8::120"]}
    played = PlayedCluster(api, nodes, DOMAIN, foreign=False)
    joining = ["boot-master-0", "boot-master-1", "boot-worker-0"]  # boot-master-2 boots late, below
    for name in joining:
        played.ask(name, "client")
    forged = submit(api, "system:serviceaccount:default:builder", CLIENT_SIGNER, CLIENT, request_pem(node("boot-master-0")))
    first = min(created(api, played.names[f"{name}-client"]) for name in joining)
    servers = {name: stamp(first - timedelta(seconds=2)) for name in nodes if name != "boot-bootstrap"}
    played.joining = joining
    played.start()
    said: list[str] = []
    try:
        assert approve_until_ready(
            kube(api), nodes, set(joining), DOMAIN, time.monotonic() + 120, said.append,
            interval=0.5, created=servers, stack="boot", settle=timedelta(seconds=2), bootstrap=True,
        ), said
    finally:
        played.stop()
    approved = {line.split(":", 2)[1].removeprefix(" approved ") for line in said if line.startswith("csr: approved ")}
    assert approved == {played.names[f"{name}-{kind}"] for name in joining for kind in ("client", "serving")}, said
    signed = issued(api, played.names["boot-master-0-serving"])
    ips = sorted(str(ip) for ip in signed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress))
    assert ips == ["192.0.2.111", "2001:db8::111"]
    forged_told = next(line for line in said if line.startswith(f"csr: left pending {forged} "))
    assert "requested by system:serviceaccount:default:builder, not the node bootstrapper" in forged_told
    assert csrs(api)[forged].get("status", {}).get("conditions") is None
    # The bootstrap hands over: the late master's client request is approved only by name.
    api.kubectl("create", "configmap", "bootstrap", "-n", "kube-system", "--from-literal=status=complete")
    late = played.ask("boot-master-2", "client")
    time.sleep(3)  # past the settling
    (verdict,) = [v for v in one_pass(kube(api), nodes, DOMAIN, servers, settle=timedelta(seconds=2), bootstrap=True).verdicts if v.csr == late]
    assert (verdict.approve, verdict.by_name) == (False, True)
    assert verdict.reason == "boot-master-2 is a master: its client certificate is never approved automatically, once the bootstrap has handed over"


# ---- the settling wait's clock is the API server's (finding 7)


class Skewed(datetime):
    """This machine's clock, an hour off (set per test): what the approver once judged the settling by."""

    offset = timedelta(0)

    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + cls.offset


@pytest.mark.parametrize("hours", [1, -1])
def test_the_settling_wait_runs_on_the_api_servers_clock(api, monkeypatch, hours):
    """A worker's client request, its server made a minute before: ahead, this machine's clock would
    approve it at once; behind, never within the hour. The pass's time is the API server's."""
    name = f"skew-worker-{hours % 3}"
    request = submit(api, NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(node(name)))
    made = created(api, request)
    servers = {name: stamp(made - timedelta(minutes=1))}
    monkeypatch.setattr(Skewed, "offset", timedelta(hours=hours))
    monkeypatch.setattr("ocp.approver.datetime", Skewed, raising=False)  # the module's clock, where it reads one

    def verdict(settle: timedelta) -> Verdict:
        return next(v for v in one_pass(kube(api), {name: "192.0.2.130"}, DOMAIN, servers, settle=settle).verdicts if v.csr == request)

    if hours > 0:
        early = verdict(timedelta(minutes=10))
        assert not early.approve and early.reason.startswith(f"settling until {made + timedelta(minutes=10):%Y-%m-%d %H:%M:%S}Z"), early
    else:
        time.sleep(4)
        assert verdict(timedelta(seconds=3)).approve
