"""tools.recover's decisions: which interrupted creates it deletes or drops, which failed servers it
taints. The cloud here answers as the `openstack` CLI does (its options, columns and 404s); the whole
path runs for real in tests/localcloud/test_openstack_faults.py."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import ROOT
from tools.recover import (
    NotFound,
    delete_commands,
    failed_servers,
    in_error,
    lost_servers_pointers,
    openstack_cli,
    pending_creates,
    server_states,
    verdicts,
)

SERVER = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:compute/instance:Instance::ocp4-control-plane-master-1"
POINTER = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:MasterPointers$command:local:Command::ocp4-master-pointers-master-1"
PORT = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:networking/port:Port::ocp4-workers-worker-0-port"
FIP = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:VipPorts$openstack:networking/floatingIp:FloatingIp::ocp4-vips-api-fip"
DRAIN = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$command:local:Command::ocp4-workers-worker-0-drain"
NETWORK = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:Network$openstack:networking/network:Network::ocp4-network-network"
GROUP = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$openstack:compute/serverGroup:ServerGroup::ocp4-control-plane-server-group"
SECURITY_GROUP = "urn:pulumi:dev::ocp::ocp:openstack:Cluster$ocp:openstack:SecurityGroups$openstack:networking/secGroup:SecGroup::ocp4-security-master"
OURS, THEIRS = "openshiftClusterID=ocp4-x7k2p", "openshiftClusterID=ocp4-q9z3m"
# Nova returns this many servers a page when the listing asks for no limit (osapi_max_limit).
PAGE = 3


@dataclass
class Cloud:
    """A project as the `openstack` CLI shows it: rows per kind, each with its ID, name, tags and
    what else a filter reads."""

    rows: dict[tuple[str, ...], list[dict]] = field(default_factory=dict)
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(self, *args: str):
        self.asked.append(args)
        words = list(args)
        microversion = 2.1
        if words[:1] == ["--os-compute-api-version"]:
            microversion = float(words[1])
            words = words[2:]
        verb = next(i for i, word in enumerate(words) if word in ("list", "show"))
        kind, rest = tuple(words[:verb]), words[verb + 1:]
        rows = self.rows.get(kind, [])
        if words[verb] == "show":
            id_, options = rest[0], rest[1:]
            assert options == ["-f", "json"], args
            row = next((row for row in rows if row["ID"] == id_), None)
            if row is None:
                raise NotFound(f"`openstack {shlex.join(args)}` failed: No {kind[-1].title()} found for {id_}")
            return {key.lower(): value for key, value in row.items()}
        pairs = [word for word in rest if word != "--long"]
        options = dict(zip(pairs[::2], pairs[1::2]))
        assert options.pop("-f") == "json", args
        found = list(rows)
        for option, value in options.items():
            if option == "--name":
                found = [row for row in found if (re.search(value, row["Name"]) if kind == ("server",) else row["Name"] == value)]
            elif option == "--tags":
                assert kind != ("server",) or microversion >= 2.26, "server list --tags needs compute API 2.26"
                found = [row for row in found if value in row.get("Tags", [])]
            elif option == "--network":
                found = [row for row in found if row.get("network") == value]
            elif option == "--property":
                key, _, wanted = value.partition("=")
                found = [row for row in found if row.get("properties", {}).get(key) == wanted]
            else:
                raise AssertionError(f"the cloud stand-in does not know {option} ({args})")
        if kind == ("server",) and not options:
            found = found[:PAGE]  # one page: the CLI's listing without filters
        shown = []
        for row in found:
            visible = {key: value for key, value in row.items() if key[0].isupper()}
            if kind != ("security", "group") and "--long" not in args:
                visible.pop("Tags", None)  # Neutron and Glance listings show tags with --long only
            shown.append(visible)
        return shown


def export(*operations: tuple[str, str, str, dict]) -> dict:
    return {"deployment": {"pending_operations": [{"type": kind, "resource": {"urn": urn, "type": type_, "inputs": inputs}} for kind, urn, type_, inputs in operations]}}


def test_what_an_interrupted_create_made_is_deleted_servers_first():
    interrupted = pending_creates(export(
        ("creating", SERVER, "openstack:compute/instance:Instance", {"name": "ocp4-x7k2p-master-1", "tags": [OURS]}),
        ("creating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-0", "networkId": "n-1", "tags": [OURS]}),
        ("creating", DRAIN, "command:local:Command", {"delete": "oc adm drain"}),
        ("updating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-1"}),
    ))
    assert [item.name for item in interrupted] == ["ocp4-control-plane-master-1", "ocp4-workers-worker-0-port", "ocp4-workers-worker-0-drain"]
    cloud = Cloud({
        ("server",): [{"ID": "s-1", "Name": "ocp4-x7k2p-master-1", "Tags": [OURS]}, {"ID": "s-2", "Name": "ocp4-x7k2p-master-10", "Tags": [OURS]}],
        ("port",): [{"ID": "p-9", "Name": "other", "network": "n-1", "Tags": []}],
    })
    found = verdicts(interrupted, cloud)
    assert [verdict.action for verdict in found] == ["delete", "clear", "clear"]
    assert delete_commands(found) == [["server", "delete", "--wait", "s-1"]]


def test_every_copy_an_interrupted_create_made_goes_ports_after_servers():
    interrupted = pending_creates(export(
        ("creating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-0", "networkId": "n-1", "tags": [OURS]}),
        ("creating", SERVER, "openstack:compute/instance:Instance", {"name": "ocp4-x7k2p-master-1", "tags": [OURS]}),
    ))
    cloud = Cloud({
        ("server",): [{"ID": "s-1", "Name": "ocp4-x7k2p-master-1", "Tags": [OURS]}, {"ID": "s-3", "Name": "ocp4-x7k2p-master-1", "Tags": [OURS]}],
        # The provider tags a port in a second call: a run killed in between leaves it untagged.
        ("port",): [{"ID": "p-1", "Name": "ocp4-x7k2p-worker-0", "network": "n-1", "Tags": []}],
    })
    found = verdicts(interrupted, cloud)
    assert delete_commands(found) == [["server", "delete", "--wait", "s-1"], ["server", "delete", "--wait", "s-3"], ["port", "delete", "p-1"]]


def test_another_stacks_resources_of_the_same_name_are_never_taken():
    """A copied stack, or one made from the same installer configs, names its resources alike:
    only the network the state holds, the infra ID's tag, or a server group's policy tell them apart."""
    interrupted = pending_creates(export(
        ("creating", SERVER, "openstack:compute/instance:Instance", {"name": "ocp4-x7k2p-master-1", "tags": [OURS]}),
        ("creating", PORT, "openstack:networking/port:Port", {"name": "ocp4-x7k2p-worker-0", "networkId": "n-ours", "tags": [OURS]}),
        ("creating", NETWORK, "openstack:networking/network:Network", {"name": "ocp4-x7k2p-openshift", "tags": [OURS, "ocp4-x7k2p-primaryClusterNetwork"]}),
        ("creating", GROUP, "openstack:compute/serverGroup:ServerGroup", {"name": "ocp4-x7k2p-master", "policies": ["soft-anti-affinity"]}),
        ("creating", SECURITY_GROUP, "openstack:networking/secGroup:SecGroup", {"name": "ocp4-x7k2p-master", "description": "OpenShift masters", "tags": [OURS]}),
    ))
    cloud = Cloud({
        ("server",): [{"ID": "s-theirs", "Name": "ocp4-x7k2p-master-1", "Tags": [THEIRS]}],
        ("port",): [
            {"ID": "p-theirs", "Name": "ocp4-x7k2p-worker-0", "network": "n-theirs", "Tags": []},
            {"ID": "p-tagged-theirs", "Name": "ocp4-x7k2p-worker-0", "network": "n-ours", "Tags": [THEIRS]},
        ],
        ("network",): [{"ID": "n-theirs", "Name": "ocp4-x7k2p-openshift", "Tags": [THEIRS]}],
        ("server", "group"): [{"ID": "g-theirs", "Name": "ocp4-x7k2p-master", "Policies": ["anti-affinity"]}],
        ("security", "group"): [
            {"ID": "sg-theirs", "Name": "ocp4-x7k2p-master", "Description": "OpenShift masters", "Tags": [THEIRS]},
            {"ID": "sg-users", "Name": "ocp4-x7k2p-master", "Description": "made by hand", "Tags": []},
        ],
    })
    found = verdicts(interrupted, cloud)
    assert [verdict.ids for verdict in found] == [(), (), (), (), ()]
    assert delete_commands(found) == []
    # The same cloud once our own copies are there too: only those.
    cloud.rows[("server",)].append({"ID": "s-ours", "Name": "ocp4-x7k2p-master-1", "Tags": [OURS]})
    cloud.rows[("port",)].append({"ID": "p-ours", "Name": "ocp4-x7k2p-worker-0", "network": "n-ours", "Tags": [OURS]})
    cloud.rows[("network",)].append({"ID": "n-ours", "Name": "ocp4-x7k2p-openshift", "Tags": []})
    cloud.rows[("server", "group")].append({"ID": "g-ours", "Name": "ocp4-x7k2p-master", "Policy": "soft-anti-affinity"})
    cloud.rows[("security", "group")].append({"ID": "sg-ours", "Name": "ocp4-x7k2p-master", "Description": "OpenShift masters", "Tags": []})
    assert [verdict.ids for verdict in verdicts(interrupted, cloud)] == [("s-ours",), ("p-ours",), ("n-ours",), ("g-ours",), ("sg-ours",)]


def test_a_floating_ip_made_for_a_port_is_found_by_the_port_before_it_is_tagged():
    """The provider tags a floating IP after its create: a run killed in between leaves it untagged on its port."""
    asked = []

    def openstack(*args: str) -> list[dict]:
        asked.append(args)
        return [{"ID": "f-1", "Port": "p-api", "Description": "", "Tags": []}] if args[-2:] == ("--port", "p-api") else []

    interrupted = pending_creates(export(("creating", FIP, "openstack:networking/floatingIp:FloatingIp", {"portId": "p-api", "tags": [OURS]})))
    found = verdicts(interrupted, openstack)
    assert asked == [("floating", "ip", "list", "--long", "-f", "json", "--port", "p-api")]
    assert delete_commands(found) == [["floating", "ip", "delete", "f-1"]]


def _failed(urn: str, id_: str, port: str, **more) -> dict:
    return {"urn": urn, "type": "openstack:compute/instance:Instance", "id": id_, "inputs": {"networks": [{"port": port}]}, **more}


def test_servers_whose_create_failed_are_asked_for_by_their_ids():
    """Nova leaves a server it accepted over a quota in ERROR; the state keeps it with its create's
    error. A listing pages and shows one cloud: each is asked for by the ID the state holds."""
    worker = SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-0")
    gone = SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-1")
    later = SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-2")
    exported = {"deployment": {"resources": [
        _failed(SERVER, "s-1", "p-1", initErrors=["unexpected state 'ERROR'"], protect=True),
        _failed(worker, "s-2", "p-2", initErrors=["timeout"]),
        _failed(gone, "s-3", "p-3", initErrors=["unexpected state 'ERROR'"]),
        _failed(later, "s-9", "p-9", initErrors=["timeout"]),
        {"urn": PORT, "type": "openstack:networking/port:Port", "id": "p-1", "initErrors": ["timeout"]},
        {"urn": DRAIN, "type": "openstack:compute/instance:Instance", "id": "s-4"},
    ]}}
    failed = failed_servers(exported)
    assert list(failed) == [SERVER, worker, gone, later]
    # s-9 came up after all, on the listing's second page; s-3 is gone, its port still here.
    others = [{"ID": f"s-other-{n}", "Name": f"app-{n}", "Status": "ACTIVE"} for n in range(PAGE)]
    cloud = Cloud({
        ("server",): [*others, {"ID": "s-1", "Name": "m1", "Status": "ERROR"}, {"ID": "s-2", "Name": "w0", "Status": "ACTIVE"}, {"ID": "s-9", "Name": "w2", "Status": "ACTIVE"}],
        ("port",): [{"ID": f"p-{n}", "Name": f"port-{n}"} for n in (1, 2, 3, 9)],
    })
    assert server_states(cloud, failed) == {SERVER: "ERROR", worker: "ACTIVE", gone: "gone", later: "ACTIVE"}
    # An update mends s-2 and s-9; s-1 and s-3 are replaced.
    assert in_error(cloud, failed) == [SERVER, gone]
    assert [args for args in cloud.asked if "list" in args] == []


def test_a_cloud_that_holds_neither_the_server_nor_its_port_is_not_the_stacks():
    """OS_CLOUD naming another cloud: 404 for everything. Nothing is tainted or unprotected."""
    failed = failed_servers({"deployment": {"resources": [_failed(SERVER, "s-1", "p-1", initErrors=["timeout"], protect=True)]}})
    elsewhere = Cloud({("server",): [{"ID": "s-x", "Name": "ocp4-x7k2p-master-1", "Status": "ERROR"}]})
    assert server_states(elsewhere, failed) == {SERVER: "not found, nor its port"}
    assert in_error(elsewhere, failed) == []


def test_the_clis_404_is_told_from_its_other_failures(tmp_path, monkeypatch):
    """openstacksdk's find says `No Server found for <id>` (exit 1); an auth failure is no 404."""
    cli = tmp_path / "openstack"
    cli.write_text(
        '#!/bin/sh\ncase "$*" in\n'
        '  "server show s-1 -f json") echo "No Server found for s-1" >&2; exit 1;;\n'
        '  "port show p-1 -f json") echo \'{"id": "p-1", "status": "DOWN"}\';;\n'
        '  *) echo "The request you have made requires authentication. (HTTP 401)" >&2; exit 1;;\nesac\n'
    )
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    openstack = openstack_cli("openstack")
    with pytest.raises(NotFound):
        openstack("server", "show", "s-1", "-f", "json")
    failed = failed_servers({"deployment": {"resources": [_failed(SERVER, "s-1", "p-1", initErrors=["timeout"])]}})
    assert server_states(openstack, failed) == {SERVER: "gone"}
    with pytest.raises(Exception) as error:
        openstack("server", "show", "s-2", "-f", "json")
    assert type(error.value).__name__ == "RecoveryError" and "HTTP 401" in str(error.value)


