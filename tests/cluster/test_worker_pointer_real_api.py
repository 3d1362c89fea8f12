"""A day-2 worker's pointer config read from the running cluster (4.19+, integrated mode): the
worker pointer script with the real kubectl as ocp:installer.oc against a real Kubernetes API
server (harness/kubeapi.py: etcd and kube-apiserver on 127.0.0.1) holding the secret, or not."""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.parse

import pytest

from cluster.config import load_config
from cluster.installer import WORKER_POINTER_SECRET, InstallerAssets, worker_pointer_environment, worker_pointer_script
from harness import ignition, kubeapi, netns
from tests.conftest import stack_config
from tools import toolchain

NAMESPACE, NAME, KEY = WORKER_POINTER_SECRET
SERVER = "ocp4-x7k2p-worker-3"
# What the 4.19 MCO keeps in the secret once it rotated the MCS CA: a pointer at the API VIP.
POINTER = {
    "ignition": {
        "config": {"merge": [{"source": "https://10.0.0.5:22623/config/worker"}]},
        "security": {"tls": {"certificateAuthorities": [{"source": "data:text/plain;charset=utf-8;base64,LS0tLS1CRUdJTi0tLS0tCg=="}]}},
        "version": "3.2.0",
    }
}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)
    with kubeapi.running(tmp_path_factory.mktemp("kubeapi")) as running:
        running.kubectl("create", "namespace", NAMESPACE)
        yield running


def put_secret(api: kubeapi.KubeAPI, data: dict[str, str] | None) -> None:
    """The secret as the MCO leaves it (`data` already base64), or none at all."""
    api.kubectl("delete", "secret", NAME, "-n", NAMESPACE, "--ignore-not-found")
    if data is not None:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": NAME, "namespace": NAMESPACE}, "type": "Opaque", "data": data}
        api.kubectl("create", "-f", "-", input=json.dumps(secret))


def pointer(api: kubeapi.KubeAPI, tmp_path, server: str | None = None) -> subprocess.CompletedProcess:
    """The script as the worker's command runs it: the environment the program gives it, for a
    cluster whose admin kubeconfig (certificate and key inside) points at `server`."""
    config = load_config(stack_config("dev"))
    config = config.model_copy(update={"installer": config.installer.model_copy(update={"oc": str(toolchain.binary("kubectl"))})})
    assets = InstallerAssets(
        bootstrap={}, master={}, worker={}, metadata={"infraID": "ocp4-x7k2p"}, kubeconfig=api.embedded_kubeconfig(server), kubeadmin_password="-"
    )
    environment = worker_pointer_environment(config, assets, SERVER, from_cluster=True)
    assert environment["OC"].endswith("/kubectl") and environment["API_URL"] == (server or api.url)
    # No KUBECONFIG: the script must use the one it is given, not one lying around.
    base = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache")}
    result = subprocess.run(["/bin/sh", "-c", worker_pointer_script()], env={**base, **environment}, capture_output=True, text=True, timeout=90)
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == [], "its scratch kubeconfig is removed"
    assert "client-key-data" not in result.stdout + result.stderr and "PRIVATE KEY" not in result.stderr
    return result


def refusal(reason: str, api_url: str) -> str:
    return (
        f"ocp:workers.count: {SERVER} cannot be created: on OpenShift 4.19 and later the machine config operator may have rotated "
        f"the CA of its config server (once any MachineSet exists), so a new worker boots from the pointer config in secret "
        f"{NAMESPACE}/{NAME}, and {reason}. Make the API ({api_url}) reachable from where `pulumi up` runs (ocp:openstack.apiFloatingIp, "
        "the etcHosts output) and ocp:installer.oc a working oc or kubectl, or leave ocp:workers.count as it was\n"
    )


