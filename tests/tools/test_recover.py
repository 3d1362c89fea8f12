"""tools.recover's decisions: which interrupted creates it imports, drops or refuses to touch.
The whole path runs for real in tests/localcloud/test_openstack_faults.py."""

from __future__ import annotations

from tools.recover import delete_commands, failed_servers, in_error, pending_creates, verdicts

SERVER = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:compute/instance:Instance::ocp4-control-plane-master-1"
PORT = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:networking/port:Port::ocp4-workers-worker-0-port"
FIP = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:VipPorts$openstack:networking/floatingIp:FloatingIp::ocp4-vips-api-fip"
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


def test_a_floating_ip_made_for_a_port_is_found_by_the_port_before_it_is_tagged():
    """The provider tags a floating IP after its create: a run killed in between leaves it untagged on its port."""
    asked = []

    def openstack(*args: str) -> list[dict]:
        asked.append(args)
        return [{"ID": "f-1", "Port": "p-api", "Description": "", "Tags": []}] if args[-2:] == ("--port", "p-api") else []

    interrupted = pending_creates(export(("creating", FIP, "openstack:networking/floatingIp:FloatingIp", {"portId": "p-api", "tags": ["openshiftClusterID=ocp4-x7k2p"]})))
    found = verdicts(interrupted, openstack)
    assert asked == [("floating", "ip", "list", "--long", "-f", "json", "--port", "p-api")]
    assert delete_commands(found) == [["floating", "ip", "delete", "f-1"]]


def test_servers_whose_create_failed_are_tainted_while_the_cloud_holds_them_in_error_or_not_at_all():
    """Nova leaves a server it accepted over a quota in ERROR; the state keeps it with its create's error."""
    worker = SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-0")
    gone = SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-1")
    exported = {"deployment": {"resources": [
        {"urn": SERVER, "type": "openstack:compute/instance:Instance", "id": "s-1", "initErrors": ["unexpected state 'ERROR'"], "protect": True},
        {"urn": worker, "type": "openstack:compute/instance:Instance", "id": "s-2", "initErrors": ["timeout"]},
        {"urn": gone, "type": "openstack:compute/instance:Instance", "id": "s-3", "initErrors": ["unexpected state 'ERROR'"]},
        {"urn": PORT, "type": "openstack:networking/port:Port", "id": "p-1", "initErrors": ["timeout"]},
        {"urn": DRAIN, "type": "openstack:compute/instance:Instance", "id": "s-4"},
    ]}}
    failed = failed_servers(exported)
    assert list(failed) == [SERVER, worker, gone]

    def openstack(*args: str) -> list[dict]:
        return [{"ID": "s-1", "Status": "ERROR"}, {"ID": "s-2", "Status": "ACTIVE"}]

    # s-2 became ACTIVE after all: the next up's update is enough for it.
    assert in_error(openstack, failed) == [SERVER, gone]


def test_nothing_interrupted_nothing_to_do():
    assert pending_creates({"deployment": {"resources": []}}) == []
