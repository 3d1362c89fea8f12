"""The install driver's own decisions, where the real engine and cluster cannot show them here: a
preview that would disrupt running machines stops it, the bootstrap's by its component type, not
its name; every preview and up runs with the policy pack, whose violation stops it; a bootstrap that does not hand over is
gathered (the gather runs SSH to the bootstrap, which no test may reach) and the bundle named; an
interrupted earlier run is pointed at tools.recover. The whole install runs for real in
tests/localcloud/test_install_kvm.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pulumi import automation as auto

from ocp import driver
from tools import toolchain

PACK = [str(driver.PROJECT / "policy" / "run")]


def urn(kind: str, name: str, parent: str = "", stack: str = "kvm") -> str:
    """The engine's URN: the parent's type, then the resource's, in its type chain."""
    parent_type = parent.split("::")[2].rsplit("$", 1)[-1] + "$" if parent else ""
    return f"urn:pulumi:{stack}::ocp::{parent_type}{kind}::{name}"


def step(op: str, kind: str, name: str, parent: str = "", stack: str = "kvm") -> SimpleNamespace:
    state = SimpleNamespace(parent=parent)
    return SimpleNamespace(op=auto.OpType(op), type=kind, urn=urn(kind, name, parent, stack), old=state, new=None)


class FakeStack:
    """What the driver asks of an Automation API stack, answered from lists; what it was asked with, recorded."""

    def __init__(self, steps, outputs, up_error: Exception | None = None, policy=(), preview_error: Exception | None = None):
        self.name = "kvm"
        self.steps, self.values, self.up_error = steps, outputs, up_error
        self.policy, self.preview_error = policy, preview_error
        self.config: dict[str, str] = {}
        self.ups = 0
        self.asked: list[tuple[str, dict]] = []

    def preview(self, on_event, **options):
        self.asked.append(("preview", options))
        for metadata in self.steps:
            on_event(SimpleNamespace(resource_pre_event=SimpleNamespace(metadata=metadata), policy_event=None))
        for event in self.policy:
            on_event(SimpleNamespace(resource_pre_event=None, policy_event=event))
        if self.preview_error:
            raise self.preview_error

    def up(self, on_event, **options):
        self.asked.append(("up", options))
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
    """The libvirt bootstrap's domain is a Machine's child: its URN names the Machine, the Machine's names the Bootstrap."""
    component = urn("ocp:libvirt:Bootstrap", "kvm4-bootstrap", urn("ocp:libvirt:Cluster", "kvm4"))
    machine = step("delete", "ocp:libvirt:Machine", "kvm4-bootstrap-node", component)
    stack = FakeStack([machine, step("delete", "libvirt:index/domain:Domain", "kvm4-bootstrap-node-domain", machine.urn)], OUTPUTS)
    installing(stack, {"wait-for": False})
    with pytest.raises(driver.Stop, match="the bootstrap did not complete"):
        driver.install("kvm", lambda line: None)
    assert stack.ups == 1


def test_a_name_holding_bootstrap_does_not_turn_the_guard_off(installing):
    """A stack and cluster called `bootstrap-lab` is no bootstrap: only the component's type is."""
    name = "bootstrap-lab"
    cluster = urn("ocp:libvirt:Cluster", name, stack=name)
    machine = step("replace", "ocp:libvirt:Machine", f"{name}-control-plane-master-0", urn("ocp:libvirt:NodePool", f"{name}-masters", cluster, name), name)
    domain = step("replace", "libvirt:index/domain:Domain", f"{name}-control-plane-master-0-domain", machine.urn, name)
    stack = FakeStack([machine, domain], OUTPUTS)
    installing(stack, {"wait-for": False})
    with pytest.raises(driver.Stop, match=rf"would disrupt running machines \(replace {name}-control-plane-master-0-domain\)"):
        driver.install(name, lambda line: None)
    assert stack.ups == 0


def test_every_preview_and_up_runs_with_the_policy_pack(installing, monkeypatch):
    stack = FakeStack([step("create", "libvirt:index/domain:Domain", "kvm4-control-plane-master-0-domain")], OUTPUTS)
    installing(stack, {})
    monkeypatch.setattr(driver, "approve_until_ready", lambda *args, **kwargs: True)  # no cluster here (tests/ocp/test_approver.py)
    driver.install("kvm", lambda line: None)
    # Step 1 and 2, then the bootstrap's teardown previewed and run (4/6): each with the pack.
    assert stack.asked == [("preview", {"policy_packs": PACK}), ("up", {"policy_packs": PACK})] * 2


