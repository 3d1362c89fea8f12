"""The bootstrap helper's SSH (bootstrap.configSource: helper): the host key it is given at boot,
the upload pinned to it, the user's own key kept out of the state, and the upload run for real
with OpenSSH against an sshd in a network namespace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from harness import netns
from tests.conftest import deploy, preview, run, stack_config, with_helper, with_section
from tools.mock_run import ProgramRun, unwrap
from tools.plan import write_plan

UPLOAD = "ocp4-bootstrap-helper-ssh-upload"
HELPER = "ocp4-bootstrap-helper-server"
SSHD = "/usr/sbin/sshd"


def helper_stack(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The dev stack served by the helper, logging in with a key file of its own (a real key)."""
    key = tmp_path / "deployer" / "id_ed25519"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "deployer", "-f", str(key)], check=True)
    config = with_helper(stack_config("dev", sshKey=key.with_suffix(".pub").read_text().strip()))
    return with_section(config, "bootstrap", helper={"sshPrivateKeyFile": str(key)}), key


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[ProgramRun, Path, Path]:
    """The program's run, its offline plan's directory, and the deployer's key file."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (Debian package openssh-client)")
    tmp_path = tmp_path_factory.mktemp("helper")
    config, key = helper_stack(tmp_path)
    program_run = run(config)
    write_plan(program_run, tmp_path / "plan")
    return program_run, tmp_path / "plan", key


def plan_resource(plan: Path, name: str) -> dict:
    return next(r for r in json.loads((plan / "resources.json").read_text()) if r["name"] == name)


def helper_user_data(program_run: ProgramRun, plan: Path) -> dict:
    hostname = f"{program_run.outputs['infraId']}-bootstrap-helper"
    return yaml.safe_load((plan / "nodes" / hostname / "user_data").read_text().removeprefix("#cloud-config\n"))


def helper_user_data_of(program_run: ProgramRun) -> dict:
    return yaml.safe_load(unwrap(program_run.by_name(HELPER).inputs["userData"]).removeprefix("#cloud-config\n"))


def test_the_helper_gets_a_host_key_at_boot_and_the_upload_pins_the_same_key(planned):
    program_run, plan, _ = planned
    keys = helper_user_data(program_run, plan)["ssh_keys"]
    assert set(keys) == {"ed25519_private", "ed25519_public"}
    private = load_ssh_private_key(keys["ed25519_private"].encode(), None)
    public = private.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    assert keys["ed25519_public"].split()[:2] == public.split()
    # The plan shows the pin (public), and keeps the helper's user_data secret: it holds the private key.
    upload = plan_resource(plan, UPLOAD)
    assert upload["type"] == "command:local:Command"
    assert upload["inputs"]["environment"]["HELPER_HOST_KEY"] == keys["ed25519_public"]
    assert plan_resource(plan, HELPER)["inputs"]["userData"] == "[secret]"
    state = {r["name"]: r for r in json.loads((plan / "state.json").read_text())}
    assert "userData" in state[HELPER]["secretInputs"]
    assert keys["ed25519_private"] not in (plan / "resources.json").read_text() + (plan / "outputs.json").read_text()
    # The script ssh runs from: the pin is the only key it knows, and checked strictly.
    script = unwrap(program_run.by_name(UPLOAD).inputs["create"])
    for option in ("StrictHostKeyChecking=yes", "HostKeyAlgorithms=ssh-ed25519", "GlobalKnownHostsFile=/dev/null", "KnownHostsCommand=none"):
        assert f"-o {option}" in script


def test_the_users_private_key_stays_out_of_the_state_and_the_plan(planned):
    program_run, plan, key = planned
    # Its base64 lines but the first, which every unencrypted ed25519 key file shares.
    lines = key.read_text().strip().splitlines()[2:-1]
    assert len(lines) >= 3
    files = [path for path in plan.rglob("*") if path.is_file()]
    assert len(files) > 10
    seen = [path.read_text(errors="replace") for path in files]
    seen += [json.dumps(program_run.state()), json.dumps([r.inputs for r in program_run.resources])]
    for text in seen:
        assert not [line for line in lines if line in text or line in text.replace("\\n", "")]
    # ssh reads the file by its path, at run time.
    assert unwrap(program_run.by_name(UPLOAD).inputs["environment"])["HELPER_KEY_FILE"] == str(key)


def test_the_next_up_of_a_deployed_helper_keeps_its_key_and_its_pin(tmp_path):
    config, _ = helper_stack(tmp_path)
    state = deploy(config)
    result = preview(state, config)
    assert result.error is None, result.error
    assert result.changes[UPLOAD].action == "same" and result.changes[UPLOAD].fields == ()
    assert result.changes[HELPER].action == "same"
    pinned = [unwrap(item["inputs"]["environment"])["HELPER_HOST_KEY"] for item in state if item["name"] == UPLOAD]
    again = next(r for r in result.registered if r.name == UPLOAD)
    assert pinned == [unwrap(again.inputs["environment"])["HELPER_HOST_KEY"]]


# --------------------------------------------------------------------------- the upload, run for real


def _unavailable() -> str | None:
    if netns.unavailable():
        return netns.unavailable()
    if not Path(SSHD).exists() or shutil.which("ssh") is None:
        return "sshd or ssh is not installed (Debian packages openssh-server, openssh-client)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    return None


SSHD_CONFIG = """Port 22
ListenAddress {address}
HostKey {host_key}
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
LogLevel VERBOSE
"""
# sshd in a mount namespace of its own: a /run for its privilege separation directory, the
# helper's /srv, and a `sudo` that runs its arguments (this host has none), first on root's PATH.
SSHD_MOUNTS = (
    "mount -t tmpfs tmpfs /run && mkdir -m 0755 /run/sshd && mount --bind {srv} /srv && "
    "mount --bind {bin} /usr/local/sbin && exec {sshd} -D -e -f {config}"
)


class Helper:
    """The helper as the upload meets it: an sshd at the floating IP, in a namespace of its own,
    presenting `host_key`; what the upload writes to /srv lands in `srv`."""

    def __init__(self, lab: netns.Lab, tmp_path: Path, address: str, host_key: str, authorized: str):
        self.lab, self.srv = lab, tmp_path / "srv"
        self.srv.mkdir()
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
        (bin_dir / "sudo").chmod(0o755)
        key = tmp_path / "ssh_host_ed25519_key"
        key.write_text(host_key)
        key.chmod(0o600)
        (tmp_path / "authorized_keys").write_text(authorized)
        config = tmp_path / "sshd_config"
        config.write_text(SSHD_CONFIG.format(address=address, host_key=key, authorized_keys=tmp_path / "authorized_keys"))
        self.namespace = lab.namespace("helper")
        lab.attach(self.namespace, "eth0", f"{address}/24")
        self.argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                     SSHD_MOUNTS.format(srv=self.srv, bin=bin_dir, sshd=SSHD, config=config)]
        self.log = tmp_path / "sshd.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = self.lab.start(self.namespace, self.argv, stderr=self.log.open("w"))

    def stop(self) -> str:
        """Stops exactly the sshd it started (`ip netns exec` and `unshare` exec it: one PID)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        return self.log.read_text()


