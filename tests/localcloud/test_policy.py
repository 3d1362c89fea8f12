"""The policy pack (policy/, issue 26 item 4) on real previews: the dev and standalone stacks
deployed by the real engine to the local cloud under the pack pass with no violation; a stack
edit that opens a port to the world, or SSH from elsewhere than the allowed CIDR, fails the
preview with a mandatory violation naming the rule and the resource; every taggable resource of
a real preview carries the cluster ID, and one without it is reported.

The pack runs as `pulumi preview --policy-pack policy/run` (an executable analyzer in the pack's
own virtualenv, policy/venv): the toolchain's Python host (v3.79) cannot run a directory pack for
this CLI (policy/README.md). The rules on crafted and offline resources: tests/policy/test_guard.py."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.localcloud.conftest import libvirt_exports
from tests.localcloud.engine import Stack, needs, structured
from tests.localcloud.openstack_stack import PLUGINS, openstack_stack
from tools.real_installer import stand_in_oc

sys.path.insert(0, str(ROOT / "policy"))
import guard  # noqa: E402  (the pack's rules, as the pack imports them)
from pulumi_policy import ResourceValidationArgs  # noqa: E402

PACK = ROOT / "policy" / "run"
VENV = ROOT / "policy" / "venv"
pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))


@pytest.fixture(scope="module")
def pack() -> Path:
    """The pack's virtualenv, made from policy/requirements.txt (PyPI) when it is not there: the CLI
    installs no dependencies for a local pack."""
    python = VENV / "bin" / "python"
    ready = python.exists() and subprocess.run([str(python), "-c", "import pulumi_policy, yaml"], capture_output=True).returncode == 0
    if not ready:
        made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        installed = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(ROOT / "policy" / "requirements.txt")], capture_output=True, text=True
        )
        assert installed.returncode == 0, installed.stderr[-3000:]
    return PACK


@pytest.fixture(scope="module", params=["dev", "standalone"])
def stack(request, cloud, cloud_env, pack, tmp_path_factory) -> Iterator[Stack]:
    yield from openstack_stack(request.param, tmp_path_factory.mktemp(f"{request.param}-policy"), cloud, cloud_env)


def _edited(stack: Stack, **openstack) -> dict[str, str]:
    """The stack's config with keys of ocp:openstack changed."""
    section = structured(stack.base["ocp:openstack"])
    return {**stack.base, "ocp:openstack": json.dumps({**section, **openstack})}


