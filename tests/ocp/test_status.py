"""`python -m ocp status`'s report without an engine: the drift classifier on the steps the real engine gives
(their shape seen in tests/e2e/test_status.py), the verdict and exit codes, the JSON against the shape
docs/day2.md documents, and `--help`. The engine, the cloud and the cluster: tests/e2e/test_status.py,
tests/ocp/test_status_cluster.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ocp.status import Drift, Holder, LastUpdate, LockReading, Report
from ocp.status_capacity import Capacity, Room
from ocp.status_cluster import Cluster, Condition, Expiry, NodeState, Operator, Request
from ocp.status_drift import PORT, RULE, SERVER, Step, changes
from ocp.status_render import SCHEMA, as_json, table
from tests.conftest import ROOT

NOW = datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
PORT_URN = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$openstack:networking/port:Port::ocp4-workers-worker-0-port"
RULE_URN = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$openstack:networking/secGroupRule:SecGroupRule::ocp4-worker-ingress-https"
SERVER_URN = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$openstack:compute/instance:Instance::ocp4-workers-worker-1"
PAIR, EGRESS = {"ipAddress": "10.0.0.7", "macAddress": ""}, {"ipAddress": "10.0.3.17", "macAddress": "fa:16:3e:00:00:01"}
PORT_STATE = {"id": "p-1", "name": "ocp4-x7k2p-worker-0", "allowedAddressPairs": [PAIR], "securityGroupIds": ["sg-worker"], "adminStateUp": True}


def test_what_the_cluster_adds_to_a_nodes_port_is_kept_not_drift():
    grown = {**PORT_STATE, "allowedAddressPairs": [PAIR, EGRESS], "securityGroupIds": ["sg-worker", "lb-sg-1"], "allSecurityGroupIds": ["lb-sg-1", "sg-worker"]}
    (change,) = changes([Step("update", PORT, PORT_URN, {**PORT_STATE, "allSecurityGroupIds": ["sg-worker"]}, grown)], "dev")
    assert (change.resource, change.op, change.keys, change.expected) == ("ocp4-workers-worker-0-port", "changed", (), True)
    assert change.kept == ("allSecurityGroupIds", "allowedAddressPairs", "securityGroupIds") and change.run == ""


def test_a_pair_taken_off_a_port_is_drift_and_a_kept_addition_beside_another_change_is_told_apart():
    (removed,) = changes([Step("update", PORT, PORT_URN, PORT_STATE, {**PORT_STATE, "allowedAddressPairs": []})], "dev")
    assert removed.keys == ("allowedAddressPairs",) and not removed.expected
    both = {**PORT_STATE, "name": "renamed", "allowedAddressPairs": [PAIR, EGRESS], "__meta": "x"}
    (change,) = changes([Step("update", PORT, PORT_URN, PORT_STATE, both)], "dev")
    assert (change.keys, change.kept, change.expected) == (("name",), ("allowedAddressPairs",), False)
    assert change.run.startswith("`pulumi refresh --stack dev --yes`") and "python -m ocp up --stack dev" in change.run


def test_an_unset_list_read_back_empty_is_no_drift_and_one_emptied_is():
    """A port made without tags holds `null` in the state and reads back `[]` (seen with the e2e cloud's ports)."""
    assert changes([Step("same", PORT, PORT_URN, {**PORT_STATE, "tags": None}, {**PORT_STATE, "tags": []})], "dev") == ()
    (emptied,) = changes([Step("same", PORT, PORT_URN, {**PORT_STATE, "tags": ["ocp"]}, {**PORT_STATE, "tags": []})], "dev")
    assert emptied.keys == ("tags",)


def test_a_deleted_rule_a_stopped_server_and_a_deleted_server_each_say_what_to_run():
    server = {"id": "s-1", "name": "ocp4-x7k2p-worker-1", "powerState": "active"}
    found = changes([
        Step("delete", RULE, RULE_URN, {"id": "r-1", "direction": "ingress"}, {}),
        Step("update", SERVER, SERVER_URN, server, {**server, "powerState": "shutoff"}),
        Step("same", PORT, PORT_URN, PORT_STATE, PORT_STATE),
        Step("same", PORT, PORT_URN.replace("worker-0", "worker-9"), PORT_STATE, {**PORT_STATE, "adminStateUp": False}),
    ], "dev")
    rule, stopped = (next(change for change in found if change.type == kind) for kind in (RULE, SERVER))
    assert len(found) == 3  # a `same` whose outputs are the state's is no change; one whose outputs differ is
    assert [c.keys for c in found if c.type == PORT] == [("adminStateUp",)]
    assert (rule.op, rule.id, rule.expected) == ("gone", "r-1", False) and rule.run.endswith("makes it again")
    assert stopped.keys == ("powerState",) and "shutoff" in stopped.why and stopped.run.startswith("`openstack server start s-1`")
    (gone,) = changes([Step("delete", SERVER, SERVER_URN, server, {})], "dev")
    assert "a new node" in gone.run and "approve-csrs" in gone.run


def full_report(**parts) -> Report:
    """A report with every part read and something in each list."""
    fields = dict(
        stack="dev", read_at=NOW, history_why="",
        last_update=LastUpdate("update", "succeeded", NOW - timedelta(hours=9), NOW - timedelta(hours=8), "ops@ci-7", "python -m ocp", "0.1.0"),
        lock=LockReading(True, holders=(Holder("ops@ci-7", 4242, NOW - timedelta(minutes=3), "live", "/state/.pulumi/locks/x.json"),)),
        drift=Drift(True, changes=changes([Step("update", PORT, PORT_URN, PORT_STATE, {**PORT_STATE, "allowedAddressPairs": [PAIR, EGRESS]})], "dev")),
        cluster=Cluster(
            True, version="4.17.3", conditions=(Condition("Available", "True", "Done", "Done applying 4.17.3"),),
            nodes=(NodeState("ocp4-x7k2p-master-0", True, "KubeletReady"),), degraded=(),
            pending=(), expiry=Expiry("the API's serving certificate", NOW + timedelta(days=300), 300.0),
        ),
        capacity=Capacity(True, rooms=(Room("cores", 4, 12, 40),)),
    )
    return Report(**{**fields, **parts})


def test_the_verdict_and_the_exit_code():
    healthy = full_report()
    assert (healthy.verdict, healthy.exit_code, healthy.problems(), healthy.unknowns()) == ("healthy", 0, [], [])
    drifted = full_report(drift=Drift(True, changes=changes([Step("delete", RULE, RULE_URN, {"id": "r-1"}, {})], "dev")))
    assert (drifted.verdict, drifted.exit_code) == ("drift", 1)
    sick = replace(healthy.cluster, nodes=(NodeState("w-0", False, "NodeStatusUnknown"),), degraded=(Operator("network", "RolloutHung", "..."),))
    unhealthy = full_report(cluster=sick)
    assert (unhealthy.verdict, unhealthy.exit_code) == ("unhealthy", 1)
    assert unhealthy.problems() == ["node w-0 is not Ready (NodeStatusUnknown)", "cluster operator network is Degraded (RolloutHung)"]
    unread = full_report(cluster=Cluster(False, "the cluster's API did not answer: timeout"))
    assert (unread.verdict, unread.exit_code, unread.unknowns()) == ("unknown", 2, ["cluster: the cluster's API did not answer: timeout"])
    # What is read and wrong says 1 even beside what could not be read.
    assert full_report(cluster=unread.cluster, capacity=Capacity(True, rooms=(Room("cores", 4, 2, 40),))).exit_code == 1
    dead = full_report(lock=LockReading(True, holders=(replace(healthy.lock.holders[0], state="gone"),)))
    assert dead.exit_code == 1
    expiring = full_report(cluster=replace(healthy.cluster, expiry=Expiry("the kubeconfig's CA", NOW + timedelta(days=3), 3.0)))
    assert expiring.exit_code == 1 and "expires in 3 days" in expiring.problems()[0]


def documented() -> dict:
    """The JSON block of docs/day2.md's "Every morning"."""
    text = (ROOT / "docs" / "day2.md").read_text()
    section = text[text.index("## Every morning"):]
    return json.loads(re.search(r"```json\n(.*?)\n```", section, re.S)[1])


def shape(value) -> object:
    """Keys all the way down (a list by its first element's)."""
    if isinstance(value, dict):
        return {key: shape(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value and isinstance(value[0], (dict, list)) else []
    return None


def test_the_json_has_exactly_the_documented_keys():
    report = full_report(
        cluster=replace(full_report().cluster, degraded=(Operator("network", "R", "M"),), pending=(Request("csr-x", "w-0", "client", "never", "why"),)),
        drift=Drift(True, changes=changes([Step("update", PORT, PORT_URN, PORT_STATE, {**PORT_STATE, "name": "x", "allowedAddressPairs": [PAIR, EGRESS]})], "dev")),
    )
    made = json.loads(json.dumps(as_json(report)))  # JSON types only
    assert made["schema"] == SCHEMA == documented()["schema"]
    assert shape(made) == shape(documented())
    assert made["drift"]["changes"][0]["kept"] == ["allowedAddressPairs"] and made["exitCode"] == 1


def test_the_table_names_what_is_wrong_and_what_to_run():
    report = full_report(drift=Drift(True, changes=changes([Step("delete", RULE, RULE_URN, {"id": "r-1"}, {})], "dev")), cluster=Cluster(False, "no answer"))
    text = table(report)
    assert text.splitlines()[0] == "stack dev: drift (exit 1), read 2026-11-29T07:00:00Z"
    assert "DRIFT    gone    ocp4-worker-ingress-https" in text and "run: `pulumi refresh --stack dev --yes`" in text
    assert "cluster: not read (no answer)" in text and "by ops@ci-7 via python -m ocp (ocp 0.1.0)" in text
    assert "lock: ops@ci-7 pid 4242" in text


def test_help_says_what_it_reads_that_it_changes_nothing_and_its_exit_codes():
    done = subprocess.run([sys.executable, "-m", "ocp", "status", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "changes nothing: takes no lock, writes nothing to the state, the stack file or the cloud" in text
    assert "Exit codes: 0 healthy; 1 drift or unhealthy; 2 could not tell" in text
    for read in ("update history", "lock", "refresh preview", "kubeconfig", "quotas"):
        assert read in text


def test_the_next_worker_takes_the_preflights_count_of_one_more_worker():
    from cluster.cloud_facts import Flavor, Quota
    from cluster.config import load_config
    from ocp.status_capacity import next_worker
    from tests.conftest import stack_config

    config = load_config(stack_config("dev"))  # 2 workers of flavor worker
    flavors = {"worker": Flavor(4, 16384, 100), "master": Flavor(8, 32768, 120)}
    quotas = {"instances": Quota(10, 6), "cores": Quota(40, 38), "ram": Quota(-1), "ports": Quota(50, 20), "volumes": Quota(10, None)}
    rooms = {room.quota: room for room in next_worker(config, quotas, flavors)}
    assert {name: (room.need, room.free, room.fits) for name, room in rooms.items()} == {
        "instances": (1, 4, True), "cores": (4, 2, False), "ram": (16384, None, True), "ports": (1, 30, True),
    }
    with_volumes = load_config(stack_config("dev", workers={**config.workers.model_dump(by_alias=True, exclude_none=True), "rootVolume": {"size": 120, "type": "standard"}}))
    rooms = {room.quota: room for room in next_worker(with_volumes, {**quotas, "gigabytes": Quota(1000, 900)}, flavors)}
    assert (rooms["volumes"].need, rooms["volumes"].free, rooms["gigabytes"].need, rooms["gigabytes"].free) == (1, None, 120, 100)
    assert not rooms["gigabytes"].fits
