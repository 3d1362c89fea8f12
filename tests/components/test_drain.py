"""Each worker's drain command in the plan: one per worker and none for masters, after its
server or domain (so the engine deletes it, running the drain, before the server goes), with
the node's name, the stack's `oc` and kubeconfig; what a scale-down and an edit of
`ocp:installer.oc` do to it against a deployed stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cluster.drain import drain_script
from cluster.installer import InstallerAssets, unbundle
from tests.conftest import ROOT, deploy, preview, stack_config, with_section
from tools.mock_run import ProgramRun, is_secret, unwrap

DRAIN = "command:local:Command"
MACHINES = {"openstack:compute/instance:Instance", "libvirt:index/domain:Domain"}


def drains(program_run: ProgramRun) -> dict[str, tuple[str, object]]:
    """Each drain command by name: the machine it depends on, and its resource."""
    by_urn = {r.urn: r for r in program_run.resources}
    result = {}
    for resource in program_run.of_type(DRAIN):
        if resource.name.endswith("-drain"):
            machines = [by_urn[urn] for urn in resource.options["dependsOn"] if by_urn[urn].type in MACHINES]
            assert len(machines) == 1, resource.name
            result[resource.name] = (machines[0], resource)
    return result


def kubeconfig_of(program_run: ProgramRun) -> str:
    installer = program_run.by_name("installer-run")
    return InstallerAssets.from_files(unbundle(installer.outputs["stdout"])).kubeconfig


@pytest.mark.parametrize("fixture", ["dev_run", "standalone_run"])
def test_every_worker_and_no_master_is_drained_before_its_server_goes(fixture, request):
    program_run = request.getfixturevalue(fixture)
    found = drains(program_run)
    assert sorted(found) == ["ocp4-workers-worker-0-drain", "ocp4-workers-worker-1-drain"]
    kubeconfig = kubeconfig_of(program_run)
    for name, (server, command) in found.items():
        assert server.name == name.removesuffix("-drain")
        inputs = unwrap(command.inputs)
        assert (inputs["create"], inputs["delete"], inputs["interpreter"]) == ("true", drain_script(), ["/bin/bash", "-c"])
        # The node's name is the server's (integrated: <infraID>-worker-N).
        assert inputs["environment"] == {"NODE": unwrap(server.inputs["name"]), "OC": "oc", "KUBECONFIG_DATA": kubeconfig}
        assert is_secret(command.inputs["environment"])  # the kubeconfig stays a secret in the state
        # Nothing ignored: an update (a new oc) runs only the create, and the delete uses the newest.
        assert command.options["ignoreChanges"] == []


def test_resources_json_shows_the_order(tmp_path):
    out = tmp_path / "plan"
    subprocess.run([sys.executable, "-m", "tools.plan", "--stack", "standalone", "--out", str(out)], cwd=ROOT, check=True, capture_output=True, env={**os.environ})
    resources = json.loads((out / "resources.json").read_text())
    drain = next(r for r in resources if r["name"] == "ocp4-workers-worker-1-drain")
    assert any(urn.endswith("::ocp4-workers-worker-1") for urn in drain["options"]["dependsOn"])
    assert drain["inputs"]["environment"] == "[secret]"


@pytest.mark.parametrize("stack", ["dev", "standalone"])
def test_a_scale_down_deletes_the_drain_with_its_server(stack):
    state = deploy(stack_config(stack), stack)
    result = preview(state, with_section(stack_config(stack), "workers", count=1), stack)
    assert result.error is None, result.error
    assert result.changes["ocp4-workers-worker-1-drain"].action == "delete"
    assert result.changes["ocp4-workers-worker-1"].action == "delete"
    assert result.changes["ocp4-workers-worker-0-drain"].action == "same"


def test_a_new_oc_updates_the_drains_in_place():
    state = deploy(stack_config("dev"))
    result = preview(state, with_section(stack_config("dev"), "installer", oc="/opt/ocp/oc"))
    assert result.error is None, result.error
    for index in (0, 1):
        change = result.changes[f"ocp4-workers-worker-{index}-drain"]
        assert (change.action, change.fields) == ("update", ("environment",))
