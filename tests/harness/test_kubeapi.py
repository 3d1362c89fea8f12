"""A real Kubernetes API server on loopback (harness/kubeapi.py) from the toolchain's etcd,
kube-apiserver, kube-controller-manager and kubectl: a node's client CSR, approved with
kubectl, is signed by the csrsigning controller with the signer given to it."""

from __future__ import annotations

import base64
import json
import os
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from harness import kubeapi
from toolchain.build import load_pins

PINS = {component.name: component for component in load_pins()}
NODE = "system:node:worker-0"


@pytest.fixture
def built():
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)


def node_client_csr(name: str) -> str:
    """A CertificateSigningRequest as a kubelet makes one to join: CN=system:node:<name>, O=system:nodes."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"), x509.NameAttribute(NameOID.COMMON_NAME, NODE)])
    request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return json.dumps(
        {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {
                "request": base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "expirationSeconds": 3600,
                "usages": ["digital signature", "client auth"],
            },
        }
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_approved_node_csr_is_signed_by_the_controller_manager_and_everything_stops(built, tmp_path):
    with kubeapi.running(tmp_path / "kube", controllers=("csrsigning",)) as api:
        pids = api.pids()
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager"}
        listening = api.listening()
        assert listening["etcd"] and listening["kube-apiserver"], listening
        assert all(address.startswith(f"{kubeapi.LOOPBACK}:") for addresses in listening.values() for address in addresses), listening

        version = json.loads(api.kubectl("version", "-o", "json").stdout)
        assert version["serverVersion"]["gitVersion"] == version["clientVersion"]["gitVersion"] == PINS["kubernetes"].version

        api.kubectl("create", "-f", "-", input=node_client_csr("node-csr-worker-0"))
        pending = json.loads(api.kubectl("get", "csr", "node-csr-worker-0", "-o", "json").stdout)
        assert not pending.get("status", {}).get("certificate")
        api.kubectl("certificate", "approve", "node-csr-worker-0")

        deadline = time.monotonic() + 60
        while not (issued := api.kubectl("get", "csr", "node-csr-worker-0", "-o", "jsonpath={.status.certificate}").stdout):
            assert time.monotonic() < deadline, f"no certificate within 60 s:\n{api.log('kube-controller-manager')}"
            time.sleep(1)
        certificate = x509.load_pem_x509_certificate(base64.b64decode(issued))
        signer = api.signer.load_cert()
        certificate.verify_directly_issued_by(signer)
        assert certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == NODE
        assert certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"
        conditions = json.loads(api.kubectl("get", "csr", "node-csr-worker-0", "-o", "json").stdout)["status"]["conditions"]
        assert [c["type"] for c in conditions] == ["Approved"]
    assert not any(alive(pid) for pid in pids.values()), pids
    assert api.processes == {}
