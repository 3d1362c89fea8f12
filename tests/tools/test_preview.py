"""tools/preview.py, the offline preview: the parts the engine's own rules pin down."""

from __future__ import annotations

from tools.preview import Deployed, Engine, with_ignored

DEPLOYED = {"name": "m0", "cpu": {"mode": "host-model"}, "networkInterfaces": [{"mac": "52:54:00:a8:7e:14", "addresses": ["192.168.126.20"]}]}


def test_an_ignored_nested_path_keeps_only_that_value_as_deployed():
    # As the engine's PropertyPath.Reset: the rest of the list element is still diffed.
    wanted = {**DEPLOYED, "networkInterfaces": [{"mac": "52:54:00:a8:7e:99", "addresses": []}]}
    effective, suppressed = with_ignored(wanted, DEPLOYED, ["networkInterfaces[0].addresses"])
    assert effective["networkInterfaces"] == [{"mac": "52:54:00:a8:7e:99", "addresses": ["192.168.126.20"]}]
    assert suppressed == ["networkInterfaces[0].addresses"]


def test_an_ignored_top_level_key_takes_the_deployed_value_or_goes():
    effective, suppressed = with_ignored({**DEPLOYED, "cpu": {"mode": "custom"}}, DEPLOYED, ["cpu", "coreosIgnition"])
    assert effective == DEPLOYED and suppressed == ["cpu"]
    assert with_ignored({**DEPLOYED, "coreosIgnition": "x"}, DEPLOYED, ["coreosIgnition"])[0] == DEPLOYED


def test_a_replacement_is_made_with_the_programs_value_of_an_ignored_input():
    # As the real engine does (a trigger's replacement, and `pulumi up --replace`): the bootstrap
    # made again after a failed first boot gets the user_data of that run, its token included.
    urn = "urn:pulumi:dev::ocp::command:local:Command::c"
    engine = Engine({urn: Deployed("command:local:Command", "c", urn, "c-1", {"create": "echo a", "triggers": ["t0"]}, {})})
    wanted = {"create": "echo b", "triggers": ["t1"]}
    # replaceOnChanges as pulumi_command's SDK registers it
    action, kept = engine.step("command:local:Command", "c", urn, wanted, ["create"], ["triggers[*]"], False, [], True)
    assert (action, kept) == ("replace", wanted)
    same = Engine({urn: Deployed("command:local:Command", "c", urn, "c-1", {"create": "echo a", "triggers": ["t0"]}, {})})
    assert same.step("command:local:Command", "c", urn, {**wanted, "triggers": ["t0"]}, ["create"], ["triggers[*]"], False, [], True) == (
        "same", {"create": "echo a", "triggers": ["t0"]}
    )