FAKE_OPENSTACK = """#!/usr/bin/env python3
import json, sys
cloud = json.load(open(%r))
args = sys.argv[1:]
if args[:2] == ["server", "list"]:  # one page of a project that holds more
    print(json.dumps([{"ID": id_, "Name": row["name"], "Status": row["status"]} for id_, row in list(cloud["servers"].items())[:1]]))
elif args[1:2] == ["show"] and args[0] in ("server", "port"):
    row = cloud[args[0] + "s"].get(args[2])
    if row is None:
        sys.exit(print("No %%s found for %%s" %% (args[0].title(), args[2]), file=sys.stderr) or 1)
    print(json.dumps({"id": args[2], **row}))
else:
    sys.exit(print("The request you have made requires authentication. (HTTP 401)", file=sys.stderr) or 1)
"""


def test_recover_taints_only_what_the_cloud_says_by_id_is_broken(tmp_path):
    """`python -m tools.recover --yes` as a user runs it: a failed server past the listing's first page
    that came up is left alone, and one the cloud does not know (nor its port) is neither unprotected nor tainted."""
    later = SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-2")
    elsewhere = SERVER.replace("ocp4-control-plane-master-1", "ocp4-control-plane-master-2")
    export = {"deployment": {"resources": [
        _failed(SERVER, "s-1", "p-1", initErrors=["unexpected state 'ERROR'"], protect=True),
        _failed(later, "s-9", "p-9", initErrors=["timeout"]),
        _failed(elsewhere, "s-x", "p-x", initErrors=["timeout"], protect=True),
        {"urn": POINTER.replace("-master-1", "-master-2"), "type": "command:local:Command", "id": "c-2"},
        {"urn": POINTER, "type": "command:local:Command", "id": "c-1"},
    ]}}
    (tmp_path / "export.json").write_text(json.dumps(export))
    (tmp_path / "cloud.json").write_text(json.dumps({
        "servers": {"s-1": {"name": "ocp4-x7k2p-master-1", "status": "ERROR"}, "s-9": {"name": "ocp4-x7k2p-worker-2", "status": "ACTIVE"}},
        "ports": {"p-1": {"status": "DOWN"}, "p-9": {"status": "ACTIVE"}},
    }))
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  openstack:cloud: openstack\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "openstack").write_text(FAKE_OPENSTACK % str(tmp_path / "cloud.json"))
    (bin_dir / "pulumi").write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "stack export" ]; then cat {tmp_path}/export.json; else echo "$*" >> {tmp_path}/pulumi.log; fi\n'
    )
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    environment = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [sys.executable, "-m", "tools.recover", "--stack", "dev", "--yes", "--cwd", str(tmp_path)],
        cwd=ROOT, env=environment, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ocp4-control-plane-master-1" in result.stdout and result.stdout.count("in ERROR in the cloud: taint it (protected") == 1
    assert "ocp4-workers-worker-2                              ACTIVE in the cloud: left as it is" in result.stdout
    assert "the cloud answers 404 for s-x and for its port: is cloud 'openstack' the stack's" in result.stdout
    assert (tmp_path / "pulumi.log").read_text().splitlines() == [
        f"state unprotect --yes {SERVER} --stack dev --non-interactive",
        # Its pointer too: the server made again reads the cluster's pointer (a rotated MCS CA) anew.
        f"state taint --yes {SERVER} {POINTER} --stack dev --non-interactive",
    ]


def _pointer(slot: str) -> dict:
    return {"urn": POINTER.replace("-master-1", f"-{slot}").replace("MasterPointers", "WorkerPointers" if "worker" in slot else "MasterPointers"),
            "type": "command:local:Command", "id": f"c-{slot}"}


def test_the_pointer_of_a_server_the_state_lost_is_found():
    """`pulumi refresh` drops a server the cloud no longer has and keeps its pointer command, whose
    output the next `pulumi up` would boot the server made again from: those commands, and no other."""
    held = {"urn": SERVER.replace("master-1", "master-0"), "type": "openstack:compute/instance:Instance", "id": "s-0"}
    worker = {"urn": SERVER.replace("ocp4-control-plane-master-1", "ocp4-workers-worker-0"), "type": "openstack:compute/instance:Instance", "id": "s-4"}
    exported = {"deployment": {"resources": [
        held, worker, _pointer("master-0"), _pointer("master-1"), _pointer("master-10"), _pointer("worker-0"), _pointer("worker-1"),
        {"urn": DRAIN.replace("worker-0", "worker-1"), "type": "command:local:Command", "id": "d-1"},
    ]}}
    assert lost_servers_pointers(exported) == [_pointer(slot)["urn"] for slot in ("master-1", "master-10", "worker-1")]
    # Every server there: nothing lost.
    assert lost_servers_pointers({"deployment": {"resources": [held, _pointer("master-0")]}}) == []


def test_recover_taints_the_pointer_of_a_server_the_state_lost_without_asking_the_cloud(tmp_path):
    """As a user runs it after such a refresh: the lost master's pointer command is tainted, so the next
    `pulumi up` reads the pointer the cluster serves now; the cloud is not asked."""
    exported = {"deployment": {"resources": [
        {"urn": SERVER.replace("master-1", "master-0"), "type": "openstack:compute/instance:Instance", "id": "s-0"},
        _pointer("master-0"), _pointer("master-1"),
    ]}}
    (tmp_path / "export.json").write_text(json.dumps(exported))
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  openstack:cloud: openstack\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "openstack").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/openstack.log\nexit 1\n')
    (bin_dir / "pulumi").write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "stack export" ]; then cat {tmp_path}/export.json; else echo "$*" >> {tmp_path}/pulumi.log; fi\n'
    )
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    environment = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, "-m", "tools.recover", "--stack", "dev", "--cwd", str(tmp_path)]
    looked = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)
    assert looked.returncode == 0, looked.stdout + looked.stderr
    assert "ocp4-master-pointers-master-1" in looked.stdout and "its server is gone from the state: taint it" in looked.stdout
    assert "master-0" not in looked.stdout and not (tmp_path / "pulumi.log").exists()
    done = subprocess.run([*command, "--yes"], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "pulumi.log").read_text().splitlines() == [f"state taint --yes {POINTER} --stack dev --non-interactive"]
    assert not (tmp_path / "openstack.log").exists()


