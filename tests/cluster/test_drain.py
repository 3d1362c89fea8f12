"""A worker's drain: the script against a stand-in `oc` that records its calls (a cluster that
answers, one without the node, one whose API is gone, one that hangs), and shellcheck."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cluster.drain import DRAIN_TIMEOUT_SECONDS, drain_script

NODE = "ocp4-x7k2p-worker-3"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: c2VjcmV0LWtleQ==\n"

# Records each call (and the kubeconfig it was given) and answers as the cluster in $OC_MODE would.
STAND_IN_OC = r"""#!/bin/bash
printf '%s\n' "$*" >>"$OC_LOG"
[ "$1" = --kubeconfig ] && cat "$2" >"$OC_SEEN_KUBECONFIG" && stat -c %a "$2" >"$OC_SEEN_KUBECONFIG.mode"
case "$OC_MODE:$*" in
  down:*) echo 'Unable to connect to the server: dial tcp 203.0.113.5:6443: connect: connection refused' >&2; exit 1;;
  hang:*) sleep 600;;
  absent:*" get node "*) echo "Error from server (NotFound): nodes \"${NODE}\" not found" >&2; exit 1;;
  blocked:*" adm drain "*) echo 'Cannot evict pod as it would violate the pod'"'"'s disruption budget.' >&2; sleep 3; exit 1;;
esac
exit 0
"""


@pytest.fixture
def drain(tmp_path: Path):
    oc = tmp_path / "bin" / "oc"
    oc.parent.mkdir()
    oc.write_text(STAND_IN_OC)
    oc.chmod(0o755)
    log, seen = tmp_path / "calls.log", tmp_path / "kubeconfig.seen"

    def run(mode: str = "up", oc_path: str | None = None, **extra: str) -> subprocess.CompletedProcess:
        log.write_text("")
        env = {
            "PATH": "/usr/bin:/bin",
            "NODE": NODE,
            "OC": oc_path or str(oc),
            "KUBECONFIG_DATA": KUBECONFIG,
            "OC_MODE": mode,
            "OC_LOG": str(log),
            "OC_SEEN_KUBECONFIG": str(seen),
            "TMPDIR": str(tmp_path),
            **extra,
        }
        return subprocess.run(["/bin/bash", "-c", drain_script()], env=env, capture_output=True, text=True, timeout=120)

    run.calls = lambda: [line.split(" ", 2)[2] for line in log.read_text().splitlines()]  # type: ignore[attr-defined]
    run.seen = lambda: (seen.read_text(), (tmp_path / "kubeconfig.seen.mode").read_text().strip())  # type: ignore[attr-defined]
    run.tmp = tmp_path  # type: ignore[attr-defined]
    return run


def test_a_worker_is_drained_then_its_node_deleted(drain):
    result = drain()
    assert result.returncode == 0, result.stderr
    assert drain.calls() == [
        f"--request-timeout=20s get node {NODE} -o name",
        f"--request-timeout=20s adm drain {NODE} --ignore-daemonsets --delete-emptydir-data --force --timeout={DRAIN_TIMEOUT_SECONDS}s",
        f"--request-timeout=20s delete node {NODE} --wait=false",
    ]
    assert result.stdout.splitlines() == [f"drain: drained {NODE}", f"drain: deleted node {NODE}"]
    assert result.stderr == ""
    # The cluster's kubeconfig, in a file only its owner reads, gone afterwards; never printed.
    assert drain.seen() == (KUBECONFIG + "\n", "600")
    assert [p.name for p in drain.tmp.iterdir() if p.name.startswith("tmp.")] == []
    assert "c2VjcmV0" not in result.stdout + result.stderr


def test_a_node_the_cluster_does_not_have_is_left_alone(drain):
    result = drain("absent")
    assert result.returncode == 0
    assert drain.calls() == [f"--request-timeout=20s get node {NODE} -o name"]
    assert result.stdout == f"drain: {NODE} is not a node of the cluster: nothing to drain\n"


def test_a_cluster_that_is_gone_does_not_block_the_delete(drain):
    result = drain("down")
    assert result.returncode == 0
    assert len(drain.calls()) == 1
    assert f"drain: the cluster's API does not answer: {NODE} was not drained; if the cluster lives on: oc adm drain {NODE}" in result.stderr


def test_a_budget_that_allows_no_eviction_still_lets_the_node_go(drain):
    result = drain("blocked", DRAIN_TIMEOUT="1")
    assert result.returncode == 0
    assert [call.split(" ")[1] for call in drain.calls()] == ["get", "adm", "delete"]
    assert f"drain: {NODE} was not drained within 1s (a PodDisruptionBudget allowing no eviction?)" in result.stderr
    assert result.stdout == f"drain: deleted node {NODE}\n"


def test_a_cluster_that_hangs_is_given_up_on_in_bounded_time(drain):
    started = time.monotonic()
    result = drain("hang")
    elapsed = time.monotonic() - started
    assert result.returncode == 0
    assert "does not answer" in result.stderr
    assert 28 < elapsed < 40, elapsed  # the lookup's 30 s, then no drain is tried


def test_without_oc_it_says_what_to_run(drain):
    result = drain(oc_path="/nonexistent/oc")
    assert result.returncode == 0
    assert f"drain: no /nonexistent/oc here: {NODE} was not drained; if the cluster lives on: oc adm drain {NODE}" in result.stderr


def test_shellcheck(tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck')")
    script = tmp_path / "drain.sh"
    script.write_text("#!/usr/bin/env bash\n" + drain_script())
    result = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, env={**os.environ})
    assert result.returncode == 0, result.stdout
