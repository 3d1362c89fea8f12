"""A worker's drain with the real kubectl as ocp:installer.oc against a real Kubernetes API server
(harness/kubeapi.py: etcd, kube-apiserver, and kube-controller-manager running the disruption and
pod garbage collector controllers, on 127.0.0.1).

There is no kubelet: Nodes and the Pods bound to them (spec.nodeName) are API objects only, and
the test reports pod status as a kubelet would. What that shows about eviction: a pod whose grace
period is 0 is gone at once; any other gets a deletionTimestamp and stays Terminating until its
kubelet confirms, which a dead node's never does, so the drain runs into its timeout; once the
Node is deleted the pod garbage collector removes such pods (after its 40 s quarantine)."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

from cluster.drain import drain_script
from harness import kubeapi
from tools import toolchain

NAMESPACE = "app"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)
    with kubeapi.running(tmp_path_factory.mktemp("kubeapi"), controllers=("disruption", "podgc")) as running:
        running.kubectl("create", "namespace", NAMESPACE)
        # No serviceaccount controller: the admission plugin wants the namespace's default one.
        running.kubectl("create", "serviceaccount", "default", "-n", NAMESPACE)
        yield running


def create(api: kubeapi.KubeAPI, document: dict) -> dict:
    return json.loads(api.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(document)).stdout)


def node(api: kubeapi.KubeAPI, name: str) -> None:
    create(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def pod(api: kubeapi.KubeAPI, name: str, on: str, grace: int | None = 0, owner: dict | None = None, emptydir: bool = False) -> None:
    """A pod bound to node `on`, reported Running and Ready as its kubelet would."""
    spec: dict = {"nodeName": on, "containers": [{"name": "main", "image": "registry.example/app:1"}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if emptydir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    metadata: dict = {"name": name, "namespace": NAMESPACE, "labels": {"app": name}}
    if owner:
        metadata["ownerReferences"] = [{**owner, "controller": True}]
    create(api, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    status = {"status": {"phase": "Running", "conditions": [ready]}}
    api.kubectl("patch", "pod", name, "-n", NAMESPACE, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def owner(api: kubeapi.KubeAPI, kind: str, name: str) -> dict:
    """A real ReplicaSet or DaemonSet (no controller runs them: they make no pods of their own)."""
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}]}}
    spec = {"selector": {"matchLabels": {"app": name}}, "template": template, **({"replicas": 1} if kind == "ReplicaSet" else {})}
    made = create(api, {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": made["metadata"]["uid"]}


def pods(api: kubeapi.KubeAPI) -> dict[str, dict]:
    items = json.loads(api.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json").stdout)["items"]
    return {item["metadata"]["name"]: item for item in items}


def nodes(api: kubeapi.KubeAPI) -> dict[str, dict]:
    return {item["metadata"]["name"]: item for item in json.loads(api.kubectl("get", "nodes", "-o", "json").stdout)["items"]}


def drain(api: kubeapi.KubeAPI, name: str, tmp_path, server: str | None = None, user: kubeapi.Pair | None = None, **extra: str) -> subprocess.CompletedProcess:
    """The script as the worker's command runs it, with kubectl and the cluster's kubeconfig
    (certificate and key inside, as the installer's)."""
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path),
        "NODE": name,
        "OC": str(toolchain.binary("kubectl")),
        "KUBECONFIG_DATA": api.embedded_kubeconfig(server, user),
        **extra,
    }
    result = subprocess.run(["/bin/bash", "-c", drain_script()], env=environment, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name != "home"] == [], "its kubeconfig is removed"
    assert "client-key-data" not in result.stdout + result.stderr and "PRIVATE KEY" not in result.stdout + result.stderr
    return result


def test_a_worker_is_drained_then_its_node_deleted(api, tmp_path):
    name = "ocp4-worker-3"
    node(api, name)
    node(api, "ocp4-worker-4")
    pod(api, "web", name, emptydir=True)  # no controller, local data: --force, --delete-emptydir-data
    pod(api, "cache", name, owner=owner(api, "ReplicaSet", "cache"))
    pod(api, "agent", name, owner=owner(api, "DaemonSet", "agent"))
    pod(api, "neighbour", "ocp4-worker-4")
    result = drain(api, name, tmp_path)
    assert result.stdout == f"drain: drained {name}\ndrain: deleted node {name}\n"
    assert result.stderr == ""
    assert set(nodes(api)) == {"ocp4-worker-4"}
    assert not nodes(api)["ocp4-worker-4"]["spec"].get("unschedulable")
    left = pods(api)
    # Evicted (grace 0: gone at once); the DaemonSet's pod is left to go with its node.
    assert {"web", "cache"}.isdisjoint(left)
    assert "deletionTimestamp" not in left["agent"]["metadata"] and "deletionTimestamp" not in left["neighbour"]["metadata"]


