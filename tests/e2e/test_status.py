"""`python -m ocp status`'s stack parts on the real engine and the real OpenStack plugin (pulumi-openstack 5.5.3,
built here): the program's own node port against a cloud of ports (tests/e2e/neutron.py, on loopback), one
stack for every check. What a refresh preview reports of a port changed by hand (the cluster's additions
beside it) and of one deleted, the update history `python -m ocp up` writes (who, which release), a lock held
by a running `pulumi up` (its holder named while the status still reads), and that reading changes nothing:
the backend's bytes (state, history, locks) and the stack file are the same after, and the cloud saw no
write. The cluster and capacity parts: tests/ocp/test_status_cluster.py and tests/localcloud."""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pulumi import automation as auto

from harness import child
from harness.kubeapi import free_port
from ocp import driver, status
from ocp.status_render import as_json, table
from ocp.version import VERSION
from tests.conftest import ROOT, stack_config
from tests.e2e import neutron
from tests.e2e.test_node_ports import EGRESS_IP, LB_GROUP, OPENSTACK, PLUGIN, PROGRAM, _needs
from tools import toolchain

pytestmark = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))
PORT_NAME = "ocp4-workers-worker-0-port"


class Cloud:
    def __init__(self, path: Path):
        self.path = path

    def read(self) -> dict:
        return json.loads(self.path.read_text())

    def port(self) -> dict | None:
        ports = list(self.read()["ports"].values())
        return ports[0] if ports else None

    def edit(self, change) -> None:
        state = self.read()
        change(state)
        self.path.write_text(json.dumps(state))

    def writes(self, since: int) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.read()["requests"][since:] if r["method"] != "GET" and r["path"] != "/v3/auth/tokens"]


