"""The one-command install of the dev stack (integrated: platform openstack) with the real engine
and OpenStack plugin against the local cloud, the real `openshift-install wait-for` and a real API
server playing the cluster (tests/ocp/played.py), as tests/localcloud/test_install_kvm.py does for
the kvm stack. Judged through the cloud's API (the bootstrap's server gone, the masters and workers
kept), the approvals and what the driver prints."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from cluster.installer import WORKER_POINTER_SECRET
from harness import kubeapi
from tests.conftest import ROOT
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs, structured
from tests.localcloud.test_openstack_faults import OURS
from tests.localcloud.test_openstack_lifecycle import USER_DATA
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack
from tests.ocp.driving import Driver, hosts_file, with_hosts, write_oc
from tests.ocp.played import played

# A server deleted in the cloud behind the stack's back (a lost host, a hand), waited for.
DELETE_SERVER = """
server = tenant.compute.find_server(name, ignore_missing=False)
tenant.compute.delete_server(server)
tenant.compute.wait_for_delete(server, wait=300)
result = server.id
"""
# What the 4.19 MCO leaves in worker-user-data-managed once it has rotated its config server's CA.
ROTATED_CA = "data:text/plain;charset=utf-8;base64," + base64.b64encode(b"-----BEGIN CERTIFICATE-----\nrotated by the MCO\n-----END CERTIFICATE-----\n").decode()
SERVED_POINTER = {
    "ignition": {
        "config": {"merge": [{"source": "https://10.0.0.5:22623/config/worker"}]},
        "security": {"tls": {"certificateAuthorities": [{"source": ROTATED_CA}]}},
        "version": "3.2.0",
    }
}

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None or kubeapi.missing() is not None, reason=str(needs(*PLUGINS) or kubeapi.missing()))


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("dev-install")
    yield from openstack_stack("dev", work, cloud, cloud_env, oc=write_oc(work))


def test_one_command_installs_the_dev_stack_on_the_local_cloud(stack, tmp_path):
    config = {key: structured(value) for key, value in stack.base.items()}
    domain = f"{config['ocp:clusterName']}.{config['ocp:baseDomain']}"
    assets = stack.project / config["ocp:installer"]["dir"]
    hosts = hosts_file(tmp_path / "hosts", f"api.{domain}")
    driver = Driver(stack, hosts, "install")
    driver.wait_for_line(r"^3/6 waiting for the bootstrap", 1800)
    nodes = json.loads(stack.pulumi("stack", "output", "--json").stdout)["nodes"]
    infra = infra_id(stack)
    made = sdk(stack.cloud, OURS, infra=infra)  # type: ignore[attr-defined]
    assert any(name.endswith("-bootstrap") for name in made["servers"]), made
    with played(tmp_path / "cluster", assets, nodes, domain) as cluster_played:
        driver.wait_for_line(r"for bootstrapping to complete", 300)
        cluster_played.bootstrap_complete()
        code = driver.wait(1800)
        output = driver.text()
        pending = cluster_played.pending()
    print(output)
    assert code == 0, output[-8000:] + "\nplayed: " + "; ".join(cluster_played.events + cluster_played.errors)
    steps = [line[:3] for line in output.splitlines() if re.match(r"^\d/6 ", line)]
    assert steps == ["1/6", "2/6", "3/6", "4/6", "5/6", "6/6"], steps
    # Progress counts out of the run's total, the bootstrap's teardown too (it once said [3/0 ...]).
    progress = [tuple(map(int, m.groups())) for m in re.finditer(r"^\[(\d+)/(\d+) \d+m\d\ds\] ", output, re.M)]
    teardown = output.split("4/6 ", 1)[1].split("5/6 ", 1)[0]
    assert "preview: " in teardown and "to delete" in teardown, teardown
    assert progress and all(0 <= done < total for done, total in progress), progress
    # The cloud: the bootstrap's server gone, every master and worker as before.
    after = sdk(stack.cloud, OURS, infra=infra)  # type: ignore[attr-defined]
    assert sorted(after["servers"]) == sorted(name for name in made["servers"] if not name.endswith("-bootstrap")), after
    for worker in sorted(n for n in nodes if "-worker-" in n):
        assert re.search(rf"^csr: approved csr-{worker}-client: ", output, re.M), output
        assert re.search(rf"^csr: approved csr-{worker}-serving: ", output, re.M), output
    assert set(pending) == {"csr-other-cluster", "csr-wrong-requester"}, pending
    assert "Install complete!" in output
    assert f"console: https://console-openshift-console.apps.{domain}" in output
    password = (assets / "auth" / "kubeadmin-password").read_text().strip()
    assert password not in output


def test_a_worker_the_cloud_lost_comes_back_from_the_pointer_the_cluster_serves(stack, tmp_path):
    """Day 2 of the cluster installed above (4.19, the bootstrap gone): a worker's server deleted in
    the cloud; `pulumi refresh` drops it from the state and keeps its pointer command, which read the
    installer's pointer at install. tools.recover taints that command, and the next `pulumi up` reads
    the pointer the cluster serves (worker-user-data-managed, through the played API) and makes the
    server from it. Nothing else changes."""
    config = {key: structured(value) for key, value in stack.config().items()}
    assert config["ocp:bootstrap"]["enabled"] is False, config["ocp:bootstrap"]  # the install took it away
    domain = f"{config['ocp:clusterName']}.{config['ocp:baseDomain']}"
    assets = stack.project / config["ocp:installer"]["dir"]
    nodes = stack.outputs()["nodes"]
    infra = infra_id(stack)
    sdk(stack.cloud, DELETE_SERVER, name=f"{infra}-worker-1")  # type: ignore[attr-defined]
    refreshed = stack.pulumi("refresh", "--yes", "--skip-preview")
    assert refreshed.returncode == 0, (refreshed.stdout + refreshed.stderr)[-4000:]
    names = {resource["urn"].rsplit("::", 1)[1] for resource in stack.state()}
    assert "ocp4-workers-worker-1" not in names and "ocp4-worker-pointers-worker-1" in names
    recovered = subprocess.run(
        [sys.executable, "-m", "tools.recover", "--stack", stack.name, "--yes", "--cwd", str(stack.project)],
        cwd=ROOT, env=stack.env, capture_output=True, text=True,
    )
    print(recovered.stdout)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert re.findall(r"^  (\S+) +its server is gone from the state: taint it", recovered.stdout, re.M) == ["ocp4-worker-pointers-worker-1"]
    hosts = hosts_file(tmp_path / "hosts", f"api.{domain}")
    namespace, name, key = WORKER_POINTER_SECRET
    with played(tmp_path / "cluster", assets, nodes, domain, running=frozenset(nodes)) as cluster_played:
        cluster_played.kubectl("create", "namespace", namespace)
        encoded = base64.b64encode(json.dumps(SERVED_POINTER).encode()).decode()
        cluster_played.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": {key: encoded}})
        # As the user runs it where the API's name resolves (the install's /etc/hosts lines).
        up = subprocess.run(
            [*with_hosts(hosts), "pulumi", "up", "--yes", "--skip-preview", "--stack", stack.name, "--non-interactive"],
            cwd=stack.project, env=stack.env, capture_output=True, text=True, timeout=1800,
        )
    assert up.returncode == 0, (up.stdout + up.stderr)[-6000:]
    state = {resource["urn"].rsplit("::", 1)[1]: resource for resource in stack.state()}
    user_data = json.loads(base64.b64decode(sdk(stack.cloud, USER_DATA, server=state["ocp4-workers-worker-1"]["id"])))  # type: ignore[attr-defined]
    assert user_data["ignition"]["config"] == SERVED_POINTER["ignition"]["config"]
    assert user_data["ignition"]["security"] == SERVED_POINTER["ignition"]["security"]
    # The other worker kept the installer's pointer it was made with; nothing is left to do.
    other = json.loads(base64.b64decode(sdk(stack.cloud, USER_DATA, server=state["ocp4-workers-worker-0"]["id"])))  # type: ignore[attr-defined]
    assert ROTATED_CA not in json.dumps(other)
    steps, output = stack.steps(stack.config())
    assert steps is not None, output[-4000:]
    assert {step: action for step, action in steps.items() if action != "same"} == {}