def test_nothing_interrupted_nothing_to_do():
    assert pending_creates({"deployment": {"resources": []}}) == []


class _Terminal(io.StringIO):
    """A user at a terminal, who types the text it is made with."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def locked(monkeypatch, tmp_path):
    """`python -m tools.recover --stack kvm --yes --cancel` in this process, on a stack with no interrupted create
    whose file backend (tmp_path/state) holds another host's lock written 7 h ago: older than any run takes."""
    from ocp.locks import STALE
    from tests.ocp.test_driver import OUTPUTS, FakeStack
    from tests.ocp.test_locks import write_lock
    from tools import recover

    stack = FakeStack([], OUTPUTS, backend=f"file://{tmp_path / 'state'}")
    monkeypatch.setattr(recover.auto, "select_stack", lambda **_: stack)
    monkeypatch.setattr(recover, "pulumi", lambda *args, cwd: subprocess.CompletedProcess(args, 0, stdout='{"deployment": {}}', stderr=""))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal: CI
    lock = write_lock(tmp_path / "state", 4242, datetime.now(UTC) - STALE - timedelta(hours=1), host="ci-runner-7")

    def run(*more: str) -> int:
        return recover.main(["--stack", "kvm", "--yes", "--cancel", "--cwd", str(tmp_path), *more])

    return run, lock


