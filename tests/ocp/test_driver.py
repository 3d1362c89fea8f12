"""The install driver's own decisions, where the real engine and cluster cannot show them here: a
preview that would disrupt running machines stops it, the bootstrap's by its component type, not
its name; every preview and up runs with the policy pack, whose violation stops it; a bootstrap that does not hand over is
gathered (the gather runs SSH to the bootstrap, which no test may reach) and the bundle named; an
interrupted earlier run is pointed at tools.recover; a missing or unfit tool stops it before any
work, one line each (exit 2); a name this machine does not resolve stops it right after the first
up, before any wait. The whole install runs for real in tests/localcloud/test_install_kvm.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
import time
from importlib.metadata import version as package_version
from pathlib import Path
from types import SimpleNamespace

import pytest
from pulumi import automation as auto

from cluster.addresses import plan_addresses
from cluster.config import ClusterConfig, load_config
from ocp import approver, checks, driver
from ocp.__main__ import main
from ocp.version import run_message
from tests.conftest import stack_config, with_section
from tools import toolchain

PACK = [str(driver.PROJECT / "policy" / "run")]
# What every up of the driver is given: the pack, and the message the history keeps (python -m ocp status reads it).
UP = {"policy_packs": PACK, "message": run_message("up")}
REAL_STREAM = driver._stream  # before a test stands in for it


def urn(kind: str, name: str, parent: str = "", stack: str = "kvm") -> str:
    """The engine's URN: the parent's type, then the resource's, in its type chain."""
    parent_type = parent.split("::")[2].rsplit("$", 1)[-1] + "$" if parent else ""
    return f"urn:pulumi:{stack}::ocp::{parent_type}{kind}::{name}"


def step(op: str, kind: str, name: str, parent: str = "", stack: str = "kvm") -> SimpleNamespace:
    state = SimpleNamespace(parent=parent)
    return SimpleNamespace(op=auto.OpType(op), type=kind, urn=urn(kind, name, parent, stack), old=state, new=None)


class FakeStack:
    """What the driver asks of an Automation API stack, answered from lists; what it was asked with, recorded."""

    def __init__(
        self, steps, outputs, up_error: Exception | None = None, policy=(), preview_error: Exception | None = None, backend: str = "file:///nonexistent",
        deployment: dict | None = None,
    ):
        self.name = "kvm"
        # What `pulumi stack export` gives (the driver checks the state's commands in it): no resources by default.
        self.deployment = deployment or {"resources": []}
        self.exports = 0
        # Its backend, where the driver reads the stack's lock (ocp/locks.py): by default a file backend holding none.
        self.workspace = SimpleNamespace(who_am_i=lambda: SimpleNamespace(url=backend), work_dir="/", project_settings=lambda: SimpleNamespace(name="ocp"))
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

    def export_stack(self):
        self.exports += 1
        return SimpleNamespace(deployment=self.deployment)

    def set_config(self, key, value, path=False):
        self.config[key] = value.value

    def get_all_config(self):
        return {}

    def destroy(self, on_event, **options):
        self.asked.append(("destroy", options))


def stand_ins(directory: Path, tools: dict[str, str]) -> str:
    """A PATH of only these tools, each a script printing its text (`version` answers)."""
    directory.mkdir(exist_ok=True)
    for name, text in tools.items():
        (directory / name).write_text(f"#!/bin/sh\nprintf '%s\\n' '{text}'\n")
        (directory / name).chmod(0o755)
    return str(directory)


# What `openshift-install version` of a 4.19 release prints.
INSTALLER_4_19 = "openshift-install 4.19.0\nrelease image quay.io/openshift-release-dev/ocp-release@sha256:0123"
TOOLS = {"openshift-install": INSTALLER_4_19, "oc": "Client Version: 4.19.0"}


@pytest.fixture
def installing(monkeypatch, tmp_path):
    """The driver on a FakeStack, with a PATH of stand-in tools, the API's name resolving (to the
    played cluster's loopback) and the installer's waits answered from `streams`."""
    def prepare(stack: FakeStack, streams: dict[str, bool], tools: dict[str, str] = TOOLS, resolved=("127.0.0.1",), **settings):
        config = SimpleNamespace(
            installer=SimpleNamespace(binary="openshift-install", assets_dir=str(tmp_path / "assets"), oc="oc"),
            bootstrap=SimpleNamespace(enabled=True),
            workers=SimpleNamespace(ready_timeout=40),
            cluster_domain="kvm4.lab.local",
            capabilities=None,
            platform="libvirt",
            integrated=False,
            openstack=None,
        )
        for key, value in settings.items():
            setattr(config, key, value)
        monkeypatch.setenv("PATH", stand_ins(tmp_path / "bin", tools))
        monkeypatch.setattr(checks, "resolves", lambda host: list(resolved) if host == f"api.{config.cluster_domain}" else [])
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
    assert stack.asked == [("preview", {"policy_packs": PACK}), ("up", UP)] * 2