def deployer(lab: netns.Lab) -> str:
    """Where `pulumi up` runs: a namespace of its own on the helper's segment."""
    namespace = lab.namespace("deployer")
    lab.attach(namespace, "eth0", "203.0.113.254/24")
    return namespace


def upload(
    lab: netns.Lab, namespace: str, program_run: ProgramRun, tmp_path: Path, user: str, agent: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The program's upload command, as pulumi-command runs it (/bin/sh -c, its environment, the
    config on stdin), with this SSH agent or none; only the login is this host's `user`."""
    resource = program_run.by_name(UPLOAD)
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), **unwrap(resource.inputs["environment"]), "HELPER_USER": user}
    if agent:
        env["SSH_AUTH_SOCK"] = agent
    command = ["/bin/sh", "-c", unwrap(resource.inputs["create"])]
    return lab.run(namespace, command, env=env, input=unwrap(resource.inputs["stdin"]), timeout=120)


@pytest.fixture
def lab():
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    with netns.lab("helperssh") as instance:
        yield instance
    assert instance.leftovers() == []


def test_an_sshd_with_the_pinned_key_gets_the_config_once_it_answers(planned, lab, tmp_path):
    program_run, plan, key = planned
    environment = unwrap(program_run.by_name(UPLOAD).inputs["environment"])
    host_key = helper_user_data(program_run, plan)["ssh_keys"]["ed25519_private"]
    helper = Helper(lab, tmp_path, environment["HELPER_HOST"], host_key, key.with_suffix(".pub").read_text())
    namespace = deployer(lab)
    # The upload starts first, as with a helper still booting: it waits, then sends.
    started = time.monotonic()
    result: list[subprocess.CompletedProcess[str]] = []
    runner = threading.Thread(target=lambda: result.append(upload(lab, namespace, program_run, tmp_path, "root")))
    runner.start()
    time.sleep(2)
    helper.start()
    runner.join(timeout=150)
    log = helper.stop()
    assert result and result[0].returncode == 0, (result[0].stderr if result else "no result", log)
    assert time.monotonic() - started < 60
    served = helper.srv / "ignition"
    assert (served / "bootstrap.ign").read_text() == unwrap(program_run.by_name(UPLOAD).inputs["stdin"])
    shim = json.loads(unwrap(program_run.by_name("ocp4-bootstrap-node").inputs["userData"]))
    assert (served / "url-path").read_text().strip() == urlsplit(shim["ignition"]["config"]["merge"][0]["source"]).path
    assert "Accepted publickey for root" in log


