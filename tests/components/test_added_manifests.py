"""Manifests the program adds to the installer's (ocp:ntpServers' chrony MachineConfigs,
ocp:installer.extraManifests) reach the bootstrap's config, which applies them: with the real
installer through the program's own run script (standalone, platform none) and with the fake
one the offline plan uses for integrated stacks."""

from __future__ import annotations

import json

import pytest
import yaml

from cluster.config import load_config
from cluster.dataurl import file_contents
from tests.conftest import ROOT, ignition_validate, run, stack_config, with_section
from tools import real_installer, toolchain
from tools.plan import node_outputs

SAMPLES = ROOT / "samples" / "manifests"
SERVERS = ["10.20.0.1", "ntp.example.com"]


def _config(stack: str) -> dict[str, str]:
    return with_section({**stack_config(stack), "ocp:ntpServers": json.dumps(SERVERS)}, "installer", extraManifests=str(SAMPLES))


def _bootstrap_files(stack: str) -> dict[str, bytes]:
    program_run = run(_config(stack), stack=stack)
    bootstrap = next(node for node in node_outputs(program_run) if node.hostname.endswith("-bootstrap"))
    return {entry["path"]: file_contents(entry) for entry in bootstrap.ignition["storage"]["files"]}


@pytest.mark.parametrize("stack", ["standalone", "dev"])
def test_the_bootstrap_applies_the_chrony_machine_configs_and_the_extra_manifests(stack):
    if stack == "standalone" and real_installer.binary() is None:
        pytest.skip(toolchain.missing("openshift-install"))
    files = _bootstrap_files(stack)
    added = {path.removeprefix("/opt/openshift/openshift/"): data for path, data in files.items() if path.startswith("/opt/openshift/openshift/")}
    for sample in SAMPLES.glob("*.yaml"):
        assert added.get(sample.name) == sample.read_bytes(), sample.name  # copied as they are
    chrony = {
        document["metadata"]["name"]: document
        for document in (yaml.safe_load(data) for data in added.values())
        if isinstance(document, dict) and document.get("kind") == "MachineConfig" and "chrony" in document["metadata"]["name"]
    }
    assert sorted(chrony) == ["99-master-chrony", "99-worker-chrony"]
    for role in ("master", "worker"):
        labels = chrony[f"99-{role}-chrony"]["metadata"]["labels"]
        assert labels == {"machineconfiguration.openshift.io/role": role}
        (entry,) = chrony[f"99-{role}-chrony"]["spec"]["config"]["storage"]["files"]
        assert (entry["path"], entry["mode"], entry["overwrite"]) == ("/etc/chrony.conf", 0o644, True)
        servers = [line.split()[1] for line in file_contents(entry).decode().splitlines() if line.startswith("server ")]
        assert servers == SERVERS
    # The bootstrap itself keeps time with the same servers.
    assert files["/etc/chrony.conf"] == file_contents(chrony["99-master-chrony"]["spec"]["config"]["storage"]["files"][0])


def test_without_the_keys_the_bootstrap_gets_nothing_more():
    program_run = run(stack_config("dev"))
    bootstrap = next(node for node in node_outputs(program_run) if node.hostname.endswith("-bootstrap"))
    paths = {entry["path"] for entry in bootstrap.ignition["storage"]["files"]}
    assert "/etc/chrony.conf" not in paths and not [p for p in paths if "chrony" in p or p.endswith(tuple(s.name for s in SAMPLES.glob("*")))]


@pytest.mark.parametrize("role", ["master", "worker"])
def test_the_chrony_machine_configs_are_ignition_the_real_validator_takes(role, tmp_path):
    from ignition.chrony import machine_configs

    documents = [yaml.safe_load(data) for data in machine_configs(load_config(_config("dev"))).values()]
    (document,) = [d for d in documents if d["metadata"]["name"] == f"99-{role}-chrony"]
    assert document["apiVersion"] == "machineconfiguration.openshift.io/v1" and document["kind"] == "MachineConfig"
    result = ignition_validate(json.dumps(document["spec"]["config"]), tmp_path)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr


def test_a_manifest_named_as_one_of_the_installers_stops_the_run_under_the_fake_too(tmp_path):
    """As the run script refuses it with the real installer (tests/cluster/test_manifests.py)."""
    from tests.conftest import run_recording

    name = "99_openshift-machineconfig_99-worker-ssh.yaml"
    (tmp_path / name).write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    _, error = run_recording(with_section(stack_config("dev"), "installer", extraManifests=str(tmp_path)))
    assert error is not None and f"{name} would replace the installer's own openshift/{name}" in str(error)