def test_the_masters_certificates_are_approved_beside_the_bootstrap_wait_and_only_then(installing, monkeypatch):
    """The installer's approve-csr.service is masked (ignition/nodes.py): step 3 runs approval passes beside
    `wait-for bootstrap-complete` that may take the masters' requests (bootstrap=True, every master and worker
    wanted), stopped when the wait ends; step 5's passes do not (tests/ocp/test_approver.py judges them)."""
    nodes = {"kvm4-bootstrap": ["192.168.126.10"], "kvm4-master-0": ["192.168.126.20"], "kvm4-worker-0": ["192.168.126.30"]}
    stack = FakeStack([], {**OUTPUTS, "nodes": nodes})
    ran = installing(stack, {})
    passes: list[tuple[str, bool, frozenset]] = []
    handed_over: list[bool] = []  # once `wait-for bootstrap-complete` has returned

    def one_pass(kube, nodes_, domain, created=None, **rules):
        passes.append(("after the wait" if handed_over else "beside the wait", rules["bootstrap"], frozenset(nodes_)))
        return approver.Pass((), frozenset(n for n in nodes_ if "-bootstrap" not in n))

    def stream(command, say, timeout, cwd, hidden=()):
        ran.append(command)
        if command[1:3] == ["wait-for", "bootstrap-complete"]:
            time.sleep(1.5)  # the bootstrap's wait, with the approver's passes beside it
            handed_over.append(True)
        return True

    monkeypatch.setattr(approver, "one_pass", one_pass)
    monkeypatch.setattr(driver, "_stream", stream)
    said: list[str] = []
    driver.install("kvm", said.append)
    assert passes == [("beside the wait", True, frozenset(nodes)), ("after the wait", False, frozenset(nodes))], passes
    assert not [thread for thread in threading.enumerate() if thread.name == "csr-approver"]


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


@pytest.fixture
def dev_stack_file(monkeypatch, tmp_path):
    """The driver on the dev stack file (integrated: its bootstrap has a floating IP), its installer directory in
    tmp_path, the API's name resolving; call it after `installing`, whose stand-in config it replaces."""
    def prepare() -> ClusterConfig:
        config = load_config(with_section(stack_config("dev"), "installer", dir=str(tmp_path / "assets")))
        monkeypatch.setattr(driver, "_config", lambda s: config)
        monkeypatch.setattr(checks, "resolves", lambda host: ["127.0.0.1"])
        return config

    return prepare


def test_a_bootstrap_that_does_not_hand_over_is_gathered_from_the_stack_file_and_the_bundle_named(installing, dev_stack_file, monkeypatch, tmp_path):
    """The gather's words come from the stack file and the plan, the bootstrap's floating IP from the state as an
    IP address alone, and it runs without a shell: the `bootstrapGather` output (a writer of the state could
    put anything there) never runs."""
    owned = tmp_path / "owned"
    gather = f"openshift-install gather bootstrap --dir assets/dev --bootstrap 203.0.113.9 --master 10.0.0.10; touch {owned}"
    stack = FakeStack([step("create", "openstack:compute/instance:Instance", "ocp4-bootstrap-node")], {**UP_OUTPUTS, "bootstrapGather": gather})
    ran = installing(stack, {"wait-for": False})
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:/usr/bin:/bin")  # a shell and touch, as any machine has
    config = dev_stack_file()

    def stream(command, say, timeout, cwd, hidden=()):
        ran.append(command)
        return False if command[1:2] == ["wait-for"] else REAL_STREAM(command, say, timeout, cwd, hidden)  # the gather: the real one

    monkeypatch.setattr(driver, "_stream", stream)
    said: list[str] = []
    with pytest.raises(driver.Stop, match=rf"the log bundle is in {tmp_path / 'assets'} \(log-bundle-\*\.tar\.gz\)"):
        driver.install("dev", said.append)
    assert not owned.exists()
    assert ran[-1] == [
        "openshift-install", "gather", "bootstrap", "--dir", str(tmp_path / "assets"), "--bootstrap", "203.0.113.9",
        *[word for master in plan_addresses(config).masters for word in ("--master", str(master.ip))],
    ]
    assert f"the bootstrap did not complete: gathering its logs ({shlex.join(ran[-1])})" in said
    assert "  " + INSTALLER_4_19.splitlines()[0] in said  # the stand-in installer ran, as the gather
    # An address that is no IP address: nothing is gathered.
    stack.values["bootstrapGather"] = "openshift-install gather bootstrap --bootstrap '203.0.113.9; touch /tmp/owned'"
    with pytest.raises(driver.Stop, match=r"^the bootstrap did not complete$"):
        driver.install("dev", said.append)
    assert not owned.exists() and ran[-1][1] == "wait-for"
    # Nothing was torn down: the bootstrap stays for the user to look at.
    assert stack.config == {} and stack.ups == 2
    # The credentials the installer's wait-for reads, only for the owner.
    assert oct((tmp_path / "assets" / "auth" / "kubeconfig").stat().st_mode & 0o777) == "0o600"
    assert (tmp_path / "assets" / "auth" / "kubeadmin-password").read_text() == "secret-password"
    # The installer directory it made, and auth/, too.
    assert [oct(path.stat().st_mode & 0o777) for path in (tmp_path / "assets", tmp_path / "assets" / "auth")] == ["0o700", "0o700"]


