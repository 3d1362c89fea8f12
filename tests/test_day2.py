"""Day 2 by config: scaling workers and removing the bootstrap touch nothing else.

On OpenStack a changed user_data replaces the server, so "nothing else" is checked on every
input of every resource, compared between two runs of the real program.
"""

from __future__ import annotations

import pytest

from tests.conftest import diff, inputs_by_name, run, stack_config, with_section

BOOTSTRAP_PREFIX = "ocp4-bootstrap"


def is_worker(name: str) -> bool:
    return name.startswith("ocp4-workers")


def workers(count: int) -> dict[str, str]:
    return inputs_by_name(run(with_section(stack_config("dev"), "workers", count=count)))


@pytest.fixture(scope="module")
def scaled():
    return {count: workers(count) for count in (2, 5, 1)}


def test_same_config_twice_gives_identical_inputs():
    assert inputs_by_name(run(stack_config("dev"))) == inputs_by_name(run(stack_config("dev")))


@pytest.mark.parametrize("before,after", [(2, 5), (5, 1), (2, 1)])
def test_scaling_workers_changes_only_worker_resources(scaled, before, after):
    added, removed, changed = diff(scaled[before], scaled[after])
    assert added | removed, "scaling must add or remove something"
    assert {name for name in added | removed | changed if not is_worker(name)} == set()
    assert changed == set(), "existing workers must stay untouched"


def test_scaling_adds_a_port_and_a_server_per_worker(scaled):
    added, _, _ = diff(scaled[2], scaled[5])
    assert added == {f"ocp4-workers-worker-{i}{suffix}" for i in (2, 3, 4) for suffix in ("", "-port")}


def test_bootstrap_teardown_removes_only_bootstrap_resources():
    before = inputs_by_name(run(stack_config("dev")))
    after = inputs_by_name(run(with_section(stack_config("dev"), "bootstrap", enabled=False)))
    added, removed, changed = diff(before, after)
    assert added == set() and changed == set()
    assert removed and all(name.startswith(BOOTSTRAP_PREFIX) for name in removed)
    assert {"ocp4-bootstrap-node", "ocp4-bootstrap-helper-server", "ocp4-bootstrap-helper-upload"} <= removed
