"""The install driver's own decisions, where the real engine and cluster cannot show them here: a
preview that would disrupt running machines stops it; a bootstrap that does not hand over is
gathered (the gather runs SSH to the bootstrap, which no test may reach) and the bundle named; an
interrupted earlier run is pointed at tools.recover. The whole install runs for real in
tests/localcloud/test_install_kvm.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pulumi import automation as auto

from ocp import driver

URN = "urn:pulumi:kvm::ocp::{}::{}"


def step(op: str, kind: str, name: str) -> SimpleNamespace:
    return SimpleNamespace(op=auto.OpType(op), type=kind, urn=URN.format(kind, name))


class FakeStack:
    """What the driver asks of an Automation API stack, answered from lists."""

    def __init__(self, steps, outputs, up_error: Exception | None = None):
        self.name = "kvm"
        self.steps, self.values, self.up_error = steps, outputs, up_error
        self.config: dict[str, str] = {}
        self.ups = 0

    def preview(self, on_event):
        for metadata in self.steps:
            on_event(SimpleNamespace(resource_pre_event=SimpleNamespace(metadata=metadata)))

    def up(self, on_event):
        self.ups += 1
        if self.up_error:
            raise self.up_error

    def outputs(self):
        return {key: auto.OutputValue(value, False) for key, value in self.values.items()}

    def set_config(self, key, value, path=False):
        self.config[key] = value.value


@pytest.fixture
def installing(monkeypatch, tmp_path):
    def prepare(stack: FakeStack, streams: dict[str, bool]):
        config = SimpleNamespace(
            installer=SimpleNamespace(binary="openshift-install", assets_dir=str(tmp_path / "assets"), oc="oc"),
            bootstrap=SimpleNamespace(enabled=True),
            cluster_domain="kvm4.lab.local",
        )
        ran: list[list[str]] = []

        def stream(command, say, timeout, cwd, hidden=()):
            ran.append(command)
            return streams.get(command[1] if command[0] != "sh" else "gather", True)

        monkeypatch.setattr(driver, "_stack", lambda name: stack)
        monkeypatch.setattr(driver, "_config", lambda s: config)
        monkeypatch.setattr(driver, "_stream", stream)
        return ran

    return prepare


OUTPUTS = {"kubeconfig": "apiVersion: v1\n", "kubeadminPassword": "secret-password", "nodes": {}}


def test_a_preview_that_would_replace_a_master_stops_the_install(installing):
    stack = FakeStack([step("replace", "libvirt:index/domain:Domain", "kvm4-control-plane-master-0-domain"), step("same", "pulumi:pulumi:Stack", "ocp-kvm")], OUTPUTS)
    installing(stack, {})
    said: list[str] = []
    with pytest.raises(driver.Stop, match=r"would disrupt running machines \(replace kvm4-control-plane-master-0-domain\).*pulumi preview --diff.*--yes"):
        driver.install("kvm", said.append)
    assert stack.ups == 0
    assert said[1] == "preview: 1 to replace"


def test_the_bootstraps_own_replacement_is_no_disruption(installing):
    stack = FakeStack([step("delete", "libvirt:index/domain:Domain", "kvm4-bootstrap-node-domain")], OUTPUTS)
    installing(stack, {"wait-for": False})
    with pytest.raises(driver.Stop, match="the bootstrap did not complete"):
        driver.install("kvm", lambda line: None)
    assert stack.ups == 1


def test_a_bootstrap_that_does_not_hand_over_is_gathered_and_the_bundle_named(installing, tmp_path):
    gather = "openshift-install gather bootstrap --dir assets/kvm --bootstrap 192.168.126.10 --master 192.168.126.20"
    stack = FakeStack([step("create", "libvirt:index/domain:Domain", "kvm4-bootstrap-node-domain")], {**OUTPUTS, "bootstrapGather": gather})
    ran = installing(stack, {"wait-for": False})
    said: list[str] = []
    with pytest.raises(driver.Stop, match=rf"the log bundle is in {tmp_path / 'assets'} \(log-bundle-\*\.tar\.gz\)"):
        driver.install("kvm", said.append)
    assert ran[-1] == ["sh", "-c", gather]
    assert f"the bootstrap did not complete: gathering its logs ({gather})" in said
    # Nothing was torn down: the bootstrap stays for the user to look at.
    assert stack.config == {} and stack.ups == 1
    # The credentials the installer's wait-for reads, only for the owner.
    assert oct((tmp_path / "assets" / "auth" / "kubeconfig").stat().st_mode & 0o777) == "0o600"
    assert (tmp_path / "assets" / "auth" / "kubeadmin-password").read_text() == "secret-password"


def test_an_interrupted_earlier_run_is_pointed_at_the_recovery(installing):
    result = auto.CommandResult(stdout="", stderr="error: the current deployment has 1 resource(s) with pending operations", code=255)
    stack = FakeStack([], OUTPUTS, up_error=auto.CommandError(result))
    installing(stack, {})
    with pytest.raises(driver.Stop, match=r"an earlier run was interrupted: `python -m tools.recover --stack kvm`"):
        driver.install("kvm", lambda line: None)


def test_a_failed_up_says_the_engines_errors_not_the_programs_inputs():
    text = 'stdout: ...\n  error: update failed\\n  command: "set -eu\\nprintf ..."\nstderr: error: Resource monitor has terminated, shutting down'
    assert driver._errors(text) == "error: update failed; error: Resource monitor has terminated, shutting down"


def test_streamed_lines_mask_the_password(tmp_path):
    said: list[str] = []
    script = tmp_path / "wait-for"
    script.write_text('#!/bin/sh\necho \'level=info msg=Login to the console with user: "kubeadmin", and password: "hunter2-abcde"\'\n')
    script.chmod(0o755)
    assert driver._stream([str(script)], said.append, 30, Path(tmp_path), ("hunter2-abcde",))
    assert said == ['  level=info msg=Login to the console with user: "kubeadmin", and password: "[secret]"']
