"""Guard rails for long-lived clusters (issue 26, item 4): no resource takes a default provider,
and ocp:protect keeps a destroy from taking the masters, the network and the installer's record."""

from __future__ import annotations

import copy

import pulumi
import pytest
import yaml

import tools.mock_run
from tests.conftest import ROOT, deploy, preview, run, stack_config
from tools.mock_run import run_program

STACK_FILES = ["Pulumi.dev.yaml", "Pulumi.standalone.yaml", "Pulumi.kvm.yaml", "Pulumi.example.yaml"]


@pytest.mark.parametrize("name", STACK_FILES)
def test_every_committed_stack_disables_default_providers(name):
    config = yaml.safe_load((ROOT / name).read_text())["config"]
    assert config["pulumi:disable-default-providers"] == ["*"]


def test_the_offline_engine_refuses_a_default_provider_as_the_engine_does(tmp_path, monkeypatch):
    """A resource or invoke without a provider of its own fails the run, naming it; the plans of
    the committed stacks (tests/tools, tests/test_stacks.py) pass with the key set, so none has one."""
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    program = tmp_path / "__main__.py"
    monkeypatch.setattr(tools.mock_run, "PROGRAM", program)
    disabled = {"pulumi:disable-default-providers": '["*"]'}
    program.write_text(
        "import pulumi, pulumi_command as command\n"
        "explicit = command.Provider('explicit')\n"
        "command.local.Command('named', create='true', opts=pulumi.ResourceOptions(provider=explicit))\n"
        "command.local.Command('unnamed', create='true')\n"
    )
    with pytest.raises(pulumi.RunError, match=r"Default provider for 'command' disabled\. '.*::unnamed' must use an explicit provider"):
        run_program(disabled, stack="t")
    assert sorted(r.name for r in run_program({}, stack="t").resources) == ["explicit", "named", "unnamed"]
    # Only the packages named.
    assert "unnamed" in {r.name for r in run_program({"pulumi:disable-default-providers": '["openstack"]'}, stack="t").resources}
    program.write_text("import pulumi_openstack as openstack\nopenstack.networking.get_network(name='external')\n")
    with pytest.raises(pulumi.RunError, match=r"Default provider for 'openstack' disabled\. 'openstack:networking/getNetwork:getNetwork'"):
        run_program(disabled, stack="t")


def protected(program_run) -> set[str]:
    return {r.name for r in program_run.resources if r.options["protect"]}


def test_protect_holds_the_masters_the_network_and_the_installers_record(dev_run):
    masters = {f"ocp4-control-plane-master-{i}" for i in range(3)}
    assert protected(dev_run) == {
        "installer-run",
        "ocp4-network-network",
        "ocp4-network-subnet",
        "ocp4-network-router",
        *masters,
        *(f"{master}-port" for master in masters),
    }
    # libvirt: the masters' disks, not their domains (masters.resize replaces a domain on the same disk).
    assert protected(run(stack_config("kvm"), "kvm")) == {
        "installer-run",
        "kvm4-network-network",
        *(f"kvm4-control-plane-master-{i}-disk" for i in range(3)),
    }


def test_root_volumes_this_program_makes_are_protected():
    config = stack_config(
        "dev",
        masters={"count": 3, "flavor": "master", "image": "rhcos", "rootVolume": {"size": 100, "type": "ssd", "availabilityZones": ["nova"]}},
    )
    volumes = {r.name: r.options["protect"] for r in run(config).resources if r.type == "openstack:blockstorage/volume:Volume"}
    # The bootstrap's (it takes the masters' settings) goes with its teardown.
    assert volumes == {**{f"ocp4-control-plane-master-{i}-root-volume": True for i in range(3)}, "ocp4-bootstrap-node-root-volume": False}


@pytest.mark.parametrize("stack", ["dev", "kvm"])
def test_lowering_protect_changes_only_the_flag(stack):
    installed = stack_config(stack)
    lowered = preview(deploy(installed, stack), stack_config(stack, protect=False), stack)
    assert lowered.error is None
    assert {name: change.action for name, change in lowered.changes.items() if change.action != "same"} == {}
    assert not any(r.options["protect"] for r in lowered.registered)


def test_a_protected_resource_is_not_replaced_until_protect_is_lowered():
    installed = stack_config("dev")
    state = deploy(installed)
    # A subnet deployed with another CIDR: the next up would replace it (ForceNew).
    drifted = copy.deepcopy(state)
    subnet = next(item for item in drifted if item["name"] == "ocp4-network-subnet")
    subnet["inputs"]["cidr"] = "10.1.0.0/16"
    refused = preview(drifted, installed)
    assert refused.error is not None and "ocp4-network-subnet" in refused.error and "marked for protection" in refused.error
    assert "ocp:protect" in refused.error
    allowed = preview(drifted, stack_config("dev", protect=False))
    assert allowed.error is None and allowed.changes["ocp4-network-subnet"].action == "replace"


def test_a_protected_resource_gone_from_the_program_is_named_as_refused():
    state = deploy(stack_config("dev"))
    extra = {**next(item for item in state if item["name"] == "ocp4-network-router"), "name": "old-router"}
    extra["urn"] = extra["urn"].replace("::ocp4-network-router", "::old-router")
    change = preview([*state, extra], stack_config("dev")).changes["old-router"]
    assert change.action == "delete" and "protected: the engine refuses" in change.reason