# ---- the state's commands (cluster/state_scripts.py): this program's, or nothing of the state runs

DRAIN = "ocp4-workers-worker-0-drain"
TAMPERED = {
    "resources": [
        {
            "urn": f"urn:pulumi:kvm::ocp::ocp:openstack:Cluster$ocp:openstack:NodePool$command:local:Command::{DRAIN}",
            "type": "command:local:Command", "custom": True, "id": f"{DRAIN}0a1b2c3d",
            "inputs": {"create": "true", "delete": "touch /tmp/owned", "interpreter": ["/bin/bash", "-c"]},
            "outputs": {"create": "true", "delete": "touch /tmp/owned", "interpreter": ["/bin/bash", "-c"], "stdout": "", "stderr": ""},
        }
    ]
}
NAMED = f"  {DRAIN}: delete is not this program's script for the drain of a worker (nor an earlier release's)"


def test_install_stops_before_its_preview_on_a_state_whose_commands_are_not_the_programs(installing, dev_stack_file):
    stack = FakeStack([step("create", "openstack:compute/instance:Instance", "ocp4-master-0")], UP_OUTPUTS, deployment=TAMPERED)
    ran = installing(stack, {})
    dev_stack_file()
    with pytest.raises(driver.Stop) as stopped:
        driver.install("kvm", [].append, go_on=True)
    assert NAMED in str(stopped.value).splitlines()
    assert stack.asked == [] and ran == [] and stack.exports == 1


def test_the_bootstraps_teardown_checks_the_state_again(installing, dev_stack_file):
    """Written while the install waited for the bootstrap: the teardown would run the bootstrap's deletes from it."""

    class WrittenDuringTheWait(FakeStack):
        def export_stack(self):
            self.exports += 1
            return SimpleNamespace(deployment=TAMPERED if self.exports > 1 else {"resources": []})

    stack = WrittenDuringTheWait([step("create", "openstack:compute/instance:Instance", "ocp4-master-0")], UP_OUTPUTS)
    ran = installing(stack, {})
    dev_stack_file()
    said: list[str] = []
    with pytest.raises(driver.Stop) as stopped:
        driver.install("kvm", said.append)
    assert NAMED in str(stopped.value).splitlines()
    assert ran[-1][:3] == ["openshift-install", "wait-for", "bootstrap-complete"] and stack.exports == 2
    assert stack.ups == 1 and stack.config == {} and not any(line.startswith("4/6") for line in said)


