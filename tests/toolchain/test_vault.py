"""Vault as `bash .ci/toolchain` builds it (toolchain/pins.toml, `vault`): the pinned module, against the
api and sdk versions pinned beside it, with Vault's own `minimal` tag, and a dev server that answers."""

from __future__ import annotations

import subprocess

import pytest

from harness import vault
from tests.toolchain.test_built import PINS, sourced
from tools import toolchain

PIN = PINS["vault"]


@pytest.fixture(scope="module")
def built():
    path = toolchain.binary("vault")
    if path is None:
        pytest.skip(toolchain.missing("vault"))
    return path


def test_vault_is_the_pinned_version_built_minimal_against_the_pinned_api_and_sdk(built):
    result = sourced("vault version && command -v vault")
    assert result.returncode == 0, result.stderr
    version, where = result.stdout.splitlines()
    assert version.startswith(f"Vault {PIN.version}, built "), version
    assert where == str(toolchain.BIN / "vault")
    info = subprocess.run(["go", "version", "-m", str(built)], capture_output=True, text=True, check=True).stdout
    fields = [line.split() for line in info.splitlines()]
    modules = {row[1]: row[2] for row in fields if row[:1] in (["mod"], ["dep"])}
    assert modules[PIN.module] == PIN.version
    # api and sdk as our go.mod replaces them (the binary names each replacement after its module).
    replaced = {fields[i - 1][1]: f"{row[1]} {row[2]}" for i, row in enumerate(fields) if row[:1] == ["=>"] and "hashicorp/vault/" in fields[i - 1][1]}
    assert replaced == {line.split(" => ")[0]: line.split(" => ")[1] for line in PIN.replace if "hashicorp/vault/" in line}
    assert ["build", f"-tags={','.join(PIN.tags)}"] in fields
    # `minimal` links none of the storage backends of the full build (a module each, here none).
    assert not [path for path in modules if "gocql" in path or "go-mssqldb" in path or "aerospike" in path]


def test_the_dev_server_starts_on_loopback_and_stops_by_its_pid(built, tmp_path):
    with vault.running(tmp_path) as server:
        process = server.process
        assert server.addr.startswith("http://127.0.0.1:")
        assert server.call("GET", "sys/health")[0] == 200
    assert process.poll() is not None
