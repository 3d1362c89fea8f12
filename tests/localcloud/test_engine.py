"""The real previews' batches (tests/localcloud/engine.py): edits previewed together only where each one's
change is in the batch's config exactly as it would be alone. Pure: no cloud, no engine."""

from __future__ import annotations

import json

import pytest

from tests.conftest import stack_config
from tests.localcloud.engine import BATCH, _batches
from tests.test_day2 import DEV_EDITS, KVM_EDITS, STANDALONE_EDITS


def leaves(config: dict[str, str]) -> dict[tuple[str, ...], object]:
    """Every value of the config by its full path, objects entered all the way."""
    found: dict[tuple[str, ...], object] = {}

    def walk(path: tuple[str, ...], value: object) -> None:
        if isinstance(value, dict) and value:
            for name, inner in value.items():
                walk((*path, name), inner)
        else:
            found[path] = value

    for name, text in config.items():
        try:
            walk((name,), json.loads(text) if text.startswith("{") else text)
        except ValueError:
            walk((name,), text)
    return found


def changed(base: dict[str, str], config: dict[str, str]) -> dict[tuple[str, ...], object]:
    before, after = leaves(base), leaves(config)
    return {path: after.get(path) for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


@pytest.mark.parametrize(("stack", "edits"), [("dev", DEV_EDITS), ("kvm", KVM_EDITS), ("standalone", STANDALONE_EDITS)])
def test_a_batch_holds_each_edits_change_and_nothing_else(stack, edits):
    """Every value an edit changes is in its batch's config as the edit alone made it; every other value is the base's."""
    base = stack_config(stack)
    edits = [edit for edit in edits if edit.stack == stack and edit.base(base) == base]
    configs = [edit.change(base) for edit in edits]
    batches = _batches(base, configs, list(range(len(edits))))
    assert batches, "no two edits of the catalogue could be previewed together"
    seen: set[int] = set()
    for batch, config in batches:
        assert 1 < len(batch) <= BATCH and not seen & set(batch)
        seen |= set(batch)
        made = changed(base, config)
        wanted: dict[tuple[str, ...], object] = {}
        for index in batch:
            own = changed(base, configs[index])
            assert not own.keys() & wanted.keys(), [edits[i].id for i in batch]
            wanted |= own
        assert made == wanted, [edits[index].id for index in batch]
    print(f"{stack}: {len(edits)} edits, {len(seen)} in {len(batches)} batches")


def test_two_edits_of_one_value_are_never_in_one_batch():
    base = {"ocp:masters": json.dumps({"count": 3, "flavor": "a"}), "ocp:sshKey": "k"}
    configs = [
        {**base, "ocp:masters": json.dumps({"count": 3, "flavor": "b"})},
        {**base, "ocp:masters": json.dumps({"count": 3, "flavor": "c"})},
        {**base, "ocp:masters": json.dumps({"count": 3, "flavor": "a", "image": "x"})},
        {**base, "ocp:sshKey": "other"},
        {**base, "ocp:masters": json.dumps({"count": 3, "flavor": "a", "image": {"name": "y"}})},
    ]
    batches = _batches(base, configs, [0, 1, 2, 3, 4])
    assert [batch for batch, _ in batches] == [[0, 2, 3], [1, 4]]
    assert changed(base, batches[0][1]) == {("ocp:masters", "flavor"): "b", ("ocp:masters", "image"): "x", ("ocp:sshKey",): "other"}


def test_two_edits_the_config_rules_refuse_together_are_never_in_one_batch():
    """masters.availabilityZones and masters.rootVolume pass alone; together the root volume needs zones (the
    installer's rule), so one preview of both would be refused and every edit of the batch previewed again."""
    base = stack_config("dev")
    masters = json.loads(base["ocp:masters"])
    zones = {**base, "ocp:masters": json.dumps({**masters, "availabilityZones": ["az1"]})}
    volume = {**base, "ocp:masters": json.dumps({**masters, "rootVolume": {"size": 100, "type": "ssd"}})}
    key = {**base, "ocp:sshKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOfLkbmbIPDmPQlU9OrPHVZ6Y9ZxCxZGOr/tXZxlQUZ2 other"}
    batches = _batches(base, [zones, volume, key], [0, 1, 2])
    assert [batch for batch, _ in batches] == [[0, 2]], batches