def _policy_preview(stack: Stack, config: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    stack.write_config(config)
    try:
        return stack.pulumi("preview", "--policy-pack", str(PACK), *extra)
    finally:
        stack.write_config(stack.base)


def _timed(stack: Stack, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = stack.pulumi(*args)
    return done, time.monotonic() - began


def test_the_committed_stack_previews_with_no_violation(stack):
    """Before the first `pulumi up` the infra ID (hence every tag) is unknown: the tag rule says it
    cannot judge them yet (advisory), the rest pass."""
    bare, without = _timed(stack, "preview")
    assert bare.returncode == 0, (bare.stdout + bare.stderr)[-4000:]
    done, within = _timed(stack, "preview", "--policy-pack", str(PACK))
    print(f"pulumi preview of a new {stack.name} stack: {without:.1f} s without the pack, {within:.1f} s with it")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "[mandatory]" not in done.stdout
    advisories = [line.strip() for line in done.stdout.splitlines() if "[advisory]" in line]
    assert advisories and all(line.startswith("- [advisory]  tagged-with-cluster-id  (openstack:") for line in advisories), advisories
    assert "string value at .tags can't be known during preview" in done.stdout


@pytest.mark.parametrize("sources", [["0.0.0.0/0"], ["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3"], ["0.0.0.0/1", "128.0.0.0/1"]])
def test_node_ports_open_to_the_world_stop_the_program_before_the_pack(stack, sources):
    """The world by measure (cluster/exposure.py): the program refuses the key before any resource,
    so the pack has nothing to judge; the pack's own refusal of such rules on the real engine:
    tests/ocp/test_up.py."""
    done = _policy_preview(stack, _edited(stack, nodePortAllowedCidrs=sources))
    print(done.stdout[-3000:])
    assert done.returncode != 0
    assert f"ocp:openstack.nodePortAllowedCidrs: [{', '.join(sources)}] admits 3,702,258,688 public IPv4 addresses" in done.stdout + done.stderr
    assert "[mandatory]" not in done.stdout


def test_ssh_only_from_the_allowed_cidr(stack, tmp_path):
    rule = "ocp4-bootstrap-bootstrap-tcp-22-{}"
    # The stack's own config is where the pack reads the allowed CIDR: moving it moves the rule, allowed.
    moved = _policy_preview(stack, _edited(stack, sshAllowedCidr="203.0.113.0/24"))
    assert moved.returncode == 0, moved.stdout[-3000:]
    # A CIDR pinned in the policy config wins: the same edit is refused.
    pinned = tmp_path / "policy-config.json"
    pinned.write_text(json.dumps({"ssh-from-allowed-cidr": {"sshAllowedCidr": "192.168.122.0/24"}}))
    refused = _policy_preview(stack, _edited(stack, sshAllowedCidr="203.0.113.0/24"), "--policy-pack-config", str(pinned))
    print(refused.stdout[-2000:])
    assert refused.returncode != 0
    name = rule.format("203.0.113.0_24")
    assert f"[mandatory]  ssh-from-allowed-cidr  (openstack:networking:SecGroupRule: {name})" in refused.stdout
    assert (
        f"{name} admits SSH (tcp 22) from 203.0.113.0/24: SSH may come only from 10.0.0.0/16, 192.168.122.0/24 "
        "(read from the policy config)"
    ) in refused.stdout
    # SSH from the world: the program refuses the key before any resource (the pack would refuse the rule).
    world = _policy_preview(stack, _edited(stack, sshAllowedCidr="0.0.0.0/0"))
    assert world.returncode != 0
    assert "ocp:openstack.sshAllowedCidr: 0.0.0.0/0 admits SSH" in world.stdout + world.stderr


def test_up_under_the_pack_then_preview_report_nothing(stack):
    """The update judges every resource's resolved inputs, tags included: the committed stack
    deploys under the pack, then previews with no violation and no advisory."""
    done, took = _timed(stack, "up", "--yes", "--policy-pack", str(PACK))
    print(f"pulumi up --policy-pack of {stack.name}: {took:.0f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert "\u2705 ocp-guard-rails" in done.stdout and "[mandatory]" not in done.stdout
    bare, without = _timed(stack, "preview")
    assert bare.returncode == 0, bare.stderr[-3000:]
    previewed, within = _timed(stack, "preview", "--policy-pack", str(PACK))
    print(f"pulumi preview of the deployed {stack.name} stack: {without:.1f} s without the pack, {within:.1f} s with it")
    assert previewed.returncode == 0, (previewed.stdout + previewed.stderr)[-4000:]
    assert "\u2705 ocp-guard-rails" in previewed.stdout
    assert "[mandatory]" not in previewed.stdout and "[advisory]" not in previewed.stdout, previewed.stdout[-4000:]


def test_every_taggable_resource_of_a_real_preview_carries_the_cluster_id(stack):
    """The real preview's inputs through the pack's rule: each resource whose type can carry tags
    (or metadata, for volumes) is judged and passes; with its cluster ID taken away it is reported."""
    done = stack.pulumi("preview", "--json", "--show-sames")
    assert done.returncode == 0, done.stderr[-3000:]
    states = [step["newState"] for step in json.loads(done.stdout)["steps"]]
    taggable = _sdk_taggable()
    judged = 0
    for state in states:
        kind = state["type"]
        if kind not in taggable:
            continue
        inputs = state["inputs"]
        assert kind in guard.TAGGED | guard.METADATA, f"{kind} can carry tags: the pack does not judge it"
        name = state["urn"].rsplit("::", 1)[1]
        assert _violations(guard.validate_tagged, kind, name, inputs) == [], name
        stripped = dict(inputs, tags=[t for t in inputs.get("tags", []) if not t.startswith("openshiftClusterID=")])
        stripped["metadata"] = {k: v for k, v in (inputs.get("metadata") or {}).items() if k != "openshiftClusterID"}
        assert _violations(guard.validate_tagged, kind, name, stripped) == [
            f"{name} ({kind.rsplit(':', 1)[1]}) carries no cluster ID in its "
            + ("tags (openshiftClusterID=<infra ID>)" if kind in guard.TAGGED else "metadata (openshiftClusterID: <infra ID>)")
            + ": the installer's destroy and the cluster's own cleanup find what belongs to the cluster by it."
        ]
        judged += 1
    assert judged >= 20


def _sdk_taggable() -> set[str]:
    """The OpenStack SDK's resource types whose arguments have `tags` or `metadata` (each class
    registers its type token in its module's source)."""
    import pulumi

    found = set()
    for module in ("blockstorage", "compute", "images", "networking", "loadbalancer", "objectstorage", "sharedfilesystem"):
        folder = Path(importlib.import_module("pulumi_openstack").__file__).parent / module
        for file in sorted(folder.glob("*.py")):
            source = importlib.import_module(f"pulumi_openstack.{module}.{file.stem}")
            for name, cls in list(vars(source).items()):
                args = vars(source).get(f"{name}Args")
                if isinstance(cls, type) and issubclass(cls, pulumi.CustomResource) and cls.__module__ == source.__name__ and args and {"tags", "metadata"} & set(vars(args)):
                    text = file.read_text()
                    found.add(text.split(f"super({name}, __self__).__init__(", 1)[1].split("'", 2)[1])
    return found


def _violations(validate, kind: str, name: str, props: dict, config: dict | None = None) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(kind, props, f"urn:pulumi:dev::ocp::{kind}::{name}", name, None, None, config)  # type: ignore[arg-type]
    validate(args, lambda message, urn=None: found.append(message))
    return found


def test_a_real_kvm_preview_passes_the_pack(local_libvirt, pack, tmp_path):
    """The libvirt stack through the real engine and the libvirt plugin: nothing to judge, nothing fails."""
    exports = libvirt_exports(local_libvirt)

    def local(committed: dict) -> dict:
        libvirt = dict(committed["ocp:libvirt"], uri=exports["LIBVIRT_DEFAULT_URI"], image=exports["OCP_LIBVIRT_IMAGE"])
        if exports["OCP_LIBVIRT_DOMAIN_TYPE"] != "kvm":
            libvirt["domainType"] = exports["OCP_LIBVIRT_DOMAIN_TYPE"]
        return {**committed, "ocp:libvirt": libvirt, "ocp:installer": dict(committed["ocp:installer"], oc=str(stand_in_oc(tmp_path)))}

    kvm = Stack.create("kvm", tmp_path, {"LIBVIRT_DEFAULT_URI": exports["LIBVIRT_DEFAULT_URI"]}, [("libvirt", "0.5.4")], local)
    done = kvm.pulumi("preview", "--policy-pack", str(pack))
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "\u2705 ocp-guard-rails" in done.stdout and "[mandatory]" not in done.stdout and "[advisory]" not in done.stdout
