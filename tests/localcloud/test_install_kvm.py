"""The one-command install (`python -m ocp install --stack kvm`) from nothing to "installed", with
the real engine and libvirt plugin against the local libvirt, the real `openshift-install
wait-for`, and a real Kubernetes API server playing the cluster (tests/ocp/played.py): it serves
the installer's own certificate for api.<cluster>.<domain>, which resolves to it (127.0.0.2, so that
the dev install's played cluster can hold 127.0.0.1:6443 beside it) in the driver's own mount
namespace only (a hosts file bound over /etc/hosts there).

Then what a user would check: the steps in order, progress lines, the bootstrap gone from libvirt,
the masters Ready through the driver's own approver while it waits for the bootstrap (the installer's
approve-csr.service is masked), only this stack's nodes' certificates approved (another cluster's node,
a wrong requester and a master's request from another requester left pending with their reasons), the
console and API URLs, the kubeconfig (0600), where the password
is; that a Ctrl-C while waiting leaves a state the next run picks up; that a run on an installed
cluster changes nothing; and the driver's own time over the steps it waits on."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import time
from pathlib import Path

import pytest

from harness import kubeapi
from tests.localcloud.conftest import libvirt_exports
from tests.localcloud.engine import Stack, needs, structured
from tests.ocp.driving import Driver, hosts_file, write_oc
from tests.ocp.played import played

STACK = "kvm"
API_ADDRESS = "127.0.0.2"  # on loopback; test_install_dev's played cluster has 127.0.0.1

pytestmark = pytest.mark.skipif(needs(("libvirt", "0.5.4")) is not None or kubeapi.missing() is not None, reason=str(needs(("libvirt", "0.5.4")) or kubeapi.missing()))

@pytest.fixture(scope="module")
def stack(local_libvirt, tmp_path_factory) -> Stack:
    exports = libvirt_exports(local_libvirt)
    work = tmp_path_factory.mktemp("kvm-install")
    oc = write_oc(work)

    def local(committed: dict) -> dict:
        libvirt = dict(committed["ocp:libvirt"], uri=exports["LIBVIRT_DEFAULT_URI"], image=exports["OCP_LIBVIRT_IMAGE"])
        if exports["OCP_LIBVIRT_DOMAIN_TYPE"] != "kvm":
            libvirt["domainType"] = exports["OCP_LIBVIRT_DOMAIN_TYPE"]
        return {**committed, "ocp:libvirt": libvirt, "ocp:installer": dict(committed["ocp:installer"], oc=str(oc))}

    made = Stack.create(STACK, work, {"LIBVIRT_DEFAULT_URI": exports["LIBVIRT_DEFAULT_URI"]}, [("libvirt", "0.5.4")], local)
    made.libvirt = local_libvirt  # type: ignore[attr-defined]
    yield made
    if os.environ.get("OCP_KEEP_LIFECYCLE"):
        print(f"kept: the stack in {made.project}")
        return
    made.destroy(teardown=True)


@pytest.fixture(scope="module")
def hosts(stack, tmp_path_factory) -> Path:
    config = {key: structured(value) for key, value in stack.base.items()}
    return hosts_file(tmp_path_factory.mktemp("hosts") / "hosts", f"api.{config['ocp:clusterName']}.{config['ocp:baseDomain']}", API_ADDRESS)


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex((API_ADDRESS, port)) != 0


def test_one_command_installs_the_kvm_stack(stack, hosts, tmp_path):
    assert _port_free(6443), f"{API_ADDRESS}:6443 is taken: the played cluster's kubeconfig names that port"
    config = {key: structured(value) for key, value in stack.base.items()}
    cluster, domain = config["ocp:clusterName"], f"{config['ocp:clusterName']}.{config['ocp:baseDomain']}"
    assets = stack.project / config["ocp:installer"]["dir"]
    driver = Driver(stack, hosts, "install")
    # 1-2: the preview and `up`, with progress; then it waits for the bootstrap.
    waiting = driver.wait_for_line(r"^3/6 waiting for the bootstrap", 1800)
    up_done = driver.wait_for_line(r"^up: \d+ changed in", 5)
    outputs = json.loads(stack.pulumi("stack", "output", "--json").stdout)
    nodes = outputs["nodes"]
    with played(tmp_path, assets, nodes, domain, address=API_ADDRESS) as cluster_played:
        # The real `wait-for` finds the API (the installer's certificate, its admin client certificate).
        driver.wait_for_line(r"for bootstrapping to complete", 300)
        # Ctrl-C while it waits (a terminal sends it to the whole group): the next run picks up.
        os.killpg(driver.process.pid, signal.SIGINT)
        assert driver.wait(120) == 130, driver.text()[-4000:]
        assert "interrupted: run the same command again" in driver.text()
        first = driver.text()
        again = Driver(stack, hosts, "install")
        again.wait_for_line(r"^preview: nothing to change", 600)
        again.wait_for_line(r"for bootstrapping to complete", 600)
        # Nothing but the driver's approver, beside its wait, gets the masters Ready; then the bootstrap hands over.
        cluster_played.wait_ready(cluster_played.masters, 300)
        handed = time.monotonic()
        cluster_played.bootstrap_complete()
        code = again.wait(1800)
        output = again.text()
        assert code == 0, output[-8000:] + "\nplayed: " + "; ".join(cluster_played.events + cluster_played.errors)
        pending = cluster_played.pending()
    print(first + "\n---- run again ----\n" + output)
    # The steps, in order, each once.
    steps = [line for _, line in again.lines if re.match(r"^\d/6 ", line)]
    assert [s[:3] for s in steps] == ["1/6", "2/6", "3/6", "4/6", "5/6", "6/6"], steps
    assert re.search(r"^\[\d+/\d+ \d+m\d\ds\] create libvirt:index/domain:Domain", first, re.M), first[:3000]
    # The bootstrap is gone (its domain and volumes), and the stack says so.
    assert f"{cluster}-bootstrap" not in stack.libvirt.names("list", "--all", "--name")  # type: ignore[attr-defined]
    assert structured(stack.pulumi("config", "get", "ocp:bootstrap.enabled", "--path").stdout.strip()) in (False, "false")
    # Only this stack's masters and workers were approved, the masters beside the bootstrap's wait; the stranger,
    # the wrong requester and the master's forger wait, with reasons.
    names = cluster_played.names
    during = (first + output.split("4/6 ", 1)[0]).split("3/6 ", 1)[1]
    for master in cluster_played.masters:
        assert f"csr: approved {names[f'{master}-client']}: client certificate of {master}" in during, during
        assert f"csr: approved {names[f'{master}-serving']}: serving certificate of {master}" in during, during
    for worker in sorted(n for n in nodes if "-worker-" in n):
        assert f"csr: approved {names[f'{worker}-client']}: " in first + output, output
        assert f"csr: approved {names[f'{worker}-serving']}: " in first + output, output
    assert re.search(r"csr: left pending csr-other-cluster \(client\): .*other-worker-0 is not a node of this stack", output), output
    assert re.search(r"csr: left pending csr-wrong-requester \(client\): .*not the node bootstrapper", output), output
    assert re.search(r"csr: left pending csr-forged-master \(client\): .*not the node bootstrapper", first + output), output
    assert set(pending) == {"csr-other-cluster", "csr-wrong-requester", "csr-forged-master"}, pending
    # What the installer says at the end, and what the driver prints.
    assert "Install complete!" in output
    assert f"Access the OpenShift web-console here: https://console-openshift-console.apps.{domain}" in output
    assert f"console: https://console-openshift-console.apps.{domain}" in output
    assert f"API: https://api.{domain}:6443" in output
    kubeconfig = assets / "auth" / "kubeconfig"
    assert f"kubeconfig: {kubeconfig} (mode 0600)" in output
    assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
    assert oct((assets / "auth" / "kubeadmin-password").stat().st_mode & 0o777) == "0o600"
    assert "kubeadmin password: " in output
    # The installer prints the password at the end (wait-for has no flag not to): never in the driver's output.
    password = (assets / "auth" / "kubeadmin-password").read_text().strip()
    assert password not in first + output
    assert 'Login to the console with user: "kubeadmin", and password: "[secret]"' in output
    assert re.search(r"^installed in \d+ min", output, re.M)
    # The driver's own time: all of its wall time but the real waits (wait-for, the engine).
    spans = _spans(again.lines)
    print(
        f"first run: preview+up {up_done:.0f} s (3/6 at {waiting:.0f} s); second run: total {again.lines[-1][0]:.0f} s, "
        f"from the hand-over to the end {time.monotonic() - handed:.0f} s; spans: {spans}"
    )


def _spans(lines: list[tuple[float, str]]) -> dict[str, float]:
    """Seconds from each step's line to the next step's line."""
    marks = [(at, line[:3]) for at, line in lines if re.match(r"^\d/6 ", line)] + [(lines[-1][0], "end")]
    return {name: round(next_at - at, 1) for (at, name), (next_at, _) in zip(marks, marks[1:])}


def test_a_run_on_an_installed_cluster_changes_nothing(stack, hosts, tmp_path):
    config = {key: structured(value) for key, value in stack.base.items()}
    domain = f"{config['ocp:clusterName']}.{config['ocp:baseDomain']}"
    assets = stack.project / config["ocp:installer"]["dir"]
    outputs = json.loads(stack.pulumi("stack", "output", "--json").stdout)
    # The played cluster from a fresh API server: installed already (the bootstrap handed over, every node Ready).
    shutil.rmtree(tmp_path / "api", ignore_errors=True)
    with played(tmp_path, assets, outputs["nodes"], domain, running=frozenset(outputs["nodes"]), address=API_ADDRESS) as cluster_played:
        cluster_played.bootstrap_complete()
        driver = Driver(stack, hosts, "install")
        code = driver.wait(900)
        output = driver.text()
    assert code == 0, output[-6000:]
    assert "preview: nothing to change" in output
    assert "3/6 and 4/6: the bootstrap is gone already" in output
    assert "Install complete!" in output
    print(output)


def test_approve_csrs_takes_a_new_worker_in_after_a_workers_count_edit(stack, hosts, tmp_path):
    """Day 2: workers 2 -> 3 with `pulumi up`, then `python -m ocp approve-csrs`: libvirt keeps no
    creation time, so the new worker's client request waits for its name, which `--csr` gives; then
    its certificates only, until it is Ready; the running workers and the masters are left alone."""
    config = {key: structured(value) for key, value in stack.base.items()}
    domain = f"{config['ocp:clusterName']}.{config['ocp:baseDomain']}"
    assets = stack.project / config["ocp:installer"]["dir"]
    running = frozenset(n for n in json.loads(stack.pulumi("stack", "output", "--json").stdout)["nodes"] if "-worker-" in n)
    before = json.loads(stack.pulumi("stack", "output", "--json").stdout)["nodes"]
    stack.base = {**stack.base, "ocp:workers": json.dumps({**config["ocp:workers"], "count": len(running) + 1})}
    stack.write_config(stack.base)
    shutil.rmtree(tmp_path / "api", ignore_errors=True)
    with played(tmp_path, assets, before, domain, running=running, address=API_ADDRESS) as cluster_played:
        # `pulumi up` asks the cluster which release it runs (the new worker's static pod images): it needs the API.
        up = Driver(stack, hosts, "up", "--yes", "--skip-preview", "--non-interactive", program=("pulumi",))
        assert up.wait(900) == 0, up.text()[-6000:]
        nodes = json.loads(stack.pulumi("stack", "output", "--json").stdout)["nodes"]
        (new,) = sorted(set(n for n in nodes if "-worker-" in n) - running)
        cluster_played.add_worker(new, nodes[new])
        unnamed = Driver(stack, hosts, "approve-csrs", "--timeout", "0.2")
        assert unnamed.wait(300) == 1, unnamed.text()[-4000:]
        client = cluster_played.names[f"{new}-client"]
        driver = Driver(stack, hosts, "approve-csrs", "--csr", client, "--timeout", "5")
        code = driver.wait(600)
        output = driver.text()
        pending = cluster_played.pending()
    print(unnamed.text() + "\n---- named ----\n" + output)
    assert f"csr: left pending {client} (client): libvirt keeps no creation time for its domains" in unnamed.text(), unnamed.text()
    assert f"python -m ocp approve-csrs --stack {stack.name} --csr {client}" in unnamed.text()
    assert code == 0, output[-4000:]
    approved = re.findall(r"^csr: approved (\S+):", output, re.M)
    assert approved == [client, cluster_played.names[f"{new}-serving"]], output
    assert set(pending) == {"csr-other-cluster", "csr-wrong-requester"}, pending


def test_destroy_asks_first_then_leaves_nothing_in_libvirt(stack, hosts):
    """`python -m ocp destroy`: where no one can answer, nothing without --yes; a stack that
    protects its masters (ocp:protect) says how to lower it; then everything goes."""
    libvirt = stack.libvirt  # type: ignore[attr-defined]
    resources = json.loads(stack.pulumi("stack", "export").stdout)["deployment"]["resources"]
    if any(r.get("protect") for r in resources):
        # Protection first: it is told before any question, --yes or not.
        refused = Driver(stack, hosts, "destroy", "--yes")
        assert refused.wait(300) == 1, refused.text()
        assert f"`pulumi config set ocp:protect false --stack {stack.name}`, then run again" in refused.text()
        assert libvirt.names("list", "--all", "--name")
        assert stack.pulumi("config", "set", "ocp:protect", "false").returncode == 0
    asked = Driver(stack, hosts, "destroy")
    assert asked.wait(300) == 1, asked.text()
    assert "add --yes to go on without a question" in asked.text()
    assert libvirt.names("list", "--all", "--name"), "nothing may go without the user's yes"
    destroyed = Driver(stack, hosts, "destroy", "--yes")
    code = destroyed.wait(900)
    print(destroyed.text())
    assert code == 0, destroyed.text()[-4000:]
    assert re.search(r"^destroyed in \d+m\d\ds$", destroyed.text(), re.M)
    assert libvirt.names("list", "--all", "--name") == []
    assert libvirt.names("net-list", "--all", "--name") == []
