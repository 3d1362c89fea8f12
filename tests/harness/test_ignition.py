"""harness.ignition: the real Ignition 2.14 run on a config, into a scratch root."""

from __future__ import annotations

import pytest

from harness import ignition
from ignition import assembly
from ignition.assembly import Additions, File, Unit

needs_ignition = pytest.mark.skipif(ignition.unavailable() is not None, reason=str(ignition.unavailable()))


def test_a_missing_binary_is_a_reason_naming_it(monkeypatch, tmp_path):
    monkeypatch.setattr(ignition, "BINARY", tmp_path / "nowhere/ignition")
    assert ignition.unavailable() == f"the real Ignition is not installed ({tmp_path}/nowhere/ignition: Debian package 'ignition')"
    with pytest.raises(RuntimeError, match="not installed"):
        ignition.run({"ignition": {"version": "3.2.0"}}, tmp_path / "node")


@needs_ignition
def test_files_units_links_and_users_as_ignition_writes_them(tmp_path):
    additions = Additions(
        files=(File("/etc/secret.conf", b"key=value\n", 0o600), File("/usr/local/bin/run.sh", b"#!/bin/sh\n", 0o755)),
        units=(Unit("on.service", "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"), Unit("off.service", "[Service]\n", False)),
    )
    config = assembly.with_additions({"ignition": {"version": assembly.SPEC_VERSION}}, additions)
    config["storage"]["links"] = [{"path": "/etc/localtime", "target": "/usr/share/zoneinfo/UTC"}]
    config["passwd"] = {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA test"]}]}
    result = ignition.run(config, tmp_path / "node")
    assert result.ok, result.log
    assert result.files["/etc/secret.conf"] == ignition.Written(0o600, b"key=value\n", 0, 0)
    assert result.files["/usr/local/bin/run.sh"].mode == 0o755
    assert result.units["on.service"].startswith("[Service]") and result.enabled == {"on.service"} and result.disabled == {"off.service"}
    assert result.links == {"/etc/localtime": "/usr/share/zoneinfo/UTC"}
    assert result.users["core"].startswith("core:x:1000:")
    assert any(path.startswith("/home/core/.ssh/authorized_keys") and b"ssh-ed25519 AAAA test" in f.contents for path, f in result.files.items())
    assert result.fetched["storage"]["files"][0]["path"] == "/etc/secret.conf"  # the config fetch resolved
    # Everything under the scratch space: Ignition's cache and state, its temporary files.
    assert {p.name for p in (tmp_path / "node").iterdir()} == {"user.ign", "root", "run", "tmp", "bin"}


@needs_ignition
def test_spec_versions_up_to_3_3_and_what_it_asks_a_server_for(tmp_path):
    # What ignition.assembly.SPEC_VERSION's note says of Debian's 2.14.
    with ignition.ConfigServer({"/config/worker": b'{"ignition":{"version":"3.3.0"}}'}) as server:
        merge = {"merge": [{"source": f"{server.url}/config/worker"}]}
        result = ignition.run({"ignition": {"version": assembly.SPEC_VERSION, "config": merge}}, tmp_path / "node")
    assert result.ok, result.log
    assert server.requests[0][1]["Accept"] == "application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1"
    result = ignition.run({"ignition": {"version": "3.4.0"}}, tmp_path / "newer")
    assert not result.ok and result.stage == "fetch" and result.files == {}
    assert result.failure() == "CRITICAL : Ignition failed: unsupported config version", result.log


@needs_ignition
def test_a_fetch_that_cannot_finish_is_stopped(tmp_path):
    with ignition.ConfigServer({}) as server:
        port = server.port  # closed once the block ends: the connection is refused, and Ignition retries
    config = {"ignition": {"version": "3.2.0", "config": {"merge": [{"source": f"http://127.0.0.1:{port}/config/worker"}]}}}
    result = ignition.run(config, tmp_path / "node", timeout=3)
    assert not result.ok and "connection refused" in result.log
    assert result.failure() == "CRITICAL : (harness) Ignition still running after 3 s, stopped"
