"""The program reads its config through pulumi.Config, as the engine hands it over (PULUMI_CONFIG),
the keys set and their secret flags from the stack file beside it."""

from __future__ import annotations

import json

import pulumi
import pytest

from cluster.stackfile import read_stack_file
from tests.conftest import stack_config
from tools.mock_run import ProgramRun, is_secret, run_program
from tools.plan import write_plan

PASSWORD = "s3cr3t-proxy-pw"
PROXY_URL = f"http://user:{PASSWORD}@proxy.example.com:3128"


def _in_clear(value, path: str = "") -> list[str]:
    if is_secret(value):
        return []
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _in_clear(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _in_clear(item, f"{path}[{index}]")]
    return [path] if isinstance(value, str) and PASSWORD in value else []


def _with_secret_proxy(stack: str) -> ProgramRun:
    config = stack_config(stack, proxy={"httpProxy": PROXY_URL, "httpsProxy": PROXY_URL, "noProxy": ["10.0.0.0/16"]})
    return run_program(config, stack=stack, secret_keys=("ocp:pullSecret", "ocp:proxy"))


@pytest.mark.parametrize("stack", ["dev", "standalone", "kvm"])
def test_a_proxy_set_as_a_secret_stays_secret_in_every_resource_and_the_plan(stack, tmp_path):
    run = _with_secret_proxy(stack)
    assert [f"{r.name}{p}" for r in run.resources for p in _in_clear(r.inputs)] == []
    # It does reach the resources that need it (the installer's run, the nodes), as secrets.
    carrying = {r.name for r in run.resources if PASSWORD in json.dumps(r.inputs)}
    assert "installer-run" in carrying
    write_plan(run, tmp_path)
    resources = json.loads((tmp_path / "resources.json").read_text())
    assert PASSWORD not in json.dumps(resources) and PASSWORD not in (tmp_path / "outputs.json").read_text()
    installer_run = next(r for r in resources if r["name"] == "installer-run")
    assert installer_run["inputs"]["environment"] == "[secret]"


def test_a_key_set_as_a_secret_that_would_reach_resources_in_clear_is_refused():
    config = stack_config("dev")
    with pytest.raises(pulumi.RunError) as refused:
        run_program(config, secret_keys=("ocp:pullSecret", "ocp:sshKey", "ocp:baseDomain"))
    message = str(refused.value)
    assert "ocp:sshKey: is set as a secret, but the program writes it into resources in clear" in message
    assert "ocp:baseDomain: is set as a secret" in message
    assert "only ocp:pullSecret and ocp:proxy stay secret" in message


def test_an_unknown_key_of_the_stack_file_is_refused_with_a_suggestion():
    config = {**stack_config("dev"), "ocp:clusterNmae": "ocp5"}
    with pytest.raises(pulumi.RunError) as refused:
        run_program(config)
    assert "ocp:clusterNmae: not a setting of this program: did you mean clusterName?" in str(refused.value)


def test_a_key_holding_an_encrypted_part_is_encrypted_as_a_whole(tmp_path):
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  ocp:proxy:\n    httpProxy:\n      secure: v1:abc\n  ocp:clusterName: ocp4\n")
    stack_file = read_stack_file(path)
    assert stack_file.encrypted_keys == ("ocp:proxy",) and stack_file.config == {"ocp:clusterName": "ocp4"}