def test_cancel_removes_another_hosts_stale_lock_only_once_the_user_confirms_its_run_is_gone(locked, capsys):
    """Age alone does not tell that a run on another host is dead (this machine cannot ask that host): without a
    terminal to ask, --cancel stops with nothing done and says how to confirm; naming that lock removes it."""
    run, lock = locked
    assert run() == 1 and lock.exists()
    said = capsys.readouterr().err.splitlines()
    assert said[0] == (
        "recover: --cancel removes another host's lock only once you confirm that its run is gone (this machine cannot ask that host), "
        "so nothing was done:"
    )
    assert said[1].startswith("  alice@ci-runner-7, pid 4242, since ") and said[1].endswith(f"most likely left by a killed run (lock {lock})")
    assert said[-1] == f"  --stale-lock {lock}"
    # A flag naming another lock confirms nothing.
    assert run("--stale-lock", f"{lock.parent}/other.json") == 1 and lock.exists()
    capsys.readouterr()
    assert run(*said[-1].split()) == 0 and not lock.exists()
    assert "recover: removed the lock of alice@ci-runner-7 (pid 4242, on another host, confirmed gone): " in capsys.readouterr().out


@pytest.mark.parametrize(("typed", "removed"), [("yes\n", True), ("y\n", False), ("", False)])
def test_cancel_asks_at_a_terminal_and_only_yes_removes_another_hosts_stale_lock(locked, monkeypatch, capsys, typed, removed):
    run, lock = locked
    monkeypatch.setattr(sys, "stdin", _Terminal(typed))
    assert run() == (0 if removed else 1) and lock.exists() is not removed
    asked = capsys.readouterr().out
    assert "Have you checked on ci-runner-7 that no run of stack kvm is alive (`ps -p 4242` there)? Type yes to remove it: " in asked


def test_stale_lock_goes_with_cancel(locked, capsys):
    from tools import recover

    with pytest.raises(SystemExit) as stopped:
        recover.main(["--stack", "kvm", "--yes", "--stale-lock", "x.json"])
    assert stopped.value.code == 2 and "--stale-lock goes with --cancel" in capsys.readouterr().err
