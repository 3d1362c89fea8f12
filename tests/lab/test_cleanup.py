"""A lab interrupted halfway cleans up: no namespaces, links or processes are left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from harness import netns
from tests.lab.conftest import need_lab
from tools.plan import ROOT


def _namespaces(prefix: str) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()
    return [name for name in listed if name.startswith(prefix)]


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_leaves_nothing_behind(number: signal.Signals):
    need_lab()
    command = [sys.executable, "-m", "harness.lab", "--stack=standalone", "--scenario=bring-up"]
    lab = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    prefix = f"olab-{lab.pid}-"
    try:
        deadline = time.monotonic() + 30
        # The client's namespace is made last: then every node's exists and daemons start.
        while not any(name.endswith("-client") for name in _namespaces(prefix)):
            assert lab.poll() is None and time.monotonic() < deadline, "the lab did not get going"
            time.sleep(0.1)
        time.sleep(2)
        inodes = {os.stat(f"/run/netns/{name}").st_ino for name in _namespaces(prefix)}
        host_links = netns.host_links()
        lab.send_signal(number)
        _, stderr = lab.communicate(timeout=30)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
    assert lab.returncode == 130, stderr
    assert f"interrupted by {number.name}; cleaned up, left behind: nothing" in stderr
    assert _namespaces(prefix) == []
    assert netns.processes_in(inodes) == []
    assert netns.host_links() == host_links
