"""Every node config of the offline plan (`tools.plan`) through the real Ignition 2.14, for each
committed stack: a spec version, path or unit it refuses fails here, before any cloud. What the
plan says a node gets (`ignition.json`, `files/`) is what Ignition writes, modes and contents."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse

import pytest
from cryptography import x509

from harness import ignition, netns
from ignition import assembly
from ignition.assembly import Additions, File
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(ignition.unavailable() is not None, reason=str(ignition.unavailable()))
MCS_FILE = "/etc/mcs-machine-config-content.json"


@pytest.fixture(scope="module", params=["dev", "standalone", "kvm"])
def plan_dir(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "plan"
    done = subprocess.run([sys.executable, "-m", "tools.plan", "--stack", request.param, "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def mcs_standin(role: str) -> bytes:
    """For the pointers' merge: what no offline plan has, the cluster's machine config, in short."""
    config = assembly.with_additions({"ignition": {"version": "3.2.0"}}, Additions(files=(File(MCS_FILE, role.encode()),)))
    return assembly.dumps(config).encode()


def what_boots(node, server) -> tuple[str, bool]:
    """The config the node's Ignition runs, and whether it merges from the MCS: the user_data, its
    pointer's merge source moved to `server`; a shim's served config (Glance, the helper) is not in
    the plan, so its `ignition.json` (the shim and the served config merged) instead."""
    user_data = json.loads((node / "user_data").read_text())
    merges = user_data.get("ignition", {}).get("config", {}).get("merge", [])
    if any("verification" in merge for merge in merges):
        return (node / "ignition.json").read_text(), False
    for merge in merges:
        role = urllib.parse.urlsplit(merge["source"]).path.rsplit("/", 1)[1]
        merge["source"] = f"{server.url}/config/{role}"
    return json.dumps(user_data), bool(merges)


def test_every_node_config_is_written_by_the_real_ignition_as_the_plan_says(plan_dir, tmp_path):
    nodes = sorted((plan_dir / "nodes").iterdir())
    roles = [re.sub(r"^.*-(bootstrap|master-\d|worker-\d)$", r"\1", node.name) for node in nodes]
    assert roles == ["bootstrap", "master-0", "master-1", "master-2", "worker-0", "worker-1"], roles
    with ignition.ConfigServer({f"/config/{role}": mcs_standin(role) for role in ("master", "worker")}) as mcs:
        for node in nodes:
            text, merges = what_boots(node, mcs)
            result = ignition.run(text, tmp_path / node.name)
            assert result.ok, f"{node.name}: {result.failure()}\n{result.log[-3000:]}"
            planned = json.loads((node / "ignition.json").read_text())
            files = planned.get("storage", {}).get("files", [])
            assert files, node.name
            for entry in files:
                written = result.files.get(entry["path"])
                assert written is not None, f"{node.name}: {entry['path']} not written"
                wanted = (node / "files" / entry["path"].lstrip("/")).read_bytes()
                assert (written.mode, written.contents) == (entry.get("mode", 0o644), wanted), f"{node.name}: {entry['path']}"
            # Every file the plan shows is one Ignition wrote, with those bytes: no more, no fewer.
            shown = {"/" + path.relative_to(node / "files").as_posix(): path for path in (node / "files").rglob("*") if path.is_file()}
            for path, copy in shown.items():
                assert path in result.files and result.files[path].contents == copy.read_bytes(), f"{node.name}: {path}"
            # Not files of the config: the accounts useradd edits, keys and presets Ignition makes of passwd and units.
            accounts = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow", "/etc/.pwd.lock", "/home/", "/etc/systemd/system-preset/")
            written = {path for path in result.files if not path.startswith(accounts)}
            assert written - {ignition.RESULT_FILE, MCS_FILE} == set(shown), f"{node.name}: not in the plan"
            for unit in planned.get("systemd", {}).get("units", []):
                if unit.get("contents"):
                    assert result.units[unit["name"]] == unit["contents"], f"{node.name}: {unit['name']}"
                for dropin in unit.get("dropins", []):
                    path = f"/etc/systemd/system/{unit['name']}.d/{dropin['name']}"
                    assert result.files[path].contents.decode() == dropin.get("contents", ""), f"{node.name}: {path}"
                if unit.get("enabled") is True:
                    assert unit["name"] in result.enabled, f"{node.name}: {unit['name']} not enabled"
                if unit.get("mask") is True:
                    assert result.links.get(f"/etc/systemd/system/{unit['name']}") == "/dev/null", f"{node.name}: {unit['name']} not masked"
                    assert unit["name"] not in {*result.units, *result.enabled}, f"{node.name}: {unit['name']} written or enabled"
            if node.name.endswith("-bootstrap"):  # the installer's blanket CSR approver never runs (ignition/nodes.py)
                assert result.links.get("/etc/systemd/system/approve-csr.service") == "/dev/null", sorted(result.links)
            for user in planned.get("passwd", {}).get("users", []):
                assert user["name"] in result.users, f"{node.name}: user {user['name']}"
            if merges:  # the node's own content and the MCS's, merged as a node does
                assert result.files[MCS_FILE].contents == node.name.rsplit("-", 2)[-2].encode()
    assert {path for path, _ in mcs.requests} == {"/config/master", "/config/worker"}


def pointer_of(node) -> urllib.parse.SplitResult:
    (merge,) = json.loads((node / "user_data").read_text())["ignition"]["config"]["merge"]
    return urllib.parse.urlsplit(merge["source"])


@pytest.fixture
def node_network():
    """A network namespace for the booting node, as on its subnet: the API VIP on its loopback."""
    reason = netns.unavailable()
    if reason:
        pytest.skip(reason)
    with netns.lab("ign") as lab:
        yield lab, lab.namespace("node")
        # the lab's `leftovers` check: a server or Ignition left running in the namespace fails here
    assert lab.leftovers() == []


def test_masters_and_workers_fetch_their_pointer_from_the_config_server_the_installer_certified(plan_dir, node_network, tmp_path):
    """The pointers Nova gets, untouched: Ignition in a namespace holding the pointer's address fetches
    from a machine config server stand-in there, over TLS with the installer's own
    machine-config-server certificate and key (as the bootstrap's files hold them), trusting only the
    pointer's CA; platform none's pointer (plain HTTP on 22624) fetches the same way."""
    lab, node = node_network
    nodes = {re.sub(r"^.*-(bootstrap|master-\d|worker-\d)$", r"\1", node.name): node for node in (plan_dir / "nodes").iterdir()}
    tls = nodes["bootstrap"] / "files/opt/openshift/tls"
    address = {pointer_of(nodes[role]).hostname for role in ("master-0", "worker-0")}
    (vip,) = address
    lab.run(node, ["ip", "addr", "add", f"{vip}/32", "dev", "lo"], check=True)
    pointer = pointer_of(nodes["master-0"])
    certificate = (tls / "machine-config-server.crt", tls / "machine-config-server.key") if pointer.scheme == "https" else None
    if certificate and "FAKE" in x509.load_pem_x509_certificate(certificate[0].read_bytes()).subject.rfc4514_string():
        pytest.skip("the fake installer made these configs (the real one needs the local cloud for platform openstack): it signs nothing")
    documents = {f"/config/{role}": mcs_standin(role) for role in ("master", "worker")}
    with ignition.ConfigServer(documents, certificate=certificate, address=vip, port=pointer.port, netns=node) as mcs:
        for role in ("master-0", "worker-0"):
            result = ignition.run((nodes[role] / "user_data").read_text(), tmp_path / role, netns=node)
            assert result.ok, f"{role}: {result.failure()}\n{result.log[-3000:]}"
            assert result.files[MCS_FILE].contents == role.split("-")[0].encode()
    assert [path for path, _ in mcs.requests] == ["/config/master", "/config/worker"]


def test_a_config_server_the_pointers_ca_did_not_sign_is_refused(plan_dir, node_network, tmp_path):
    """What a node meets when the MCS's certificate is not one the pointer's CA signed (a rotated CA
    the pointer predates): Ignition refuses the server and writes nothing of the config."""
    lab, node = node_network
    master = next(node for node in (plan_dir / "nodes").iterdir() if node.name.endswith("-master-0"))
    pointer = pointer_of(master)
    if pointer.scheme != "https":
        pytest.skip("platform none's pointer is plain HTTP on 22624: no certificate to refuse")
    lab.run(node, ["ip", "addr", "add", f"{pointer.hostname}/32", "dev", "lo"], check=True)
    other = ignition.Authority.make("another-root-ca").issue(tmp_path / "tls", pointer.hostname)
    documents = {"/config/master": mcs_standin("master")}
    with ignition.ConfigServer(documents, certificate=other, address=pointer.hostname, port=pointer.port, netns=node):
        result = ignition.run(master.joinpath("user_data").read_text(), tmp_path / "master", netns=node, timeout=15)
    assert not result.ok and result.stage == "fetch" and MCS_FILE not in result.files
    assert "x509: certificate signed by unknown authority" in result.log, result.log[-3000:]
