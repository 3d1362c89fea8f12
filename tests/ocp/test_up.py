"""`python -m ocp up --stack S` (issue 42, item 3): a day-2 edit previewed and applied, both under the
policy pack, as the docs tell users to run it; and the pack on the real engine (the toolchain's CLI
and language host) refusing what is the world by measure, not by spelling: every unicast address in
three rules, a lone 0.0.0.0/1, ::/0 and 2000::/3, while private space, a /9 and a /48 pass."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from pulumi import automation as auto

from ocp import driver
from ocp.__main__ import main
from ocp.update import update
from tests.ocp.test_driver import OUTPUTS, PACK, UP, FakeStack, rules_stack_in, step

RULE = "openstack:networking/secGroupRule:SecGroupRule"


def _violation(rule: str) -> SimpleNamespace:
    return SimpleNamespace(
        resource_urn=f"urn:pulumi:kvm::ocp::{RULE}::{rule}", message="No rule open to the world.\nopen", color="never",
        policy_name="no-world-open-ports", policy_pack_name="ocp-guard-rails", policy_pack_version="", policy_pack_version_tag="",
        enforcement_level="mandatory",
    )


@pytest.fixture
def updating(monkeypatch):
    def prepare(stack: FakeStack) -> FakeStack:
        monkeypatch.setattr(driver, "_stack", lambda name: stack)
        return stack

    return prepare


def test_up_previews_then_updates_both_with_the_pack(updating, capsys):
    stack = updating(FakeStack([step("create", RULE, "ocp4-security-master-tcp-30000-32767-11.0.0.0_9")], OUTPUTS))
    assert main(["up", "--stack", "kvm"]) == 0
    assert stack.asked == [("preview", {"policy_packs": PACK}), ("up", UP)]
    assert capsys.readouterr().out.splitlines()[:3] == ["1/2 preview of stack kvm", "preview: 1 to create", "2/2 pulumi up"]


def test_a_violation_stops_up_before_the_update(updating, capsys):
    rule = "ocp4-security-master-tcp-22-0.0.0.0_1"
    failed = auto.CommandError(SimpleNamespace(stdout="", stderr="error: preview failed", code=255))
    stack = updating(FakeStack([step("create", RULE, rule)], OUTPUTS, policy=[_violation(rule)], preview_error=failed))
    assert main(["up", "--stack", "kvm"]) == 1
    assert stack.ups == 0
    assert f"stopped: pulumi preview: the guard rails (policy/README.md) refuse it: no-world-open-ports ({rule}): open" in capsys.readouterr().err


def test_a_running_master_is_not_replaced_without_yes_and_nothing_to_change_is_no_update(updating, capsys):
    replace = FakeStack([step("replace", "openstack:compute/instance:Instance", "ocp4-master-0")], OUTPUTS)
    updating(replace)
    assert main(["up", "--stack", "kvm"]) == 1 and replace.ups == 0
    assert "the preview would disrupt running machines (replace ocp4-master-0)" in capsys.readouterr().err
    assert main(["up", "--stack", "kvm", "--yes"]) == 0 and replace.ups == 1
    same = updating(FakeStack([step("same", RULE, "r")], OUTPUTS))
    assert main(["up", "--stack", "kvm"]) == 0 and same.ups == 0


# Security group rules the real engine registers without a provider (components typed as rules: the
# pack judges resources by type), one per source, IPv6 where the source is.
RULES_PROGRAM = '''
import pulumi

class Rule(pulumi.ComponentResource):
    def __init__(self, name, props):
        super().__init__("openstack:networking/secGroupRule:SecGroupRule", name, props)
        self.register_outputs(props)

config = pulumi.Config()
for source in config.require_object("sources"):
    Rule("np-" + source.replace("/", "_").replace(":", "-"), {
        "direction": "ingress", "ethertype": "IPv6" if ":" in source else "IPv4", "protocol": config.get("protocol") or "tcp",
        "portRangeMin": 30000, "portRangeMax": 32767, "securityGroupId": "g", "remoteIpPrefix": source,
    })
'''


@pytest.fixture(scope="module")
def rules_stack(tmp_path_factory):
    """A stack of RULES_PROGRAM on the toolchain's real CLI and language host, a file backend of its own."""
    return rules_stack_in(tmp_path_factory.mktemp("rules"), RULES_PROGRAM)


@pytest.mark.parametrize(
    ("sources", "refused"),
    [
        (["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3"], ["np-0.0.0.0_1", "np-128.0.0.0_2", "np-192.0.0.0_3"]),
        (["0.0.0.0/1"], ["np-0.0.0.0_1"]),
        (["::/0", "2000::/3"], ["np-2000--_3", "np---_0"]),
        (["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "11.0.0.0/9", "2a01:4f8:c0c::/48"], []),
    ],
)
def test_the_real_engine_runs_the_pack_on_up_and_refuses_the_world_by_measure(rules_stack, monkeypatch, sources, refused):
    monkeypatch.setattr(driver, "_stack", lambda name: rules_stack)
    rules_stack.set_config("sources", auto.ConfigValue(str(sources).replace("'", '"')))
    said: list[str] = []
    if not refused:
        assert update("rules", said.append) == len(sources) + 1  # the stack itself, on the first update
        return
    with pytest.raises(driver.Stop) as stopped:
        update("rules", said.append)
    message = str(stopped.value)
    assert message.startswith("pulumi preview: the guard rails (policy/README.md) refuse it: "), message
    assert sorted(re.findall(r"no-world-open-ports \(([^)]*)\)", message)) == sorted(refused), message
    assert "2/2 pulumi up" not in said


def test_replace_goes_to_the_preview_and_the_up_and_a_masters_needs_yes(updating, capsys):
    master = "urn:pulumi:kvm::ocp::openstack:compute/instance:Instance::ocp4-master-1"
    stack = updating(FakeStack([step("replace", "openstack:compute/instance:Instance", "ocp4-master-1")], OUTPUTS))
    assert main(["up", "--stack", "kvm", "--replace", master]) == 1 and stack.ups == 0
    assert main(["up", "--stack", "kvm", "--replace", master, "--yes"]) == 0
    assert stack.asked[-2:] == [("preview", {"policy_packs": PACK, "replace": [master]}), ("up", {**UP, "replace": [master]})]
