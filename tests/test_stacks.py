"""Every committed stack file runs through the real program under mocks."""

from __future__ import annotations

import pytest

from cluster.stackfile import read_stack_file
from tests.conftest import PULL_SECRET, STACK_FILES, run


@pytest.mark.parametrize("path", STACK_FILES, ids=[path.name for path in STACK_FILES])
def test_committed_stack_runs(path):
    stack_file = read_stack_file(path)
    assert "ocp:pullSecret" not in stack_file.config, "never commit a plaintext pull secret"
    stack = path.stem.removeprefix("Pulumi.")
    program_run = run({**stack_file.config, "ocp:pullSecret": PULL_SECRET}, stack=stack)
    assert program_run.resources
    assert set(program_run.outputs) >= {"apiVip", "ingressVip", "apiUrl", "consoleUrl", "nodes", "etcHosts", "infraId"}
    assert program_run.secret_outputs >= {"kubeconfig", "kubeadminPassword"}


def test_there_is_a_dev_stack():
    assert any(path.name == "Pulumi.dev.yaml" for path in STACK_FILES)