@pytest.mark.parametrize("args", [["up", "--yes"], ["destroy", "--yes"], ["up", "--yes", "--replace", f"urn:pulumi:kvm::ocp::command:local:Command::{DRAIN}"]])
def test_up_and_destroy_stop_on_it_whatever_the_flags(installing, dev_stack_file, capsys, args):
    stack = FakeStack([step("delete", "command:local:Command", DRAIN)], UP_OUTPUTS, deployment=TAMPERED)
    installing(stack, {})
    dev_stack_file()
    assert main([*args, "--stack", "kvm"]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert errors[0].startswith("stopped: the state of stack kvm holds commands this program would not run") and NAMED in errors
    assert "restore its last good version from the bucket's object versioning" in errors[-1]
    assert stack.asked == [] and stack.exports == 1


def test_a_kubeconfig_output_that_would_run_a_program_is_not_written_nor_used(installing, monkeypatch, tmp_path):
    """approve-csrs reads the stack's outputs without an up: oc would run the kubeconfig's exec."""
    kubeconfig = "apiVersion: v1\nusers:\n- name: admin\n  user:\n    exec:\n      command: /bin/sh\n      args: [-c, touch /tmp/owned]\n"
    installing(FakeStack([], {**UP_OUTPUTS, "kubeconfig": kubeconfig}), {})
    approved: list = []
    monkeypatch.setattr(driver, "approve_until_ready", lambda *args, **kwargs: approved.append(args) or True)
    with pytest.raises(driver.Stop, match=r"^the stack output kubeconfig is a kubeconfig whose users have exec: "):
        driver.approve("kvm", [].append, 60)
    assert approved == [] and not (tmp_path / "assets" / "auth" / "kubeconfig").exists()


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
    return rules_stack_in(tmp_path)


def rules_stack_in(work: Path, program: str = RULES_PROGRAM) -> auto.Stack:
    """A stack of `program` on the toolchain's real CLI and language host, a file backend in `work`."""
    for name in ("pulumi", "pulumi-language-python"):
        if toolchain.binary(name) is None:
            pytest.skip(toolchain.missing(name))
    project = work / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: rules\nruntime: python\n")
    (project / "__main__.py").write_text(program)
    (work / "state").mkdir()
    env = {**toolchain.pulumi_env(work / "home", work / "state", driver.PROJECT / "venv"), "PULUMI_CONFIG_PASSPHRASE": "test"}
    command = auto.PulumiCommand(root=str(toolchain.BIN.parent))
    return auto.create_stack("rules", work_dir=str(project), opts=auto.LocalWorkspaceOptions(env_vars=env, pulumi_command=command))


def test_the_real_engine_runs_the_pack_and_its_refusal_stops_the_driver(engine_stack):
    """A /8 and a /9 of public space (each passes alone, a /8 is the widest): the engine runs policy/run, its
    stack rule refuses the sum, and the driver stops before any `up`; the /8 alone previews and updates."""
    said: list[str] = []
    engine_stack.set_config("halves", auto.ConfigValue('["11.0.0.0/8", "12.0.0.0/9"]'))
    with pytest.raises(driver.Stop) as stopped:
        driver.preview(engine_stack, said.append, go_on=False)
    assert str(stopped.value).startswith(
        "pulumi preview: the guard rails (policy/README.md) refuse it: no-world-open-ports-together (node-ports-11.0.0.0_8): "
        "node-ports-11.0.0.0_8, node-ports-12.0.0.0_9 (security group g) together open tcp 30000-32767 to the world (from "
    ), str(stopped.value)
    engine_stack.set_config("halves", auto.ConfigValue('["11.0.0.0/8"]'))
    assert driver.preview(engine_stack, said.append, go_on=False) == 2
    driver.up(engine_stack, said.append, 2)
    assert said[-1].startswith("up: 2 changed in")


# ---- what the driver checks before it waits: its tools, and the API's name

UP_OUTPUTS = {
    **OUTPUTS,
    "apiVip": "10.0.0.5", "ingressVip": "10.0.0.7", "apiFloatingIp": "203.0.113.5", "ingressFloatingIp": "203.0.113.7",
    "etcHosts": "203.0.113.5 api.kvm4.lab.local api-int.kvm4.lab.local\n203.0.113.7 console-openshift-console.apps.kvm4.lab.local\n",
}


def test_a_name_that_does_not_resolve_stops_the_install_right_after_the_first_up(installing):
    """The API's floating IP is known once `up` made it: the records to make come then, not after the bootstrap's wait."""
    stack = FakeStack([step("create", "libvirt:index/domain:Domain", "kvm4-control-plane-master-0-domain")], UP_OUTPUTS)
    ran = installing(stack, {}, resolved=())
    said: list[str] = []
    with pytest.raises(driver.Stop) as stopped:
        driver.install("kvm", said.append)
    assert stack.ups == 1 and ran == []  # no wait-for ran, nothing else changed
    assert said[-1].startswith("up: ") and not any(line.startswith("3/6") for line in said)
    assert str(stopped.value) == (
        "nothing here resolves api.kvm4.lab.local, which the waits and the approvals reach the API by: make these DNS records\n"
        "  api.kvm4.lab.local  A  203.0.113.5\n"
        "  *.apps.kvm4.lab.local  A  203.0.113.7\n"
        "or add these lines to /etc/hosts (`pulumi stack output etcHosts --stack kvm | sudo tee -a /etc/hosts`):\n"
        "  203.0.113.5 api.kvm4.lab.local api-int.kvm4.lab.local\n"
        "  203.0.113.7 console-openshift-console.apps.kvm4.lab.local\n"
        "then run the same command again: it goes on from here"
    )


def test_a_machine_network_mtu_under_ovn_kubernetes_needs_stops_the_install_right_after_the_first_up(installing):
    stack = FakeStack([step("create", "openstack:networking/network:Network", "dev-network-network")], {**UP_OUTPUTS, "networkMtu": 1350})
    ran = installing(stack, {})
    with pytest.raises(driver.Stop, match=r"^the machine network's MTU is 1350: OVN-Kubernetes needs at least 1380"):
        driver.install("kvm", [].append)
    assert stack.ups == 1 and ran == []
    assert checks.mtu_problem({"networkMtu": 1380}) is None and checks.mtu_problem({"networkMtu": None}) is None


def test_a_stack_without_floating_ips_is_told_its_names_lead_to_the_vips():
    """A provider network, or a subnet its owners route: clients reach the VIPs themselves."""
    outputs = {**UP_OUTPUTS, "apiFloatingIp": None, "ingressFloatingIp": None, "etcHosts": "10.0.0.5 api.ocp4.lab api-int.ocp4.lab\n"}
    said = checks.name_problem("ocp4.lab", outputs, "dev", openstack=True)
    assert said is not None and "  api.ocp4.lab  A  10.0.0.5\n" in said
    assert "(the stack has no API floating IP: the records name the API VIP 10.0.0.5, which this machine reaches on the machine network" in said
    assert "floating IP" not in checks.name_problem("ocp4.lab", outputs, "kvm")


def test_a_name_resolving_elsewhere_is_said_and_the_install_waits(installing, monkeypatch):
    stack = FakeStack([], UP_OUTPUTS)
    ran = installing(stack, {"wait-for": False}, resolved=("198.51.100.9",))
    said: list[str] = []
    with pytest.raises(driver.Stop, match="the bootstrap did not complete"):
        driver.install("kvm", said.append)
    assert "api.kvm4.lab.local resolves to 198.51.100.9 here, not to the API's 203.0.113.5: fix the record unless that address leads to the API" in said
    assert ran[0][:3] == ["openshift-install", "wait-for", "bootstrap-complete"]


def test_the_workers_wait_is_the_stacks_readytimeout_unless_the_flag_says_otherwise(installing, monkeypatch):
    """Issue 50, finding 5: bare-metal workers are inspected, cleaned and deployed before they boot (upstream's
    docs/user/openstack/deploy_baremetal_workers.md: "Long boot times ... may result in deployment timeout"), so the
    stack says how long `python -m ocp install` waits for them (ocp:workers.readyTimeout, minutes); --nodes-timeout wins."""
    waits: list[float] = []

    def approve(kube, nodes, workers, domain, deadline, say, **kwargs):
        waits.append(round((deadline - time.monotonic()) / 60))
        return True

    monkeypatch.setattr(driver, "approve_until_ready", approve)
    for flag, expected in ((None, 180), (25 * 60.0, 25)):
        stack = FakeStack([], UP_OUTPUTS)
        installing(stack, {}, workers=SimpleNamespace(ready_timeout=180))
        driver.install("kvm", lambda line: None, nodes_timeout=flag)
        assert waits[-1] == expected
    # The command line: no --nodes-timeout hands the stack's on; one in minutes, its own.
    calls: list = []
    monkeypatch.setattr(driver, "install", lambda *args, **kwargs: calls.append(args[4]))
    assert main(["install", "--stack", "kvm"]) == 0 and main(["install", "--stack", "kvm", "--nodes-timeout", "90"]) == 0
    assert calls == [None, 5400.0]


def test_this_machine_resolves_by_its_hosts_file():
    assert "127.0.0.1" in checks.resolves("localhost") and checks.resolves("") == []


def run_ocp(path: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m ocp` as a user runs it, with exactly this PATH."""
    return subprocess.run([sys.executable, "-m", "ocp", *args], cwd=driver.PROJECT, env={**os.environ, "PATH": path}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["install", "approve-csrs", "destroy"])
def test_without_the_pulumi_cli_each_command_says_how_to_get_it(command, tmp_path):
    done = run_ocp(stand_ins(tmp_path / "bin", {}), command, "--stack", "dev", *(["--yes"] if command == "destroy" else []))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"missing: pulumi: not on PATH (every command drives the Pulumi engine): install the Pulumi CLI {package_version('pulumi')} "
        "or later (https://www.pulumi.com/docs/iac/download-install/) and put it on PATH"
    ]


def test_a_pulumi_cli_older_than_the_sdk_is_refused(tmp_path):
    done = run_ocp(stand_ins(tmp_path / "bin", {"pulumi": "v3.100.0"}), "install", "--stack", "dev")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"missing: pulumi: {tmp_path / 'bin' / 'pulumi'} is v3.100.0, older than the Pulumi SDK this program runs on "
        f"({package_version('pulumi')}): install the Pulumi CLI {package_version('pulumi')} or later "
        "(https://www.pulumi.com/docs/iac/download-install/) and put it on PATH"
    ]


@pytest.mark.parametrize(
    ("tools", "settings", "lines"),
    [
        ({"oc": "x"}, {}, ["openshift-install: openshift-install is not found (ocp:installer.binary; "]),
        ({"openshift-install": INSTALLER_4_19}, {}, ["oc: oc is not found (ocp:installer.oc"]),
        # kubectl on PATH: the config may name it instead.
        ({"openshift-install": INSTALLER_4_19, "kubectl": "x"}, {}, ["oc: oc is not found (ocp:installer.oc: ", "or use the kubectl on PATH: `pulumi config set --path ocp:installer.oc kubectl`"]),
        ({}, {}, ["openshift-install: ", "oc: "]),
        ({**TOOLS, "openshift-install": "openshift-install 4.12.9\nrelease image quay.io/openshift-release-dev/ocp-release:4.12.9-x86_64"}, {},
         ["openshift-install: ", "installs OpenShift 4.12.9, older than 4.14 (the oldest this program installs is 4.14)"]),
        ({**TOOLS, "openshift-install": "openshift-install v1.4.17\nrelease image quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64"},
         {"capabilities": SimpleNamespace(baseline_capability_set="v4.18")},
         ["openshift-install: ", "installs OpenShift 4.17.3, older than 4.18 (ocp:capabilities.baselineCapabilitySet is v4.18)"]),
        # No openstack CLI on PATH: integrated mode's preflight reads the cloud with openstacksdk (cluster/cloud_probe.py).
        (TOOLS, {"integrated": True, "openstack": SimpleNamespace(skip_preflight=False)}, []),
    ],
)
def test_a_missing_or_unfit_tool_is_one_line_and_exit_2_before_any_work(installing, capsys, monkeypatch, tools, settings, lines):
    """`lines`: what the lines say, one per tool (`tool: ` first), fragments of the line before after it."""
    stack = FakeStack([], UP_OUTPUTS)
    installing(stack, {}, tools=tools, **settings)
    monkeypatch.setattr(driver, "approve_until_ready", lambda *args, **kwargs: True)  # no cluster here (tests/ocp/test_approver.py)
    code = main(["install", "--stack", "kvm"])
    errors = capsys.readouterr().err
    if not lines:
        assert code == 0 and "missing" not in errors
        return
    assert code == 2 and stack.asked == [] and "Traceback" not in errors
    said = errors.splitlines()
    tools_named = [text.split(":")[0] for text in lines if re.match(r"[a-z-]+: ", text)]
    assert [line.split(":")[1].strip() for line in said] == tools_named and all(line.startswith("missing: ") for line in said), errors
    for text in lines:
        assert text in errors, errors


def test_approve_csrs_needs_oc_and_not_the_installer(installing, capsys, monkeypatch):
    installing(FakeStack([], UP_OUTPUTS), {}, tools={})
    monkeypatch.setattr(driver, "approve_until_ready", lambda *args, **kwargs: True)
    assert main(["approve-csrs", "--stack", "kvm"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "missing: oc: oc is not found (ocp:installer.oc: the nodes' certificates are approved with it): "
        f"download openshift-client-linux from {checks.CLIENTS} and put oc on PATH"
    ]
