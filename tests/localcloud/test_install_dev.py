"""The one-command install of the dev stack (integrated: platform openstack) with the real engine
and OpenStack plugin against the local cloud, the real `openshift-install wait-for` and a real API
server playing the cluster (tests/ocp/played.py), as tests/localcloud/test_install_kvm.py does for
the kvm stack. Judged through the cloud's API (the bootstrap's server gone, the masters and workers
kept), the approvals and what the driver prints.

The cluster is installed at 4.17 (tests/localcloud/older_installer.py: the real installer, its
configs naming 4.17.3 as that release's do) and then upgraded: its 4.19 MCO rotated its config
server's CA (the played API holds the rotated pointers). Day 2 gives the nodes made after the
bootstrap, a worker made again and a worker added, the pointer the cluster serves (issue 43, item 1)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster import dataurl
from cluster.installer import POINTER_SECRETS
from harness import ignition, kubeapi, netns
from tests.conftest import ROOT
from tests.localcloud import older_installer
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs, structured
from tests.localcloud.test_openstack_faults import OURS
from tests.localcloud.test_openstack_lifecycle import MCS_CONFIG, MCS_FILE, MCS_FILE_CONTENTS, USER_DATA, needs_ignition
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack
from tests.ocp.driving import Driver, hosts_file, with_hosts, write_oc
from tests.ocp.played import PlayedCluster, ignition_files, played

# A server deleted in the cloud behind the stack's back (a lost host, a hand), waited for.
DELETE_SERVER = """
server = tenant.compute.find_server(name, ignore_missing=False)
tenant.compute.delete_server(server)
tenant.compute.wait_for_delete(server, wait=300)
result = server.id
"""
# The release the cluster was installed at; the 4.19 MCO it was upgraded to rotated its config server's CA
# (a real CA: the nodes' Ignition must trust what the config server then serves).
INSTALLED_AT = "4.17.3"
ROTATED = ignition.Authority.make("machine-config-server-ca@rotated")
ROTATED_CA = "data:text/plain;charset=utf-8;base64," + base64.b64encode(ROTATED.pem.encode()).decode()

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None or kubeapi.missing() is not None, reason=str(needs(*PLUGINS) or kubeapi.missing()))


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("dev-install")

    def installed_at_4_17(committed: dict) -> dict:
        return {**committed, "ocp:installer": dict(committed["ocp:installer"], binary=str(older_installer.write(work, INSTALLED_AT)))}

    yield from openstack_stack("dev", work, cloud, cloud_env, oc=write_oc(work), edit=installed_at_4_17)


def served_pointer(assets: Path, role: str = "worker") -> dict:
    """What the MCO leaves in <role>-user-data-managed once it has rotated its config server's CA: the
    installer's pointer, its CA the rotated one."""
    pointer = json.loads((assets / f"{role}.ign").read_text())
    pointer["ignition"]["security"]["tls"]["certificateAuthorities"] = [{"source": ROTATED_CA}]
    return pointer


def rotated(cluster_played: PlayedCluster, assets: Path) -> None:
    """The upgraded cluster's managed pointers, both roles', as its MCO rewrote them."""
    for role, (namespace, name, key) in POINTER_SECRETS.items():
        cluster_played.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        encoded = base64.b64encode(json.dumps(served_pointer(assets, role)).encode()).decode()
        cluster_played.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": {key: encoded}})


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
        # Nothing but the driver's approver, beside its wait, gets the masters Ready (approve-csr.service is masked).
        cluster_played.wait_ready(cluster_played.masters, 300)
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
    names = cluster_played.names
    during = output.split("3/6 ", 1)[1].split("4/6 ", 1)[0]
    for master in cluster_played.masters:  # Nova's creation times: approved by the rules a worker's request meets
        assert f"\ncsr: approved {names[f'{master}-client']}: client certificate of {master}" in during, during
    for node in sorted(n for n in nodes if "-worker-" in n or "-master-" in n):
        assert re.search(rf"^csr: approved {names[f'{node}-client']}: ", output, re.M), output
        assert re.search(rf"^csr: approved {names[f'{node}-serving']}: ", output, re.M), output
    assert set(pending) == {"csr-other-cluster", "csr-wrong-requester", "csr-forged-master"}, pending
    assert "Install complete!" in output
    assert f"console: https://console-openshift-console.apps.{domain}" in output
    password = (assets / "auth" / "kubeadmin-password").read_text().strip()
    assert password not in output
    # The configs name the release they install where 4.17.3's installer names it.
    assert "\n  channel: stable-4.17\n" in ignition_files(assets / "bootstrap.ign")[older_installer.CVO_OVERRIDES].decode()


