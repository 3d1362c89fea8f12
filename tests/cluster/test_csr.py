"""cluster.csr, pure: requests made with real keys (cryptography), judged against a stack's nodes."""

from __future__ import annotations

import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster.csr import CLIENT_SIGNER, NODE_BOOTSTRAPPER, SERVING_SIGNER, Request, review

NODES = {"ocp4-master-0": "192.0.2.20", "ocp4-worker-0": "192.0.2.30", "ocp4-worker-1": "192.0.2.31"}
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


def client(name: str, node: str = "ocp4-worker-0", username: str = NODE_BOOTSTRAPPER, usages=CLIENT, **subject) -> Request:
    return Request(name, CLIENT_SIGNER, username, usages, csr(f"system:node:{node}", **subject))


def serving(name: str, node: str = "ocp4-worker-0", username: str | None = None, usages=SERVING, **names) -> Request:
    names.setdefault("dns", (node,))
    names.setdefault("ips", (NODES.get(node, "192.0.2.99"),))
    return Request(name, SERVING_SIGNER, username or f"system:node:{node}", usages, csr(f"system:node:{node}", **names))


def verdicts(*requests: Request, registered=()) -> dict[str, tuple[bool, str]]:
    return {v.csr: (v.approve, v.reason) for v in review(requests, NODES, registered, DOMAIN)}


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
    ("not a node's subject", Request("a", CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, csr("admin", "system:masters")), False, "is not a node's"),
    ("serving from another node", serving("a", username="system:node:ocp4-worker-1"), False, "not by system:node:ocp4-worker-0 itself"),
    ("serving from the bootstrapper", serving("a", username=NODE_BOOTSTRAPPER), False, "not by system:node:ocp4-worker-0 itself"),
    ("serving with extra DNS names", serving("a", dns=("ocp4-worker-0", "api.ocp4.lab.local")), False, "DNS names ['api.ocp4.lab.local'] are not ocp4-worker-0's"),
    ("serving with a foreign IP", serving("a", ips=("192.0.2.30", "198.51.100.1")), False, "IP addresses ['198.51.100.1'] are not ocp4-worker-0's"),
    ("serving with another node's IP", serving("a", ips=("192.0.2.31",)), False, "are not ocp4-worker-0's (192.0.2.30)"),
    ("serving with an email", serving("a", emails=("root@example.com",)), False, "neither DNS names nor IP addresses"),
    ("serving of another cluster's node", serving("a", node="other-worker-0"), False, "other-worker-0 is not a node of this stack"),
    ("another signer", Request("a", "kubernetes.io/legacy-unknown", NODE_BOOTSTRAPPER, CLIENT, csr("system:node:ocp4-worker-0")), False, "is not a kubelet's"),
    ("garbage", Request("a", CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, b"not a csr"), False, "not a PEM certificate signing request"),
]


@pytest.mark.parametrize("request_, approve, reason", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_each_case(request_, approve, reason):
    (verdict,) = verdicts(request_).values()
    assert verdict[0] is approve and reason in verdict[1], verdict


def test_a_node_that_registered_renews_its_client_certificate_itself():
    assert verdicts(client("a"), registered=["ocp4-worker-0"])["a"] == (False, "Node ocp4-worker-0 exists: its kubelet renews with its own identity")


def test_one_approval_per_node_and_kind_in_a_pass():
    found = verdicts(client("a"), client("b"), serving("c"), client("d", node="ocp4-worker-1"))
    assert found["a"][0] and found["c"][0] and found["d"][0]
    assert found["b"] == (False, "another client request of ocp4-worker-0 was approved in this pass")


def test_decided_requests_are_left_alone():
    decided = Request("a", CLIENT_SIGNER, NODE_BOOTSTRAPPER, CLIENT, csr("system:node:ocp4-worker-0"), decided=True)
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
