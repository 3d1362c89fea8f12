"""tools.recover's decisions: which interrupted creates it imports, drops or refuses to touch.
The whole path runs for real in tests/localcloud/test_openstack_faults.py."""

from __future__ import annotations

from tools.recover import delete_commands, pending_creates, verdicts

SERVER = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:compute/instance:Instance::ocp4-control-plane-master-1"
PORT = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:networking/port:Port::ocp4-workers-worker-0-port"
DRAIN = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$command:local:Command::ocp4-workers-worker-0-drain"


def export(*operations: tuple[str, str, str, dict]) -> dict:
    return {"deployment": {"pending_operations": [{"type": kind, "resource": {"urn": urn, "type": type_, "inputs": inputs}} for kind, urn, type_, inputs in operations]}}


def cloud(servers: list[tuple[str, str]], ports: list[tuple[str, str]]):
    def openstack(*args: str) -> list[dict]:
        rows = {"server": servers, "port": ports}[args[0]]
        return [{"ID": id_, "Name": name} for id_, name in rows]

    return openstack


def test_what_an_interrupted_create_made_is_deleted_servers_first():
    interrupted = pending_creates(export(
        ("creating", SERVER, "openstack:compute/instance:Instance", {"name": "ocp4-x7k2p-master-1"}),
        ("creating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-0"}),
        ("creating", DRAIN, "command:local:Command", {"delete": "oc adm drain"}),
        ("updating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-1"}),
    ))
    assert [item.name for item in interrupted] == ["ocp4-control-plane-master-1", "ocp4-workers-worker-0-port", "ocp4-workers-worker-0-drain"]
    found = verdicts(interrupted, cloud(servers=[("s-1", "ocp4-x7k2p-master-1"), ("s-2", "ocp4-x7k2p-master-10")], ports=[("p-9", "other")]))
    assert [verdict.action for verdict in found] == ["delete", "clear", "clear"]
    assert delete_commands(found) == [["server", "delete", "--wait", "s-1"]]


def test_every_copy_an_interrupted_create_made_goes_ports_after_servers():
    interrupted = pending_creates(export(
        ("creating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-0"}),
        ("creating", SERVER, "openstack:compute/instance:Instance", {"name": "ocp4-x7k2p-master-1"}),
    ))
    found = verdicts(interrupted, cloud(servers=[("s-1", "ocp4-x7k2p-master-1"), ("s-3", "ocp4-x7k2p-master-1")], ports=[("p-1", "ocp4-x7k2p-worker-0")]))
    assert delete_commands(found) == [["server", "delete", "--wait", "s-1"], ["server", "delete", "--wait", "s-3"], ["port", "delete", "p-1"]]


def test_nothing_interrupted_nothing_to_do():
    assert pending_creates({"deployment": {"resources": []}}) == []