def test_a_worker_the_cloud_lost_comes_back_from_the_pointer_the_cluster_serves(stack, tmp_path):
    """Day 2 of the cluster installed above (at 4.17, upgraded since; the bootstrap gone): a worker's
    server deleted in the cloud; `pulumi refresh` drops it from the state and keeps its pointer command,
    which read the installer's pointer at install. tools.recover taints that command, and the next
    `pulumi up` reads the pointer the cluster serves (worker-user-data-managed, through the played API)
    and makes the server from it. Nothing else changes."""
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
    with played(tmp_path / "cluster", assets, nodes, domain, running=frozenset(nodes)) as cluster_played:
        rotated(cluster_played, assets)
        # As the user runs it where the API's name resolves (the install's /etc/hosts lines).
        up = subprocess.run(
            [*with_hosts(hosts), "pulumi", "up", "--yes", "--skip-preview", "--stack", stack.name, "--non-interactive"],
            cwd=stack.project, env=stack.env, capture_output=True, text=True, timeout=1800,
        )
    assert up.returncode == 0, (up.stdout + up.stderr)[-6000:]
    state = {resource["urn"].rsplit("::", 1)[1]: resource for resource in stack.state()}
    user_data = json.loads(base64.b64decode(sdk(stack.cloud, USER_DATA, server=state["ocp4-workers-worker-1"]["id"])))  # type: ignore[attr-defined]
    assert user_data["ignition"] == served_pointer(assets)["ignition"]
    # The other worker kept the installer's pointer it was made with; nothing is left to do.
    other = json.loads(base64.b64decode(sdk(stack.cloud, USER_DATA, server=state["ocp4-workers-worker-0"]["id"])))  # type: ignore[attr-defined]
    assert ROTATED_CA not in json.dumps(other)
    steps, output = stack.steps(stack.config())
    assert steps is not None, output[-4000:]
    assert {step: action for step, action in steps.items() if action != "same"} == {}


INSTANCE = "openstack:compute/instance:Instance"


def _servers(stack: Stack) -> dict[str, str]:
    """Each server of the state: resource name -> its ID in Nova."""
    return {resource["urn"].rsplit("::", 1)[1]: resource["id"] for resource in stack.state() if resource["type"] == INSTANCE}


def _user_data(stack: Stack, server: str) -> str:
    return base64.b64decode(sdk(stack.cloud, USER_DATA, server=server)).decode()  # type: ignore[attr-defined]


