"""`python -m ocp status`'s cluster part (ocp/status_cluster.py) against a real Kubernetes API server
(harness/kubeapi.py) with OpenShift's ClusterVersion and ClusterOperator CRDs (the openshift/api module the
installer is built with), the cluster played as tests/ocp/played.py plays an installed one: a node NotReady,
an operator Degraded and a forged client request pending are each reported, the request with the
approver's verdict and left pending; the nearest certificate expiry is the soonest of those it can read; an
API that does not answer is said so."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cryptography import x509

from cluster.csr import CLIENT_SIGNER
from ocp.approver import untimed
from ocp.kube import Kube
from ocp.status_cluster import read
from tests.ocp.played import CLIENT, PlayedCluster, openshift_api_module, request_pem
from tools import toolchain

NODES = {"ocp4-master-0": "192.0.2.20", "ocp4-worker-0": "192.0.2.30", "ocp4-worker-1": "192.0.2.31"}
DOMAIN = "ocp4.lab.local"
FORGER = "system:serviceaccount:default:builder"


def not_after(path) -> datetime:
    return x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc


def test_a_notready_node_a_degraded_operator_and_a_forged_request_are_reported(api):
    cluster = PlayedCluster(api, NODES, DOMAIN, foreign=False, running=frozenset(NODES))
    cluster.set_up(openshift_api_module())  # installed: every node Ready, the operators settled, the version Available
    cluster.status("node", "ocp4-worker-1", {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}]})
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the CRD requires it
    degraded = [
        {"type": "Available", "status": "True", "reason": "AsExpected", "lastTransitionTime": since},
        {"type": "Degraded", "status": "True", "reason": "RolloutHung", "message": "DaemonSet ovnkube-node is not rolling out", "lastTransitionTime": since},
    ]
    cluster.status("clusteroperator", "network", {"conditions": degraded})
    forged = cluster.submit("csr-", FORGER, CLIENT_SIGNER, CLIENT, request_pem("system:node:ocp4-worker-1"))
    kubelets = cluster.ask("ocp4-worker-0", "serving")  # its kubelet's: approve-csrs would approve it, status must not
    kube = Kube(str(toolchain.binary("kubectl")), api.kubeconfig)

    found = read(kube, api.embedded_kubeconfig(), NODES, DOMAIN, None, "dev", untimed("openstack", "dev"))

    assert found.read and found.version == "4.19.0-ec.5"
    assert {(c.type, c.status) for c in found.conditions} == {("Available", "True"), ("Failing", "False"), ("Progressing", "False")}
    assert [(n.name, n.ready, n.reason) for n in found.nodes] == [
        ("ocp4-master-0", True, "KubeletReady"), ("ocp4-worker-0", True, "KubeletReady"), ("ocp4-worker-1", False, "NodeStatusUnknown"),
    ]
    assert [(o.name, o.reason) for o in found.degraded] == [("network", "RolloutHung")]
    pending = {request.name: request for request in found.pending}
    assert sorted(pending) == sorted([forged, kubelets])
    request = pending[forged]
    assert (request.node, request.kind, request.verdict) == ("ocp4-worker-1", "client", "never") and FORGER in request.reason
    assert (pending[kubelets].node, pending[kubelets].kind, pending[kubelets].verdict) == ("ocp4-worker-0", "serving", "would approve")
    assert cluster.pending() == {forged: FORGER, kubelets: "system:node:ocp4-worker-0"}  # judged, neither approved
    # The soonest of the kubeconfig's CA and client certificate and the API's serving one (a day each here).
    soonest = min(not_after(path) for path in (api.ca.cert, api.admin.cert, api.directory / "pki" / "apiserver.crt"))
    assert found.expiry.not_after == soonest and 0 < found.expiry.days < 1.01
    problems = found.problems()
    assert problems[:2] == ["node ocp4-worker-1 is not Ready (NodeStatusUnknown)", "cluster operator network is Degraded (RolloutHung)"]
    assert sorted(problems[2:4]) == sorted([f"certificate request {forged} is pending (never)", f"certificate request {kubelets} is pending (would approve)"])
    assert len(problems) == 5 and problems[4].startswith(f"{found.expiry.what} expires in ")  # within 30 days
    # A kubeconfig whose certificates are files (not data): only the API's serving certificate can be read.
    served = read(kube, api.kubeconfig.read_text(), NODES, DOMAIN, None, "dev", None)
    assert served.expiry.not_after == not_after(api.directory / "pki" / "apiserver.crt") and "serving" in served.expiry.what


def test_an_api_that_does_not_answer_is_said_so(api, tmp_path):
    closed = tmp_path / "kubeconfig"
    document = json.loads(api.embedded_kubeconfig(server="https://127.0.0.1:1"))
    closed.write_text(json.dumps(document))
    found = read(Kube(str(toolchain.binary("kubectl")), closed, timeout=5), closed.read_text(), NODES, DOMAIN, None, "dev", None)
    assert not found.read and found.why.startswith("the cluster's API did not answer: kubectl auth whoami")
    assert found.nodes == () and found.pending == ()
    # What the kubeconfig holds is still read: its CA and client certificate (a day each here).
    assert found.expiry.not_after == min(not_after(api.ca.cert), not_after(api.admin.cert)) and "kubeconfig" in found.expiry.what
    assert len(found.problems()) == 1 and " expires in " in found.problems()[0]