@contextmanager
def project_on_the_cloud_of_ports(work: Path, passphrase: str) -> Iterator[tuple[Path, Cloud, dict[str, str]]]:
    """A project with the program's node port, a file backend, the cloud of ports running and the plugin
    installed; the engine's environment set for the duration (the Automation API reads it from the process)."""
    port = free_port()
    project = work / "project"
    project.mkdir()
    (work / "state").mkdir()
    (project / "Pulumi.yaml").write_text("name: nodeports\nruntime: python\n")
    (project / "__main__.py").write_text(PROGRAM.replace("18999", str(port)))
    (project / "settings.json").write_text(json.dumps(stack_config("dev")))
    env = {**toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": passphrase}
    cloud_file = work / "cloud.json"
    server = neutron.start(port, cloud_file)
    try:
        subprocess.run(["pulumi", "plugin", "install", "resource", *OPENSTACK, "--file", str(PLUGIN)], env=env, cwd=project, check=True, capture_output=True)
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            yield project, Cloud(cloud_file), env
    finally:
        child.stop(server)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """The stack made by the install driver's own `up`, with the cloud and its files; the environment the engine reads set."""
    work = tmp_path_factory.mktemp("status")
    with project_on_the_cloud_of_ports(work, "e2e-only-passphrase") as (project, cloud, env):
        stack = auto.create_stack("dev", work_dir=str(project))
        driver.up(stack, lambda line: None, 4)  # as `python -m ocp up` runs it: the policy pack, the update's message
        yield stack, cloud, work, env


def files(*roots: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for root in roots for path in sorted(root.rglob("*")) if path.is_file()}


def test_a_healthy_stack_its_last_update_and_no_lock(deployed):
    stack, cloud, work, _ = deployed
    found = status.report(stack)
    assert found.drift.read and found.drift.changes == (), found.drift
    assert found.lock.read and found.lock.holders == ()
    last = found.last_update
    assert (last.kind, last.result, last.via, last.version) == ("update", "succeeded", "python -m ocp", VERSION)
    assert last.by == f"{getpass.getuser()}@{socket.gethostname()}"
    # No stack config here (a test project): the cluster and the quotas could not be told, said so: exit 2.
    assert (found.verdict, found.exit_code) == ("unknown", 2) and found.cluster.why == "no stack config read"


def test_reading_changes_nothing_and_the_cloud_sees_no_write(deployed):
    stack, cloud, work, _ = deployed
    cloud.edit(lambda state: next(iter(state["ports"].values())).update(name="renamed by hand"))
    before, asked = files(work / "state", work / "project"), len(cloud.read()["requests"])
    found = status.report(stack)
    assert found.drift.changes and len(cloud.read()["requests"]) > asked  # it did read the cloud
    assert cloud.writes(asked) == []
    assert files(work / "state", work / "project") == before
    cloud.edit(lambda state: next(iter(state["ports"].values())).update(name="ocp4-x7k2p-worker-0"))


def test_a_port_changed_by_hand_beside_the_clusters_additions(deployed):
    stack, cloud, _, _ = deployed

    def by_hand(state):
        port = next(iter(state["ports"].values()))
        port.update(name="renamed by hand", allowed_address_pairs=port["allowed_address_pairs"] + [EGRESS_IP], security_groups=port["security_groups"] + [LB_GROUP])

    cloud.edit(by_hand)
    found = status.report(stack)
    (change,) = found.drift.changes
    assert (change.resource, change.op, change.keys) == (PORT_NAME, "changed", ("name",))
    assert set(change.kept) == {"allowedAddressPairs", "allSecurityGroupIds"} and not change.expected
    assert (found.verdict, found.exit_code) == ("drift", 1)
    shown = as_json(found)["drift"]["changes"][0]
    assert shown["keys"] == ["name"] and shown["run"].startswith("`pulumi refresh --stack dev --yes`")
    # The engine calls a change of what the program does not set `same`: its outputs still tell (the port's admin state).
    cloud.edit(lambda state: next(iter(state["ports"].values())).update(name="ocp4-x7k2p-worker-0", admin_state_up=False))
    (change,) = status.report(stack).drift.changes
    assert (change.keys, set(change.kept), change.expected) == (("adminStateUp",), {"allowedAddressPairs", "allSecurityGroupIds"}, False)
    # The additions alone: the cluster's, kept; no drift.
    cloud.edit(lambda state: next(iter(state["ports"].values())).update(admin_state_up=True))
    found = status.report(stack)
    (change,) = found.drift.changes
    assert change.expected and change.keys == () and change.run == "" and found.verdict != "drift"
    assert "expected changed " + PORT_NAME in table(found)

    def taken_back(state):
        port = next(iter(state["ports"].values()))
        port.update(allowed_address_pairs=port["allowed_address_pairs"][:1], security_groups=port["security_groups"][:1])

    cloud.edit(taken_back)
    assert status.report(stack).drift.changes == ()


def test_a_port_deleted_by_hand_and_what_to_run_brings_it_back(deployed):
    stack, cloud, _, env = deployed
    gone = cloud.port()
    cloud.edit(lambda state: state["ports"].clear())
    found = status.report(stack)
    (change,) = found.drift.changes
    assert (change.resource, change.op, change.id, found.exit_code) == (PORT_NAME, "gone", gone["id"], 1)
    assert "DRIFT    gone    " + PORT_NAME in table(found)
    # What it says to run: `pulumi refresh`, then an up (here the driver's up, as `python -m ocp up` runs it).
    assert change.run.startswith("`pulumi refresh --stack dev --yes`") and "then `python -m ocp up --stack dev` makes it again" in change.run
    stack.refresh()
    driver.up(stack, lambda line: None, 1)
    assert cloud.port() is not None and cloud.port()["name"] == gone["name"]
    assert status.report(stack).drift.changes == ()


def test_a_stack_locked_by_a_running_up_names_the_holder_and_still_reads(deployed):
    stack, cloud, work, env = deployed
    running = subprocess.Popen(
        ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", "dev"], cwd=stack.workspace.work_dir,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        locks = work / "state" / ".pulumi" / "locks"
        deadline = time.monotonic() + 60
        while not list(locks.rglob("*.json")):
            assert running.poll() is None and time.monotonic() < deadline, "the up took no lock"
            time.sleep(0.05)
        os.kill(running.pid, signal.SIGSTOP)  # the engine holds the lock while the status reads
        try:
            before = files(work / "state")
            found = status.report(stack)
            after = files(work / "state")
        finally:
            os.kill(running.pid, signal.SIGCONT)
        (holder,) = found.lock.holders
        assert (holder.pid, holder.holder, holder.state) == (running.pid, f"{getpass.getuser()}@{socket.gethostname()}", "live")
        assert found.drift.read, found.drift.why  # the refresh preview takes no lock: not refused
        assert f"lock: {holder.holder} pid {running.pid}" in table(found)
        assert after == before  # the running up's lock and state untouched
    finally:
        output, _ = running.communicate(timeout=120)
    assert running.returncode == 0, output[-2000:]
    assert status.report(stack).lock.holders == ()


def test_a_stack_that_cannot_be_opened_could_not_be_told(tmp_path):
    """The CLI itself, on a backend without the stack: exit 2, said why, nothing made."""
    (tmp_path / "state").mkdir()
    env = toolchain.pulumi_env(tmp_path / "home", tmp_path / "state", ROOT / "venv")
    done = subprocess.run([sys.executable, "-m", "ocp", "status", "--stack", "nosuch", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("could not tell: ") and "nosuch" in done.stderr and done.stdout == ""
    # Only the layout marker any pulumi command writes into an empty backend on its first use; no stack.
    made = sorted(str(path.relative_to(tmp_path / "state")) for path in (tmp_path / "state").rglob("*") if path.is_file())
    assert made == [".pulumi/meta.yaml", ".pulumi/meta.yaml.attrs"]