def test_a_mandatory_violation_stops_the_install_before_the_up(installing):
    rule = urn("openstack:networking/secGroupRule:SecGroupRule", "ocp4-security-master-tcp-22-world")
    violation = auto.PolicyEvent(
        resource_urn=rule, message="No security group rule open to the world but ...\nocp4-security-master-tcp-22-world opens tcp 22 to the world (from 0.0.0.0/0)", color="never",
        policy_name="no-world-open-ports", policy_pack_name="ocp-guard-rails", policy_pack_version="", policy_pack_version_tag="",
        enforcement_level="mandatory",
    )
    advisory = auto.PolicyEvent(
        resource_urn=rule, message="can't be known during preview", color="never", policy_name="tagged-with-cluster-id",
        policy_pack_name="ocp-guard-rails", policy_pack_version="", policy_pack_version_tag="", enforcement_level="advisory",
    )
    failed = auto.CommandError(auto.CommandResult(stdout="Policies:\n ...", stderr="error: preview failed", code=255))
    stack = FakeStack([step("create", "openstack:networking/secGroupRule:SecGroupRule", "ocp4-security-master-tcp-22-world")], OUTPUTS, policy=[violation, advisory], preview_error=failed)
    installing(stack, {})
    with pytest.raises(driver.Stop) as stopped:
        driver.install("kvm", lambda line: None)
    assert str(stopped.value) == (
        "pulumi preview: the guard rails (policy/README.md) refuse it: no-world-open-ports "
        "(ocp4-security-master-tcp-22-world): ocp4-security-master-tcp-22-world opens tcp 22 to the world (from 0.0.0.0/0)"
    )
    assert stack.ups == 0


def test_a_pack_that_cannot_run_stops_the_install(installing, monkeypatch, tmp_path):
    """No virtualenv and none can be made (a file stands where it goes): the driver says so, nothing runs."""
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "venv").write_text("not a directory")
    monkeypatch.setattr(driver, "POLICY", policy)
    stack = FakeStack([], OUTPUTS)
    installing(stack, {})
    said: list[str] = []
    with pytest.raises(driver.Stop, match=r"the policy pack cannot run \(.* -m venv --clear: .*\): make .*policy/venv with `bash \.ci/setup`"):
        driver.install("kvm", said.append)
    assert f"making the policy pack's virtualenv {policy / 'venv'} (once; `bash .ci/setup` makes it too)" in said
    assert stack.asked == []


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


# Security group rules the real engine registers without a provider (a component typed as one:
# the pack judges resources by type, and a stack rule reads their outputs).
RULES_PROGRAM = '''
import pulumi

class Rule(pulumi.ComponentResource):
    def __init__(self, name, props):
        super().__init__("openstack:networking/secGroupRule:SecGroupRule", name, props)
        self.register_outputs(props)

node_ports = {"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp", "portRangeMin": 30000, "portRangeMax": 32767, "securityGroupId": "g"}
for half in pulumi.Config().require_object("halves"):
    Rule("node-ports-" + half.replace("/", "_"), dict(node_ports, remoteIpPrefix=half))
'''


@pytest.fixture
def engine_stack(tmp_path):
    """A stack of RULES_PROGRAM on the toolchain's real CLI and language host, a file backend in tmp_path."""
    for name in ("pulumi", "pulumi-language-python"):
        if toolchain.binary(name) is None:
            pytest.skip(toolchain.missing(name))
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: rules\nruntime: python\n")
    (project / "__main__.py").write_text(RULES_PROGRAM)
    (tmp_path / "state").mkdir()
    env = {**toolchain.pulumi_env(tmp_path / "home", tmp_path / "state", driver.PROJECT / "venv"), "PULUMI_CONFIG_PASSPHRASE": "test"}
    command = auto.PulumiCommand(root=str(toolchain.BIN.parent))
    return auto.create_stack("rules", work_dir=str(project), opts=auto.LocalWorkspaceOptions(env_vars=env, pulumi_command=command))


def test_the_real_engine_runs_the_pack_and_its_refusal_stops_the_driver(engine_stack):
    """Two halves of the world (each passes alone): the engine runs policy/run, its stack rule
    refuses the sum, and the driver stops before any `up`; one half previews and updates."""
    said: list[str] = []
    engine_stack.set_config("halves", auto.ConfigValue('["0.0.0.0/1", "128.0.0.0/1"]'))
    with pytest.raises(driver.Stop) as stopped:
        driver.preview(engine_stack, said.append, go_on=False)
    assert str(stopped.value).startswith(
        "pulumi preview: the guard rails (policy/README.md) refuse it: no-world-open-ports-together (node-ports-0.0.0.0_1): "
        "node-ports-0.0.0.0_1, node-ports-128.0.0.0_1 (security group g) together open tcp 30000-32767 to the world (from "
    ), str(stopped.value)
    engine_stack.set_config("halves", auto.ConfigValue('["0.0.0.0/1"]'))
    assert driver.preview(engine_stack, said.append, go_on=False) == 2
    driver.up(engine_stack, said.append, 2)
    assert said[-1].startswith("up: 2 changed in")
