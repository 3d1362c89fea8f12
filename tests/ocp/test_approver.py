"""ocp/approver.py against a real Kubernetes API server (harness/kubeapi.py: etcd, kube-apiserver and
the csrsigning controller on 127.0.0.1): CSRs made with real keys, each sent as the identity that
would send it; only this stack's nodes' are approved (and then signed), every other stays pending."""

from __future__ import annotations

import json
import time

import pytest

from cluster.csr import CLIENT_SIGNER, NODE_BOOTSTRAPPER, SERVING_SIGNER
from harness import kubeapi
from ocp.approver import approve_until_ready, one_pass
from ocp.kube import Kube
from tests.ocp.played import PlayedCluster, request_pem
from tools import toolchain

NODES = {"ocp4-master-0": "192.0.2.20", "ocp4-worker-0": "192.0.2.30", "ocp4-worker-1": "192.0.2.31"}
DOMAIN = "ocp4.lab.local"
CLIENT = ["digital signature", "client auth"]
SERVING = ["digital signature", "server auth"]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)
    with kubeapi.running(tmp_path_factory.mktemp("kubeapi"), controllers=("csrsigning",)) as running:
        yield running


def submit(api: kubeapi.KubeAPI, name: str, requester: str, signer: str, usages: list[str], pem: str) -> None:
    """As the requester (impersonated by the admin): the API records it as spec.username."""
    PlayedCluster(api, {}, DOMAIN).submit(name, requester, signer, usages, pem)


def node(name: str) -> str:
    return f"system:node:{name}"


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
    "zz-duplicate-client": (NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, lambda: request_pem(node("ocp4-worker-0")), False),
}


def test_only_this_stacks_nodes_certificates_are_approved_and_signed(api):
    for name, (requester, signer, usages, pem, _) in CASES.items():
        submit(api, name, requester, signer, usages, pem())
    kube = Kube(str(toolchain.binary("kubectl")), api.kubeconfig)
    result = one_pass(kube, NODES, DOMAIN)
    verdicts = {v.csr: v for v in result.verdicts}
    assert {name: v.approve for name, v in verdicts.items()} == {name: case[4] for name, case in CASES.items()}
    assert "not the node bootstrapper" in verdicts["wrong-requester"].reason
    assert "ocp4-worker-7 is not a node of this stack" in verdicts["wrong-node"].reason
    assert "other-worker-0 is not a node of this stack" in verdicts["other-cluster"].reason
    assert "DNS names ['api.ocp4.lab.local']" in verdicts["extra-sans"].reason
    assert "IP addresses ['198.51.100.1']" in verdicts["foreign-ip"].reason
    assert "not by system:node:ocp4-worker-1 itself" in verdicts["serving-by-another"].reason
    assert "approved in this pass" in verdicts["zz-duplicate-client"].reason
    # What the API says: the approved are signed by the signer, the rest have no condition at all.
    deadline = time.monotonic() + 60
    while True:
        items = {i["metadata"]["name"]: i for i in json.loads(api.kubectl("get", "csr", "-o", "json").stdout)["items"]}
        signed = {name for name, item in items.items() if (item.get("status") or {}).get("certificate")}
        if signed >= {"good-client", "good-serving"} or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert signed == {"good-client", "good-serving"}
    pending = {name for name, item in items.items() if not (item.get("status") or {}).get("conditions")}
    assert pending == {name for name, case in CASES.items() if not case[4]}
    # One approval per node and kind in a pass: the next pass takes the duplicate (worker 0 has no
    # Node yet, so its kubelet may still ask), and nothing else.
    again = one_pass(kube, NODES, DOMAIN)
    assert [v.csr for v in again.verdicts if v.approve] == ["zz-duplicate-client"]


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
