"""The offline plan command, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, ignition_validate


def plan(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=cwd, capture_output=True, text=True)


def test_plan_of_the_dev_stack(tmp_path):
    out = tmp_path / "plan"
    result = plan("--stack", "dev", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "ocp4-master-0" in result.stdout and "in all" in result.stdout
    resources = json.loads((out / "resources.json").read_text())
    assert {"type", "name", "parent", "inputs"} <= set(resources[0])
    text = (out / "resources.json").read_text()
    assert "[secret]" in text and "fake.example.com" not in text  # pull secret masked
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["kubeconfig"] == "[secret]" and outputs["apiVip"] == "10.0.0.5"
    nodes = {path.name for path in (out / "nodes").iterdir()}
    assert {"ocp4-bootstrap", "ocp4-master-0", "ocp4-worker-1"} <= nodes
    master = out / "nodes/ocp4-master-0"
    assert (master / "files/etc/hostname").read_text() == "ocp4-master-0\n"
    assert json.loads((master / "user_data").read_text())["ignition"]["version"] == "3.2.0"
    result = ignition_validate((out / "nodes/ocp4-bootstrap/ignition.json").read_text(), tmp_path)
    assert result.returncode == 0, result.stdout
    assert (out / "nodes/ocp4-bootstrap/files/usr/local/bin/bootkube.sh").is_file()


def test_plan_with_pre_generated_assets(tmp_path):
    result = plan("--stack", "dev", "--assets", "samples/installer/ocp4", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    infra_id = json.loads((ROOT / "samples/installer/ocp4/metadata.json").read_text())["infraID"]
    assert json.loads((tmp_path / "p/outputs.json").read_text())["infraId"] == infra_id


def test_invalid_config_exits_2_and_writes_nothing(tmp_path):
    stack = tmp_path / "Pulumi.broken.yaml"
    stack.write_text((ROOT / "Pulumi.dev.yaml").read_text().replace("count: 3", "count: 4"))
    out = tmp_path / "out"
    result = plan("--config-file", str(stack), "--out", str(out))
    assert result.returncode == 2
    assert "ocp:masters.count" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3
    assert not out.exists() and list(tmp_path.iterdir()) == [stack]


def test_unknown_stack_exits_2(tmp_path):
    result = plan("--stack", "nosuchstack", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "Pulumi.nosuchstack.yaml" in result.stderr