def test_a_budget_that_allows_no_eviction_still_lets_the_node_go(api, tmp_path):
    name = "ocp4-worker-5"
    node(api, name)
    pod(api, "db", name)
    pod(api, "batch", name)
    budget = {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}
    create(api, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": NAMESPACE}, "spec": budget})
    deadline = time.monotonic() + 60
    while (status := json.loads(api.kubectl("get", "pdb", "db", "-n", NAMESPACE, "-o", "json").stdout).get("status", {})).get("observedGeneration") != 1:
        assert time.monotonic() < deadline, api.log("kube-controller-manager")
        time.sleep(0.5)
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (1, 0)  # the disruption controller's count
    started = time.monotonic()
    result = drain(api, name, tmp_path, DRAIN_TIMEOUT="3")
    assert time.monotonic() - started < 30
    assert result.stderr == f"drain: {name} was not drained within 3s (a PodDisruptionBudget allowing no eviction?): its pods go with it\n"
    assert result.stdout == f"drain: deleted node {name}\n"
    assert name not in nodes(api)
    left = pods(api)
    assert "batch" not in left  # what the budget does not cover was evicted
    assert "deletionTimestamp" not in left["db"]["metadata"]  # never evicted: it goes with the node


def test_pods_without_a_kubelet_hold_the_drain_to_its_timeout_then_go_with_the_node(api, tmp_path):
    name = "ocp4-worker-6"
    node(api, name)
    pod(api, "slow", name, grace=None)  # the default 30 s grace period
    result = drain(api, name, tmp_path, DRAIN_TIMEOUT="5")
    assert result.stderr == f"drain: {name} was not drained within 5s (a PodDisruptionBudget allowing no eviction?): its pods go with it\n"
    assert result.stdout == f"drain: deleted node {name}\n"
    assert name not in nodes(api)
    stuck = pods(api)["slow"]["metadata"]
    assert stuck["deletionTimestamp"] and stuck["deletionGracePeriodSeconds"] == 30  # evicted, never confirmed
    # The pod garbage collector removes pods bound to a Node that no longer exists.
    deadline = time.monotonic() + 120
    while "slow" in pods(api):
        assert time.monotonic() < deadline, "the terminating pod outlived its node by 120 s"
        time.sleep(2)


def test_a_node_the_cluster_does_not_have_is_left_alone(api, tmp_path):
    node(api, "ocp4-worker-7")
    result = drain(api, "ocp4-worker-9", tmp_path)
    assert result.stdout == "drain: ocp4-worker-9 is not a node of the cluster: nothing to drain\n"
    assert result.stderr == ""
    assert not nodes(api)["ocp4-worker-7"]["spec"].get("unschedulable")


def test_a_cluster_that_is_gone_does_not_block_the_delete(api, tmp_path):
    node(api, "ocp4-worker-8")
    closed = f"https://{kubeapi.LOOPBACK}:{kubeapi.free_port()}"
    result = drain(api, "ocp4-worker-8", tmp_path, server=closed)
    assert result.stdout == ""
    host = closed.removeprefix("https://")
    assert result.stderr == (
        "drain: the cluster's API does not answer: ocp4-worker-8 was not drained; if the cluster lives on: "
        "kubectl drain ocp4-worker-8 --ignore-daemonsets --delete-emptydir-data --force; kubectl delete node ocp4-worker-8\n"
        f"drain: kubectl: The connection to the server {host} was refused - did you specify the right host or port?\n"
    )
    assert not nodes(api)["ocp4-worker-8"]["spec"].get("unschedulable")


@pytest.mark.parametrize(
    "who,error",
    [
        pytest.param(
            "stranger", "error: You must be logged in to the server (the server has asked for the client to provide credentials)", id="untrusted-certificate"
        ),
        pytest.param(
            "nobody",
            'Error from server (Forbidden): nodes "ocp4-worker-nobody" is forbidden: User "nobody" cannot get resource "nodes" in API group "" at the cluster scope',
            id="user-without-rights",
        ),
    ],
)
def test_a_kubeconfig_the_api_refuses_is_said_so_and_does_not_block_the_delete(api, tmp_path, who, error):
    # stranger: a certificate from a CA the API does not trust; nobody: one it trusts, without rights.
    name = f"ocp4-worker-{who}"
    node(api, name)
    (tmp_path / "home").mkdir()
    ca = api.ca if who == "nobody" else kubeapi.make_ca(tmp_path / "home", "other-ca", "another cluster")
    result = drain(api, name, tmp_path, user=kubeapi.make_leaf(tmp_path / "home", who, ca, who))
    assert result.stdout == ""
    assert result.stderr == (
        f"drain: the cluster's API answered with an error: {name} was not drained; if the cluster lives on: "
        f"kubectl drain {name} --ignore-daemonsets --delete-emptydir-data --force; kubectl delete node {name}\n"
        f"drain: kubectl: {error}\n"
    )
    assert not nodes(api)[name]["spec"].get("unschedulable")


def test_an_api_that_never_answers_is_given_up_on_in_bounded_time(api, tmp_path):
    # A port that takes connections and never speaks: kubectl alone would retry its TLS handshake
    # for 50 s (5 x 10 s) before the lookup fails; the script gives it 30.
    with socket.socket() as silent:
        silent.bind((kubeapi.LOOPBACK, 0))
        silent.listen(16)
        started = time.monotonic()
        result = drain(api, "ocp4-worker-8", tmp_path, server=f"https://{kubeapi.LOOPBACK}:{silent.getsockname()[1]}")
        elapsed = time.monotonic() - started
    assert result.stderr.startswith("drain: the cluster's API does not answer: ocp4-worker-8 was not drained")
    assert result.stderr.endswith("\ndrain: kubectl: no answer within 30 s\n")
    assert 28 < elapsed < 45, elapsed  # the lookup's 30 s, then no drain is tried
