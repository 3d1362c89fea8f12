"""The kvm stack's whole life with the real engine, the libvirt plugin built here and the local
libvirt: `pulumi up`, day 2 (previews of the kvm catalogue against the offline preview, then
workers 2 -> 3 -> 1 and the bootstrap's teardown, applied), `pulumi destroy`. Judged through
libvirt (`virsh`), the stack's outputs and `pulumi preview --json`.

Real: the CLI and its Python host (toolchain/pins.toml), the libvirt plugin (built from
terraform-provider-libvirt v0.8.3 under the bridge: toolchain/pins.toml says why not pulumi-
libvirt's own), openshift-install (platform none: offline), libvirtd, QEMU and dnsmasq. Not
real: the command plugin (tools/command_standin, pinned to pulumi-command v1.2.1's source; the
module proxy refuses pulumi-command) and the machines' image (the stand-in boot sector: nothing
boots OpenShift here). One module-scoped stack: the tests run in order and build on each other.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import PULL_SECRET, ROOT, deploy, preview
from tests.localcloud.conftest import libvirt_exports
from tests.test_day2 import KVM_EDITS
from tools import toolchain
from tools.localcloud.libvirt import POOL, Libvirt
from tools.real_installer import stand_in_oc

STACK = "kvm"
PASSPHRASE = "lifecycle-only-passphrase"
PLUGIN = ROOT / ".toolchain" / "pulumi-home" / "plugins" / "resource-libvirt-v0.5.4" / "pulumi-resource-libvirt"
# Step ops of `pulumi preview --json`, as the offline preview names the action.
OPS = {"same": "same", "update": "update", "create": "create", "delete": "delete", "replace": "replace", "create-replacement": "replace", "delete-replaced": "replace"}


def _needs() -> str | None:
    for name in ("pulumi", "pulumi-language-python", "openshift-install"):
        if toolchain.binary(name) is None:
            return toolchain.missing(name)
    if not PLUGIN.is_file():
        return toolchain.missing("pulumi-resource-libvirt")
    return None


pytestmark = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))


@dataclass
class Stack:
    project: Path
    env: dict[str, str]
    libvirt: Libvirt
    base: dict[str, str]  # the deployed config, as tests.conftest's stack_config writes configs

    def pulumi(self, *args: str, stdin: str | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["pulumi", *args, "--stack", STACK, "--non-interactive"],
            cwd=self.project, env=self.env, input=stdin, capture_output=True, text=True, timeout=timeout,
        )

    def write_config(self, config: dict[str, str]) -> None:
        """The stack file with this config (objects as YAML objects), keeping the encrypted pull secret."""
        path = self.project / f"Pulumi.{STACK}.yaml"
        stack_file = yaml.safe_load(path.read_text())
        kept = {key: value for key, value in stack_file["config"].items() if key == "ocp:pullSecret"}
        written = {key: _structured(value) for key, value in config.items() if key != "ocp:pullSecret"}
        stack_file["config"] = {**written, **kept}
        path.write_text(yaml.safe_dump(stack_file, sort_keys=True))

    def steps(self, config: dict[str, str]) -> tuple[dict[str, str] | None, str]:
        """What `pulumi preview` does with this config: resource name -> action, or None and the output when it fails."""
        self.write_config(config)
        done = self.pulumi("preview", "--json")
        output = done.stdout + done.stderr
        try:  # --json puts the diagnostics' messages (refusals, warnings) in JSON strings: read them as text
            output = "\n".join(d.get("message", "") for d in json.loads(done.stdout).get("diagnostics", [])) + "\n" + output
        except ValueError:
            pass
        if done.returncode != 0:
            return None, output
        found: dict[str, str] = {}
        for step in json.loads(done.stdout)["steps"]:
            urn = step["urn"]
            # Custom resources only, as the offline preview lists them (components never diff).
            if "::pulumi:pulumi:Stack::" in urn or "::pulumi:providers:" in urn or urn.split("::")[2].split("$")[-1].startswith("ocp:"):
                continue
            name = urn.rsplit("::", 1)[1]
            action = OPS[step["op"]]
            if found.get(name, "same") == "same":
                found[name] = action
        return found, output


def _structured(value: str):
    return json.loads(value) if value[:1] in "[{" else value


def virsh(stack: Stack, *args: str) -> str:
    return stack.libvirt.virsh(*args).stdout


def domains(stack: Stack) -> dict[str, dict]:
    """Every domain: its state, vCPUs, memory (KiB), UUID and QEMU process (pid, start time)."""
    found = {}
    for name in stack.libvirt.names("list", "--all", "--name"):
        info = dict((k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in virsh(stack, "dominfo", name).splitlines() if ":" in line))
        pid_file = stack.libvirt.masked("run") / "qemu" / f"{name}.pid"
        pid = int(pid_file.read_text()) if pid_file.exists() else None
        started = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19] if pid else None
        found[name] = {"state": info["State"], "vcpus": int(info["CPU(s)"]), "memory": int(info["Max memory"].split()[0]), "uuid": info["UUID"], "qemu": (pid, started)}
    return found


@pytest.fixture(scope="module")
def stack(local_libvirt, tmp_path_factory) -> Stack:
    from tools.command_standin import install as install_command_standin

    exports = libvirt_exports(local_libvirt)
    work = tmp_path_factory.mktemp("kvm-lifecycle")
    project = work / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".toolchain", "venv", "build", "assets", "tests", "__pycache__", "Pulumi.*.yaml"))
    (project / "venv").symlink_to(ROOT / "venv")
    (work / "state").mkdir()
    env = toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv")
    env.update(PULUMI_CONFIG_PASSPHRASE=PASSPHRASE, LIBVIRT_DEFAULT_URI=exports["LIBVIRT_DEFAULT_URI"])
    installed = subprocess.run(["pulumi", "plugin", "install", "resource", "libvirt", "0.5.4", "--file", str(PLUGIN)], env=env, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    install_command_standin(work / "home", toolchain.binary("pulumi"), env)
    committed = yaml.safe_load((ROOT / f"Pulumi.{STACK}.yaml").read_text())["config"]
    libvirt = dict(committed["ocp:libvirt"], uri=exports["LIBVIRT_DEFAULT_URI"], image=exports["OCP_LIBVIRT_IMAGE"])
    if exports["OCP_LIBVIRT_DOMAIN_TYPE"] != "kvm":
        libvirt["domainType"] = exports["OCP_LIBVIRT_DOMAIN_TYPE"]
    # No registry here: the release lookups get the fake release's digests (tools/real_installer.py).
    installer = dict(committed["ocp:installer"], oc=str(stand_in_oc(work)))
    base = {key: json.dumps(value) if isinstance(value, (dict, list)) else str(value) for key, value in {**committed, "ocp:libvirt": libvirt, "ocp:installer": installer}.items()}
    base["ocp:pullSecret"] = PULL_SECRET
    created = Stack(project, env, local_libvirt, base)
    (project / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": {}}))
    assert created.pulumi("stack", "init").returncode == 0
    secret = created.pulumi("config", "set", "--secret", "ocp:pullSecret", stdin=PULL_SECRET)
    assert secret.returncode == 0, secret.stderr
    created.write_config(base)
    yield created
    if os.environ.get("OCP_KEEP_LIFECYCLE"):  # to look into a failure: the stack stays, with its project
        print(f"kept: the stack in {project} (PULUMI_HOME {work / 'home'}, backend {work / 'state'})")
        return
    created.pulumi("destroy", "--yes", "--skip-preview")  # after a failure: leave nothing behind


def test_up_creates_the_kvm_stack_in_libvirt(stack):
    began = time.monotonic()
    done = stack.pulumi("up", "--yes", "--skip-preview")
    seconds = time.monotonic() - began
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    print(f"pulumi up of the kvm stack: {seconds:.0f} s")
    config = {key: _structured(value) for key, value in stack.base.items()}
    cluster = config["ocp:clusterName"]
    # What the program asks for (the offline plan of the same config) is what libvirt runs.
    planned = {r["inputs"]["name"]: r["inputs"] for r in deploy(stack.base, STACK) if r["type"] == "libvirt:index/domain:Domain"}
    disk_sizes = {r["inputs"]["name"]: r["inputs"].get("size") for r in deploy(stack.base, STACK) if r["type"] == "libvirt:index/volume:Volume"}
    running = domains(stack)
    assert set(running) == set(planned) == {f"{cluster}-bootstrap", *(f"{cluster}-master-{i}" for i in range(3)), *(f"{cluster}-worker-{i}" for i in range(2))}
    for name, domain in running.items():
        assert domain["state"] == "running", name
        assert domain["vcpus"] == planned[name]["vcpu"] and domain["memory"] == planned[name]["memory"] * 1024, (name, domain)
        xml = virsh(stack, "dumpxml", name)
        assert re.search(rf"name=opt/com.coreos/config,file={re.escape(str(stack.libvirt.pool))}/{name}\.ign", xml), xml
        assert f"<domain type='{config['ocp:libvirt'].get('domainType', 'kvm')}'" in xml
        # Its disk: a copy-on-write layer in the pool over the base image, at the planned size.
        assert f"<source pool='{POOL}' volume='{name}.qcow2'" in xml.replace('"', "'")
        disk = json.loads(subprocess.run(["qemu-img", "info", "-U", "--output", "json", str(stack.libvirt.pool / f"{name}.qcow2")], capture_output=True, text=True, check=True).stdout)
        assert disk["virtual-size"] == disk_sizes[f"{name}.qcow2"] and disk["backing-filename"].endswith(".qcow2"), disk
    expected = planned
    volumes = stack.libvirt.names("vol-list", POOL)
    for name in expected:
        assert f"{name}.qcow2" in volumes and f"{name}.ign" in volumes
        ignition = json.loads((stack.libvirt.pool / f"{name}.ign").read_text())
        assert ignition["ignition"]["version"].startswith("3.")
    networks = stack.libvirt.names("net-list", "--name")
    assert len(networks) == 1
    network = virsh(stack, "net-dumpxml", networks[0]).replace('"', "'")
    assert "<range start='192.168.126.80' end='192.168.126.254'" in network
    for host in ("api", "api-int"):
        assert f"<hostname>{host}.{cluster}.{config['ocp:baseDomain']}</hostname>" in network
    for index, name in ((10, f"{cluster}-bootstrap"), (20, f"{cluster}-master-0"), (31, f"{cluster}-worker-1")):
        assert f"name='{name}' ip='192.168.126.{index}'" in network
    outputs = json.loads(stack.pulumi("stack", "output", "--json").stdout)
    assert outputs["apiVip"] == "192.168.126.5"
    assert outputs["kubeconfig"] == "[secret]" and outputs["kubeadminPassword"] == "[secret]"


def test_a_second_preview_changes_nothing(stack):
    steps, output = stack.steps(stack.base)
    assert steps is not None, output[-4000:]
    changed = {name: action for name, action in steps.items() if action != "same"}
    assert changed == {}, changed


def test_the_kvm_catalogue_previews_as_the_offline_preview_says(stack):
    """Every kvm edit of tests/test_day2.py, previewed by the real engine and plugin against the
    deployed stack, and by the offline preview against the same config: the same step for every
    resource, the same refusals, the same warnings."""
    deployed = deploy(stack.base, STACK)
    rows, disagreements = [], []
    for edit in KVM_EDITS:
        config = edit.change(stack.base)
        offline = preview(deployed, config, STACK)
        real, output = stack.steps(config)
        if offline.error is not None or real is None:
            agree = offline.error is not None and real is None and edit.refused is not None and edit.refused in output
            rows.append((edit.id, "refused" if offline.error else "ran", "refused" if real is None else "ran", agree))
            if not agree:
                disagreements.append(f"{edit.id}: offline {offline.error!r}; real: {output[-1500:]}")
            continue
        offline_steps = {name: change.action for name, change in offline.changes.items() if not change.type.startswith("pulumi:")}
        differ = {name: (offline_steps.get(name, "absent"), real.get(name, "absent")) for name in set(offline_steps) | set(real) if offline_steps.get(name, "same") != real.get(name, "same")}
        warned = [key for key in edit.warns if key not in output]
        rows.append((edit.id, _summary(offline_steps), _summary(real), not differ and not warned))
        if differ or warned:
            disagreements.append(f"{edit.id}: offline vs real {differ}; warnings missing from the real run: {warned}")
    stack.write_config(stack.base)
    print("\n".join(f"{'agree' if agree else 'DIFFER':7} {edit:40} offline: {offline:40} real: {real}" for edit, offline, real, agree in rows))
    assert disagreements == [], "\n".join(disagreements)


def _summary(steps: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for action in steps.values():
        counts[action] = counts.get(action, 0) + 1
    return ", ".join(f"{count} {action}" for action, count in sorted(counts.items()))


def test_workers_2_3_1_and_the_bootstrap_teardown_leave_the_masters_running(stack):
    cluster = _structured(stack.base["ocp:clusterName"])
    before = domains(stack)
    masters = {name: before[name] for name in before if "-master-" in name}
    config = stack.base
    for count in (3, 1):
        config = {**config, "ocp:workers": json.dumps({**json.loads(config["ocp:workers"]), "count": count})}
        stack.write_config(config)
        done = stack.pulumi("up", "--yes", "--skip-preview")
        assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
        workers = sorted(name for name in domains(stack) if "-worker-" in name)
        assert workers == [f"{cluster}-worker-{index}" for index in range(count)]
    config = {**config, "ocp:bootstrap": json.dumps({**json.loads(config["ocp:bootstrap"]), "enabled": False})}
    stack.write_config(config)
    done = stack.pulumi("up", "--yes", "--skip-preview")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    after = domains(stack)
    assert f"{cluster}-bootstrap" not in after
    assert not any(name.startswith(f"{cluster}-bootstrap") for name in stack.libvirt.names("vol-list", POOL))
    # Not redefined (same UUID) and not restarted (the same QEMU process).
    assert {name: after[name] for name in masters} == masters
    stack.base = config


def test_destroy_leaves_no_domain_volume_or_network(stack):
    began = time.monotonic()
    done = stack.pulumi("destroy", "--yes", "--skip-preview")
    print(f"pulumi destroy of the kvm stack: {time.monotonic() - began:.0f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    assert stack.libvirt.names("list", "--all", "--name") == []
    assert stack.libvirt.names("net-list", "--all", "--name") == []
    assert stack.libvirt.names("vol-list", POOL) == []
