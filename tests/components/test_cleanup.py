"""Destroy cleanup: the command's script (it finds the program's Python; shellcheck), and the
command's place in the plan (dependencies, never run by `pulumi up`). What it removes:
tests/cluster/test_cleanup.py (its rules) and tests/localcloud/test_cleanup.py (for real)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from cluster.cleanup import cleanup_script, mark_script
from components.installer import RUN_ONCE
from tests.conftest import ROOT, deploy, preview, stack_config, with_section
from tools.mock_run import unwrap

CLEANUP = "ocp4-cleanup-on-destroy"
MARK = "ocp4-cleanup-mark-on-destroy"


def test_without_a_python_that_has_openstacksdk_it_says_so_and_lets_the_destroy_go_on(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for tool in ("bash", "pwd"):
        (empty / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(empty), "OS_CLOUD": "openstack", "INFRA_ID": "ocp4-x7k2p", "OCP_CLEANUP_PYTHON": str(tmp_path / "no-python")}
    result = subprocess.run(["/bin/bash", "-c", cleanup_script()], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "cleanup: no Python with openstacksdk and this program in" in result.stderr and "ocp4-x7k2p" in result.stderr


def test_the_script_runs_the_programs_cleanup_with_the_programs_venv(tmp_path):
    """From the project's directory (where the engine runs commands), venv/bin/python with openstacksdk
    runs cluster.cleanup_run; an unreachable cloud is a failure that names it (the destroy stops, to be run again)."""
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text("clouds:\n  nowhere:\n    auth:\n      auth_url: http://127.0.0.1:9/v3\n      username: u\n      password: p\n      project_name: p\n")
    env = {"PATH": "/usr/bin:/bin", "OS_CLOUD": "nowhere", "INFRA_ID": "ocp4-x7k2p", "OS_CLIENT_CONFIG_FILE": str(clouds)}
    result = subprocess.run(["/bin/bash", "-c", cleanup_script()], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cleanup: could not reach the cloud nowhere" in result.stderr


def test_shellcheck(tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck')")
    script = tmp_path / "cleanup.sh"
    script.write_text("#!/usr/bin/env bash\n" + cleanup_script())
    result = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


# The command under mocks: its dependencies, and that `pulumi up` never runs it.
BLOCKED = {
    "ocp4-network-network",
    "ocp4-network-subnet",
    "ocp4-network-router",
    "ocp4-network-router-interface",
    "ocp4-security-master",
    "ocp4-security-worker",
    "ocp4-security-ingress",
}


def test_the_cleanup_runs_after_the_nodes_and_before_the_network_and_groups_go(dev_run):
    cleanup = dev_run.by_name(CLEANUP)
    by_urn = {r.urn: r for r in dev_run.resources}
    depends = {by_urn[urn].name for urn in cleanup.options["dependsOn"]}
    assert BLOCKED <= depends
    # Nothing a node or a VIP is: the engine deletes what depends on a resource before it.
    assert not [by_urn[urn].type for urn in cleanup.options["dependsOn"] if by_urn[urn].type.endswith(("Instance", "Port", "FloatingIp"))]
    # Every master and worker depends on it, so they are gone when it runs: no cloud provider
    # or Machine API left to re-create what it deletes, and PVC volumes are detached. So does
    # the bootstrap's Glance image: the script deletes only what images of it are left.
    nodes = {r.name for r in dev_run.of_type("openstack:compute/instance:Instance") if "-control-plane-" in r.name or "-workers-" in r.name}
    assert len(nodes) == 5
    assert {r.name for r in dev_run.resources if cleanup.urn in r.options.get("dependsOn", [])} == nodes | {"ocp4-bootstrap-config-image"}
    # What else is Pulumi's and tagged (ports, floating IPs, the bootstrap) goes in parallel:
    # the script leaves those names alone (test_nothing_pulumi_deletes_in_the_same_destroy_is_touched).
    assert sorted(cleanup.options["ignoreChanges"]) == sorted(set(RUN_ONCE) - {"delete"})
    inputs = unwrap(cleanup.inputs)
    assert inputs["create"] == "true"
    assert inputs["delete"] == cleanup_script()
    assert set(inputs["environment"]) == {"OS_CLOUD", "INFRA_ID"}
    assert inputs["environment"]["INFRA_ID"] == dev_run.outputs["infraId"]


def test_the_mark_runs_before_any_node_goes(dev_run):
    """On destroy the engine deletes a resource before those it depends on: the mark depends on every
    master and worker, so its script tags what serves them while they exist (the cleanup then runs after
    they are gone). `pulumi up` never runs it: its create does nothing and only its script is taken."""
    mark = dev_run.by_name(MARK)
    by_urn = {r.urn: r for r in dev_run.resources}
    nodes = {r.name for r in dev_run.of_type("openstack:compute/instance:Instance") if "-control-plane-" in r.name or "-workers-" in r.name}
    assert {by_urn[urn].name for urn in mark.options["dependsOn"] if by_urn[urn].type.endswith("Instance")} == nodes
    assert not [r.name for r in dev_run.resources if mark.urn in r.options.get("dependsOn", [])]
    assert sorted(mark.options["ignoreChanges"]) == sorted(set(RUN_ONCE) - {"delete"})
    inputs = unwrap(mark.inputs)
    assert (inputs["create"], inputs["delete"]) == ("true", mark_script())
    assert inputs["environment"] == {"OS_CLOUD": "openstack", "INFRA_ID": dev_run.outputs["infraId"]}


def test_a_deployed_cleanup_takes_the_current_script_in_place():
    """A stack deployed with an older script runs the current one on destroy: an update (its
    create, `true`, runs), never a replacement (which would run the old delete on a live cluster)."""
    state = deploy(stack_config("dev"))
    for resource in state:
        if resource["name"] == CLEANUP:
            resource["inputs"]["delete"] = "echo an older cleanup"
    result = preview(state, stack_config("dev"))
    assert result.error is None, result.error
    assert (result.changes[CLEANUP].action, result.changes[CLEANUP].fields) == ("update", ("delete",))
    assert {name for name, change in result.changes.items() if change.action != "same"} == {CLEANUP}


def test_standalone_has_no_cleanup(standalone_run):
    assert not [r for r in standalone_run.resources if r.name in (CLEANUP, MARK)]


def test_resources_json_names_its_dependencies(tmp_path):
    out = tmp_path / "plan"
    subprocess.run([sys.executable, "-m", "tools.plan", "--stack", "dev", "--out", str(out)], cwd=ROOT, check=True, capture_output=True, env={**os.environ})
    resources = json.loads((out / "resources.json").read_text())
    entries = resources if isinstance(resources, list) else resources["resources"]
    cleanup = next(r for r in entries if r["name"] == CLEANUP)
    named = {urn.rsplit("::", 1)[-1] for urn in cleanup["options"]["dependsOn"]}
    assert BLOCKED <= named


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: with_section(c, "workers", count=5),
        lambda c: with_section(c, "bootstrap", enabled=False),
        lambda c: with_section(c, "openstack", apiAllowedCidrs=["198.51.100.0/24"]),
        lambda c: {**c, "ocp:tags": json.dumps(["team=ocp"])},
    ],
    ids=["workers.count", "bootstrap.enabled", "apiAllowedCidrs", "tags"],
)
def test_no_up_runs_or_replaces_it(edit):
    state = deploy(stack_config("dev"))
    result = preview(state, edit(stack_config("dev")))
    assert result.error is None, result.error
    assert result.changes[CLEANUP].action == "same"
    assert result.changes[MARK].action == "same"
