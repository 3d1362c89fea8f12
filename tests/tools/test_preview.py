"""tools/preview.py, the offline preview: the parts the engine's own rules pin down."""

from __future__ import annotations

from tools.preview import with_ignored

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