def test_a_worker_added_on_day_2_boots_from_the_pointer_the_rotated_cluster_serves(stack, tmp_path):
    """workers.count 2 -> 3 on day 2 of the cluster installed at 4.17 and rotated since. The engine's
    preview makes the new worker and changes nothing else. With the API out of reach the run stops,
    naming the secret it must read and what to do, and makes no server; with the API there, the new
    server's user_data, as Nova holds it, is the pointer the cluster serves, and the servers made
    before are the same servers."""
    config = stack.config()
    domain = f"{structured(config['ocp:clusterName'])}.{structured(config['ocp:baseDomain'])}"
    assets = stack.project / structured(config["ocp:installer"])["dir"]
    nodes, infra, before = stack.outputs()["nodes"], infra_id(stack), _servers(stack)
    scaled = {**config, "ocp:workers": json.dumps({**structured(config["ocp:workers"]), "count": 3})}
    steps, output = stack.steps(scaled)
    assert steps is not None, output[-4000:]
    changed = {name: action for name, action in steps.items() if action != "same"}
    assert {"ocp4-workers-worker-2", "ocp4-worker-pointers-worker-2"} <= set(changed), changed
    assert all(action == "create" and name.startswith(("ocp4-workers-worker-2", "ocp4-worker-pointers-worker-2")) for name, action in changed.items()), changed

    up = ["pulumi", "up", "--yes", "--skip-preview", "--stack", stack.name, "--non-interactive"]
    # The API's name resolves to an address where nothing listens: the cluster cannot be asked.
    nowhere = hosts_file(tmp_path / "hosts-nowhere", f"api.{domain}", address="127.0.0.9")
    began = time.monotonic()
    refused = subprocess.run([*with_hosts(nowhere), *up], cwd=stack.project, env=stack.env, capture_output=True, text=True, timeout=1800)
    text = refused.stdout + refused.stderr
    print(f"the refused up: {time.monotonic() - began:.0f} s")
    assert refused.returncode != 0, text[-4000:]
    assert (
        f"ocp:workers.count: {infra}-worker-2 cannot be created: on OpenShift 4.19 and later (a cluster upgraded to it too) the "
        "machine config operator may have rotated the CA of its config server (once any MachineSet exists), so a new worker "
        "boots from the pointer config in secret openshift-machine-api/worker-user-data-managed, and reading it through the "
        "cluster's API failed: "
    ) in text, text[-4000:]
    assert f"The connection to the server api.{domain}:6443 was refused" in text, text[-4000:]
    assert f"Make the API (https://api.{domain}:6443) reachable from where `pulumi up` runs" in text
    assert "client-key-data" not in text
    assert f"{infra}-worker-2" not in sdk(stack.cloud, OURS, infra=infra)["servers"]  # type: ignore[attr-defined]
    assert _servers(stack) == before

    hosts = hosts_file(tmp_path / "hosts", f"api.{domain}")
    with played(tmp_path / "cluster", assets, nodes, domain, running=frozenset(nodes)) as cluster_played:
        rotated(cluster_played, assets)
        began = time.monotonic()
        done = subprocess.run([*with_hosts(hosts), *up], cwd=stack.project, env=stack.env, capture_output=True, text=True, timeout=1800)
        print(f"the up with the cluster's API: {time.monotonic() - began:.0f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    after = _servers(stack)
    assert {name: server for name, server in after.items() if name != "ocp4-workers-worker-2"} == before
    user_data = json.loads(_user_data(stack, after["ocp4-workers-worker-2"]))
    assert user_data["ignition"] == served_pointer(assets)["ignition"]
    hostname = next(entry for entry in user_data["storage"]["files"] if entry["path"] == "/etc/hostname")
    assert dataurl.file_contents(hostname) == f"{infra}-worker-2\n".encode()
    steps, output = stack.steps(stack.config())
    assert steps is not None, output[-4000:]
    assert {step: action for step, action in steps.items() if action != "same"} == {}


@needs_ignition
def test_the_new_nodes_boot_from_the_rotated_config_server_where_the_installers_pointer_cannot(stack, tmp_path):
    """The workers made on day 2 (made again, added), their user_data as Nova holds it, run by the real
    Ignition in a namespace holding their pointer's address: each fetches its config from a machine
    config server stand-in serving with a certificate of the rotated CA. The installer's pointer (the
    worker made at install) is refused there: what a new node made from it would meet."""
    servers = _servers(stack)
    served = {f"/config/{role}": MCS_CONFIG[role] for role in ("master", "worker")}
    with netns.lab("rotated") as lab:
        node = lab.namespace("node")
        user_data = {name: _user_data(stack, servers[f"ocp4-workers-worker-{name[-1]}"]) for name in ("worker-0", "worker-1", "worker-2")}
        (merge,) = json.loads(user_data["worker-2"])["ignition"]["config"]["merge"]
        pointer = urllib.parse.urlsplit(merge["source"])
        lab.run(node, ["ip", "addr", "add", f"{pointer.hostname}/32", "dev", "lo"], check=True)
        certificate = ROTATED.issue(tmp_path / "tls", pointer.hostname)
        with ignition.ConfigServer(served, certificate=certificate, address=pointer.hostname, port=pointer.port, netns=node) as mcs:
            booted = {name: ignition.run(user_data[name], tmp_path / name, netns=node) for name in ("worker-1", "worker-2")}
            refused = ignition.run(user_data["worker-0"], tmp_path / "worker-0", netns=node, timeout=15)
    assert lab.leftovers() == []
    for name, result in booted.items():
        assert result.ok, f"{name}: {result.failure()}\n{result.log[-3000:]}"
        assert result.files[MCS_FILE].contents == MCS_FILE_CONTENTS["worker"]
    assert [path for path, _ in mcs.requests] == [pointer.path, pointer.path]
    assert not refused.ok and MCS_FILE not in refused.files
    assert "x509: certificate signed by unknown authority" in refused.log
