"""`python -m ocp status` on a dev stack deployed by the real engine and OpenStack plugin on the local cloud,
one stack for every check (issue 52, item 4): by hand, a worker's security group rule deleted, the worker's
server stopped and its root volume's detach tried; each reported with what to run, and what it says to run
brings the stack back. Reading changes nothing: the backend's bytes (state, history, locks) are the same
after. The quotas for the next worker come from the cloud. The cluster's API is not there (no OpenShift on
the local cloud): said so (tests/ocp/test_status_cluster.py reads a played one)."""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    def small(committed: dict) -> dict:
        # One master, one worker booting from a volume; no floating IP to take from the shared cloud's quota.
        return {
            **committed,
            "ocp:openstack": dict(committed["ocp:openstack"], apiFloatingIp="none", ingressFloatingIp="none"),
            "ocp:masters": dict(committed["ocp:masters"], count=1),
            "ocp:workers": dict(committed["ocp:workers"], count=1, rootVolume={"size": 30, "type": "ssd"}),
        }

    yield from openstack_stack("dev", tmp_path_factory.mktemp("dev-status"), cloud, cloud_env, edit=small, cli=True)


def backend(stack: Stack) -> dict[str, bytes]:
    root = stack.work / "state"
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def status(stack: Stack) -> tuple[int, dict]:
    began = time.monotonic()
    done = stack.ocp("status", "--json")
    print(f"status: exit {done.returncode} in {time.monotonic() - began:.1f} s; {done.stderr[-2000:]}")
    return done.returncode, json.loads(done.stdout)


# By hand, as someone with the project's credentials would.
BY_HAND = """
worker = next(s for s in tenant.compute.servers() if s.name == f"{infra}-worker-0")
group = tenant.network.find_security_group(f"{infra}-worker")
rule = next(r for r in tenant.network.security_group_rules(security_group_id=group.id) if r.port_range_min == 10250)
tenant.network.delete_security_group_rule(rule)
tenant.compute.stop_server(worker)
tenant.compute.wait_for_server(worker, status="SHUTOFF", wait=120)
volumes = [a["id"] for a in worker.attached_volumes or []]
try:
    tenant.compute.delete_volume_attachment(worker, volumes[0])
    detached = "detached"
except Exception as error:
    detached = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
result = {"rule": rule.id, "server": worker.id, "volumes": volumes, "detach": detached}
"""


def test_status_reports_what_was_done_by_hand_and_what_to_run(stack):
    stack.up()
    infra = infra_id(stack)
    code, healthy = status(stack)
    print("healthy drift:", json.dumps([(c["resource"], c["type"].rsplit(":", 1)[-1], c["keys"], c["kept"]) for c in healthy["drift"]["changes"]]))
    assert healthy["drift"]["read"] and healthy["drift"]["changes"] == [], healthy["drift"]
    assert healthy["capacity"]["read"], healthy["capacity"]
    rooms = {room["quota"]: room for room in healthy["capacity"]["nextWorker"]}
    assert rooms["instances"]["need"] == 1 and rooms["volumes"]["need"] == 1 and rooms["gigabytes"]["need"] == 30, rooms
    # No OpenShift answers here: the cluster could not be told, and nothing else is wrong.
    assert not healthy["cluster"]["read"] and (code, healthy["verdict"]) == (2, "unknown"), healthy
    assert healthy["lastUpdate"]["result"] == "succeeded" and healthy["lastUpdate"]["via"] == "pulumi"

    done = sdk(stack.cloud, BY_HAND, infra=infra)  # type: ignore[attr-defined]
    print(f"by hand: {done}")
    before = backend(stack)
    code, found = status(stack)
    assert backend(stack) == before  # nothing written: state, history, locks
    changes = {change["resource"]: change for change in found["drift"]["changes"]}
    print(json.dumps(found["drift"], indent=2))
    assert (code, found["verdict"]) == (1, "drift"), found
    (rule,) = [c for c in changes.values() if c["type"] == "openstack:networking/secGroupRule:SecGroupRule"]
    assert (rule["op"], rule["id"]) == ("gone", done["rule"]) and "python -m ocp up --stack dev` makes it again" in rule["run"]
    (server,) = [c for c in changes.values() if c["type"] == "openstack:compute/instance:Instance"]
    assert server["id"] == done["server"] and "powerState" in server["keys"], server
    assert server["run"].startswith(f"`openstack server start {done['server']}`")

    # What it says to run brings the stack back: the server started, `pulumi refresh`, then `python -m ocp up`, which
    # holds the stack's lock meanwhile: its engine frozen (SIGSTOP) once the lock is there, status names the holder.
    openstack = stack.cloud.bin("openstack")  # type: ignore[attr-defined]
    subprocess.run([str(openstack), "--os-cloud", "openstack", "server", "start", done["server"]], env=stack.env, check=True, capture_output=True)
    sdk(stack.cloud, "tenant.compute.wait_for_server(tenant.compute.get_server(server), status='ACTIVE', wait=120)", server=done["server"])  # type: ignore[attr-defined]
    refreshed = stack.pulumi("refresh", "--yes", "--skip-preview")
    assert refreshed.returncode == 0, (refreshed.stdout + refreshed.stderr)[-3000:]
    up = subprocess.Popen(
        ["venv/bin/python", "-m", "ocp", "up", "--yes", "--stack", stack.name], cwd=stack.project, env=stack.env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
    )
    try:
        lock = held(stack, up)
        engine = json.loads(lock.read_text())["pid"]
        os.kill(engine, signal.SIGSTOP)
        try:
            assert up.pid in ancestors(engine)  # the engine of this `python -m ocp up`
            code, locked = status(stack)
        finally:
            os.kill(engine, signal.SIGCONT)
        (holder,) = locked["lock"]["holders"]
        assert (holder["pid"], holder["state"], holder["holder"]) == (engine, "live", f"{getpass.getuser()}@{socket.gethostname()}"), locked["lock"]
        assert locked["drift"]["read"], locked["drift"]  # a refresh preview takes no lock
    finally:
        output, _ = up.communicate(timeout=900)
    assert up.returncode == 0, output[-3000:]
    code, after = status(stack)
    assert after["drift"]["changes"] == [] and after["lock"]["holders"] == [], after
    assert after["lastUpdate"]["via"] == "python -m ocp" and after["lastUpdate"]["ocpVersion"]
    print(status_table(stack))


def held(stack: Stack, up: subprocess.Popen, timeout: float = 600) -> Path:
    """The lock file the running up's engine wrote."""
    deadline = time.monotonic() + timeout
    while True:
        found = [path for path in (stack.work / "state" / ".pulumi" / "locks").rglob("*.json")]
        if found:
            return found[0]
        assert up.poll() is None and time.monotonic() < deadline, "the up took no lock"
        time.sleep(0.1)


def ancestors(pid: int) -> list[int]:
    found = []
    while pid > 1:
        status = Path(f"/proc/{pid}/status").read_text()
        pid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        found.append(pid)
    return found


def status_table(stack: Stack) -> str:
    return stack.ocp("status").stdout
