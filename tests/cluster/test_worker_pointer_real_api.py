"""A day-2 worker's (and a master made again's) pointer config read from the running cluster (4.19+,
integrated mode): the pointer script with the real kubectl as ocp:installer.oc against a real Kubernetes API
server (harness/kubeapi.py: etcd and kube-apiserver on 127.0.0.1) holding the secret, or not."""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.parse

import pytest

from cluster.config import load_config
from cluster.installer import POINTER_SECRETS, WORKER_POINTER_SECRET, InstallerAssets, pointer_environment, pointer_script
from harness import ignition, kubeapi, netns
from tests.certs import OTHER_CA
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


# The installer's master pointer (root CA only), as a stand-in.
INSTALLERS = {"ignition": {"config": {"merge": [{"source": "https://10.0.0.5:22623/config/master"}]}, "version": "3.2.0"}}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)
    with kubeapi.running(tmp_path_factory.mktemp("kubeapi")) as running:
        running.kubectl("create", "namespace", NAMESPACE)
        yield running


def put_secret(api: kubeapi.KubeAPI, data: dict[str, str] | None, name: str = NAME) -> None:
    """The secret as the MCO leaves it (`data` already base64), or none at all."""
    api.kubectl("delete", "secret", name, "-n", NAMESPACE, "--ignore-not-found")
    if data is not None:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NAMESPACE}, "type": "Opaque", "data": data}
        api.kubectl("create", "-f", "-", input=json.dumps(secret))


def pointer(
    api: kubeapi.KubeAPI, tmp_path, server: str | None = None, role: str = "worker", name: str = SERVER, strict: bool = True
) -> subprocess.CompletedProcess:
    """The script as the worker's command runs it: the environment the program gives it, for a
    cluster whose admin kubeconfig (certificate and key inside) points at `server`."""
    config = load_config(stack_config("dev"))
    config = config.model_copy(update={"installer": config.installer.model_copy(update={"oc": str(toolchain.binary("kubectl"))})})
    assets = InstallerAssets(
        bootstrap={}, master=INSTALLERS, worker={}, metadata={"infraID": "ocp4-x7k2p"}, kubeconfig=api.embedded_kubeconfig(server), kubeadmin_password="-"
    )
    environment = pointer_environment(config, assets, name, from_cluster=True, role=role, strict=strict)
    assert environment["OC"].endswith("/kubectl") and environment["API_URL"] == (server or api.url)
    # No KUBECONFIG: the script must use the one it is given, not one lying around.
    base = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "KUBECACHEDIR": str(tmp_path / "cache")}
    result = subprocess.run(["/bin/sh", "-c", pointer_script(role)], env={**base, **environment}, capture_output=True, text=True, timeout=90)
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == [], "its scratch kubeconfig is removed"
    assert "client-key-data" not in result.stdout + result.stderr and "PRIVATE KEY" not in result.stderr
    return result


def refusal(reason: str, api_url: str) -> str:
    return (
        f"ocp:workers.count: {SERVER} cannot be created: on OpenShift 4.19 and later (a cluster upgraded to it too) the machine config operator may have rotated "
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


def test_a_master_made_again_gets_the_pointer_the_cluster_keeps_for_masters(api, tmp_path):
    """What the 4.19 MCO leaves once it rotated the MCS CA: both secrets trust its own CA (a real
    certificate here), each pointing at its role's config; a master reads the masters' one."""
    rotated = "data:text/plain;charset=utf-8;base64," + base64.b64encode(OTHER_CA.encode()).decode()
    for role in ("master", "worker"):
        served = {"ignition": {**POINTER["ignition"], "config": {"merge": [{"source": f"https://10.0.0.5:22623/config/{role}"}]}}}
        served["ignition"]["security"] = {"tls": {"certificateAuthorities": [{"source": rotated}]}}
        put_secret(api, {KEY: base64.b64encode(json.dumps(served).encode()).decode()}, POINTER_SECRETS[role][1])
    result = pointer(api, tmp_path, role="master", name="ocp4-x7k2p-master-1")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["ignition"]["config"]["merge"] == [{"source": "https://10.0.0.5:22623/config/master"}]
    assert printed["ignition"]["security"]["tls"]["certificateAuthorities"] == [{"source": rotated}]
    api.kubectl("delete", "secret", POINTER_SECRETS["master"][1], "-n", NAMESPACE)
    refused = pointer(api, tmp_path, role="master", name="ocp4-x7k2p-master-1")
    assert refused.returncode == 3 and refused.stdout == ""
    assert refused.stderr.startswith(
        "ocp:masters: ocp4-x7k2p-master-1 cannot be created: on OpenShift 4.19 and later (a cluster upgraded to it too) the machine config operator may have "
        "rotated the CA of its config server (once any MachineSet exists), so a new master boots from the pointer config in "
        'secret openshift-machine-api/master-user-data-managed, and reading it through the cluster\'s API failed: Error from server '
        '(NotFound): secrets "master-user-data-managed" not found.'
    ), refused.stderr
    assert refused.stderr.endswith("or leave the master's server as it was\n")


def test_a_stack_installed_before_master_pointers_warns_and_keeps_the_installers_pointer(api, tmp_path):
    """Its masters' commands are made on its next run with the masters running (record without
    masterPointers): an API that does not answer then warns, and refuses nothing."""
    closed = f"https://{kubeapi.LOOPBACK}:{kubeapi.free_port()}"
    result = pointer(api, tmp_path, server=closed, role="master", name="ocp4-x7k2p-master-0", strict=False)
    assert result.returncode == 0 and json.loads(result.stdout) == INSTALLERS
    assert result.stderr.startswith("warning: ocp:masters: ocp4-x7k2p-master-0 keeps the installer's pointer: the secret "
                                    "openshift-machine-api/master-user-data-managed could not be read (reading it through"), result.stderr
    assert f"make the API ({closed}) reachable and run `pulumi up --replace` with this command's URN" in result.stderr
