"""The driver's words for a state whose commands are not the program's (ocp/state_guard.py): one line per resource,
each input named, what to do, and never a stored value (a kubeconfig, a pull secret). The checks themselves:
tests/cluster/test_state_scripts.py; the driver stopping on them: tests/ocp/test_driver.py, tests/e2e/test_state_scripts.py."""

from __future__ import annotations

import pytest

from cluster.config import load_config
from cluster.state_scripts import differences
from ocp.state_guard import config_or_none, report
from tests.cluster.test_state_scripts import DRAIN, EXEC_KUBECONFIG, changed, deployed
from tests.conftest import stack_config


@pytest.fixture(scope="module")
def dev_config() -> dict[str, str]:
    return stack_config("dev")


@pytest.fixture(scope="module")
def dev_state(dev_config) -> list[dict]:
    return deployed(dev_config)


def test_the_report_names_each_resource_once_says_what_to_do_and_shows_no_value(dev_config, dev_state):
    state = changed(dev_state, DRAIN, delete="touch /tmp/owned", **{"environment.BASH_ENV": "/tmp/owned.sh", "environment.KUBECONFIG_DATA": EXEC_KUBECONFIG})
    state = changed(state, "installer-run", "outputs", delete="touch /tmp/owned")
    text = report(differences(state, load_config(dev_config), "dev"), "dev")
    lines = text.splitlines()
    assert len(lines) == 4 and lines[0].startswith("the state of stack dev holds commands this program would not run")
    assert sorted(lines[1:3]) == sorted([
        "  installer-run: delete is set, and this program gives the installer's run no delete",
        (
        f"  {DRAIN}: delete is not this program's script for the drain of a worker (nor an earlier release's); "
        "environment.BASH_ENV is no variable this program sets for the drain of a worker; "
        "environment.KUBECONFIG_DATA is a kubeconfig whose users have exec: the installer's never does (exec and auth-provider run programs)"
        ),
    ])
    assert "restore its last good version from the bucket's object versioning" in lines[3] and "pulumi state delete" in lines[3]
    assert "/tmp/owned" not in text and "client.authentication" not in text


def test_a_stack_file_that_does_not_load_is_none():
    def broken():
        raise ValueError("ocp:clusterName: missing")

    assert config_or_none(broken) is None and config_or_none(lambda: "loaded") == "loaded"
