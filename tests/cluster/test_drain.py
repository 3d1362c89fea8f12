"""A worker's drain where the real API server cannot serve: `oc` itself (it cannot be built here;
the real kubectl runs against a real API server in test_drain_real_api.py), as a stand-in that
records its calls, to show oc gets `adm drain`; no binary at all; and shellcheck."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cluster.drain import DRAIN_TIMEOUT_SECONDS, drain_script

NODE = "ocp4-x7k2p-worker-3"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: c2VjcmV0LWtleQ==\n"

# Records each call (and the kubeconfig it was given, with its mode) and succeeds.
STAND_IN_OC = r"""#!/bin/bash
printf '%s\n' "$*" >>"$OC_LOG"
[ "$1" = --kubeconfig ] && cat "$2" >"$OC_SEEN_KUBECONFIG" && stat -c %a "$2" >"$OC_SEEN_KUBECONFIG.mode"
exit 0
"""


@pytest.fixture
def drain(tmp_path: Path):
    oc = tmp_path / "bin" / "oc"
    oc.parent.mkdir()
    oc.write_text(STAND_IN_OC)
    oc.chmod(0o755)
    log, seen = tmp_path / "calls.log", tmp_path / "kubeconfig.seen"

    def run(oc_path: str | None = None, **extra: str) -> subprocess.CompletedProcess:
        log.write_text("")
        env = {
            "PATH": "/usr/bin:/bin",
            "NODE": NODE,
            "OC": oc_path or str(oc),
            "KUBECONFIG_DATA": KUBECONFIG,
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


def test_oc_drains_under_adm_then_deletes_the_node(drain):
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


@pytest.mark.parametrize("tool,verb", [("oc", "oc adm drain"), ("kubectl", "kubectl drain")])
def test_without_the_binary_it_says_what_to_run(drain, tool, verb):
    result = drain(oc_path=f"/nonexistent/{tool}")
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr == (
        f"drain: no /nonexistent/{tool} here: {NODE} was not drained; if the cluster lives on: "
        f"{verb} {NODE} --ignore-daemonsets --delete-emptydir-data --force; {tool} delete node {NODE}\n"
    )


def test_shellcheck(tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck')")
    script = tmp_path / "drain.sh"
    script.write_text("#!/usr/bin/env bash\n" + drain_script())
    result = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, env={**os.environ})
    assert result.returncode == 0, result.stdout