def test_an_sshd_with_another_host_key_is_refused_before_anything_is_sent(planned, lab, tmp_path):
    program_run, _, key = planned
    environment = unwrap(program_run.by_name(UPLOAD).inputs["environment"])
    impostor = tmp_path / "impostor"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(impostor)], check=True)
    helper = Helper(lab, tmp_path, environment["HELPER_HOST"], impostor.read_text(), key.with_suffix(".pub").read_text())
    namespace = deployer(lab)
    helper.start()
    started = time.monotonic()
    result = upload(lab, namespace, program_run, tmp_path, "root")
    log = helper.stop()
    assert result.returncode != 0
    assert f"refused: {environment['HELPER_HOST']} did not present the helper's host key" in result.stderr, result.stderr
    assert time.monotonic() - started < 30  # at once, not after the boot wait
    # It did reach that sshd, and went no further than the key exchange.
    assert "Connection from 203.0.113.254" in log and "Accepted" not in log, log
    assert list(helper.srv.iterdir()) == []



def test_without_a_key_file_the_upload_logs_in_with_the_ssh_agent(lab, tmp_path):
    config, key = helper_stack(tmp_path)
    program_run = run(with_section(config, "bootstrap", helper={}))
    environment = unwrap(program_run.by_name(UPLOAD).inputs["environment"])
    assert "HELPER_KEY_FILE" not in environment
    host_key = helper_user_data_of(program_run)["ssh_keys"]["ed25519_private"]
    helper = Helper(lab, tmp_path, environment["HELPER_HOST"], host_key, key.with_suffix(".pub").read_text())
    namespace = deployer(lab)
    socket = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if socket.exists():
                break
            time.sleep(0.05)
        subprocess.run(["ssh-add", "-q", str(key)], env={"SSH_AUTH_SOCK": str(socket)}, check=True)
        key.unlink()  # the agent alone holds it now
        helper.start()
        result = upload(lab, namespace, program_run, tmp_path, "root", agent=str(socket))
    finally:
        agent.terminate()
        agent.wait(timeout=10)
    log = helper.stop()
    assert result.returncode == 0, (result.stderr, log)
    assert (helper.srv / "ignition" / "bootstrap.ign").read_text() == unwrap(program_run.by_name(UPLOAD).inputs["stdin"])