def test_the_pointer_the_cluster_holds_is_printed(api, tmp_path):
    put_secret(api, {KEY: base64.b64encode(json.dumps(POINTER).encode()).decode()})
    result = pointer(api, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == POINTER and result.stderr == ""


def test_a_cluster_without_the_secret_refuses_the_worker(api, tmp_path):
    put_secret(api, None)
    result = pointer(api, tmp_path)
    assert result.returncode == 3 and result.stdout == ""
    failure = f'reading it through the cluster\'s API failed: Error from server (NotFound): secrets "{NAME}" not found'
    assert result.stderr == refusal(failure, api.url), result.stderr


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({KEY: base64.b64encode(b"#cloud-config\nhostname: w\n").decode()}, id="cloud-config"),
        pytest.param({KEY: base64.b64encode(b'{"storage": {}}').decode()}, id="json-without-ignition"),
        pytest.param({"other": base64.b64encode(json.dumps(POINTER).encode()).decode()}, id="no-userData-key"),
    ],
)
def test_a_secret_that_holds_no_ignition_config_refuses_the_worker(api, tmp_path, data):
    put_secret(api, data)
    result = pointer(api, tmp_path)
    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr == refusal(f"its {KEY} is not an Ignition config", api.url), result.stderr


def test_the_api_never_serves_a_value_that_is_not_base64(api):
    # Secret data is bytes, base64 on the wire: the API refuses to store anything else, so the
    # script's "not base64" refusal guards only against an `oc` that prints something else.
    with pytest.raises(kubeapi.KubeAPIError, match="illegal base64 data"):
        put_secret(api, {KEY: "not base64!"})


def test_an_api_that_does_not_answer_refuses_the_worker_saying_where(api, tmp_path):
    closed = f"https://{kubeapi.LOOPBACK}:{kubeapi.free_port()}"
    result = pointer(api, tmp_path, server=closed)
    assert result.returncode == 3 and result.stdout == ""
    host = closed.removeprefix("https://")
    failure = f"reading it through the cluster's API failed: The connection to the server {host} was refused - did you specify the right host or port?"
    assert result.stderr == refusal(failure, closed), result.stderr


def test_a_day_2_worker_boots_from_the_rotated_ca_and_refuses_the_old_one(api, tmp_path):
    """After the MCO rotated the MCS CA (4.19), the pointer the cluster holds is what a new worker's
    real Ignition trusts: a config server whose certificate the rotated CA signed serves it, one the
    old (installer's) CA signed is refused."""
    for reason in (ignition.unavailable(), netns.unavailable()):
        if reason:
            pytest.skip(reason)
    rotated, old = ignition.Authority.make("machine-config-server-ca (rotated)"), ignition.Authority.make("root-ca")
    source = POINTER["ignition"]["config"]["merge"][0]["source"]
    pem = base64.b64encode(rotated.pem.encode()).decode()
    held = {"ignition": {**POINTER["ignition"], "security": {"tls": {"certificateAuthorities": [{"source": f"data:text/plain;charset=utf-8;base64,{pem}"}]}}}}
    put_secret(api, {KEY: base64.b64encode(json.dumps(held).encode()).decode()})
    (tmp_path / "script").mkdir()
    result = pointer(api, tmp_path / "script")
    assert result.returncode == 0, result.stderr
    user_data = result.stdout
    address = urllib.parse.urlsplit(source)
    served = {address.path: json.dumps({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/served", "contents": {"source": "data:,rotated"}}]}}).encode()}
    with netns.lab("rot") as lab:
        node = lab.namespace("worker")
        lab.run(node, ["ip", "addr", "add", f"{address.hostname}/32", "dev", "lo"], check=True)
        for authority, works in ((rotated, True), (old, False)):
            certificate = authority.issue(tmp_path / authority.name.split()[0], address.hostname)
            with ignition.ConfigServer(served, certificate=certificate, address=address.hostname, port=address.port, netns=node):
                booted = ignition.run(user_data, tmp_path / f"node-{works}", netns=node, timeout=120 if works else 15)
            if works:
                assert booted.ok, f"{booted.failure()}\n{booted.log[-3000:]}"
                assert booted.files["/etc/served"].contents == b"rotated"
            else:
                assert not booted.ok and "/etc/served" not in booted.files
                assert "x509: certificate signed by unknown authority" in booted.log
    assert lab.leftovers() == []
