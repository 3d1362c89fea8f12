"""The bootstrap helper (bootstrap.configSource: helper): the host key it is given at boot (ECDSA
with ocp:fips), the upload pinned to it, the user's own key kept out of the state, and the upload
run for real with OpenSSH against an sshd in a network namespace; then its server, run for real
in a network namespace at the helper's address, serving the config over TLS to a client that
trusts the shim's CA alone, and to the real Ignition running the shim."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from cluster.helper_ssh import helper_host_key
from cluster.identity import ClusterIdentity
from harness import ignition, netns
from tests.conftest import deploy, preview, run, stack_config, with_helper, with_section
from tools.mock_run import ProgramRun, unwrap
from tools.plan import write_plan

UPLOAD = "ocp4-bootstrap-helper-ssh-upload"
HELPER = "ocp4-bootstrap-helper-server"
SSHD = "/usr/sbin/sshd"


def helper_stack(tmp_path: Path, key_type: str = "ed25519", **overrides) -> tuple[dict[str, str], Path]:
    """The dev stack served by the helper, logging in with a key file of its own (a real key)."""
    key = tmp_path / "deployer" / f"id_{key_type}"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", "deployer", "-f", str(key)], check=True)
    config = with_helper(stack_config("dev", sshKey=key.with_suffix(".pub").read_text().strip(), **overrides))
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


def test_a_stack_mid_install_keeps_the_helper_and_shim_it_booted_with(tmp_path):
    """A stack whose helper and bootstrap an earlier release made (plain HTTP, and with ocp:fips an
    ed25519 host key): both read their user_data at first boot only, so the next up changes neither,
    nor sends the upload again to a pin that helper lacks."""
    config, _ = helper_stack(tmp_path, "ecdsa", fips=True)
    state = deploy(config)
    earlier_pin = helper_host_key(ClusterIdentity("ocp4-x7k2p", b"an earlier release")).public
    for item in state:
        for inputs in (item["inputs"], item["outputs"]):
            if item["name"] == UPLOAD:
                inputs["environment"] = {**inputs["environment"], "HELPER_HOST_KEY": earlier_pin}
            elif item["name"] == "ocp4-bootstrap-node":
                shim = json.loads(inputs["userData"])
                shim["ignition"]["config"]["merge"][0]["source"] = shim["ignition"]["config"]["merge"][0]["source"].replace("https:", "http:")
                inputs["userData"] = json.dumps(shim)
            elif item["name"] == HELPER:
                document = yaml.safe_load(inputs["userData"].removeprefix("#cloud-config\n"))
                document["write_files"] = [entry for entry in document["write_files"] if "/tls." not in entry["path"]]
                inputs["userData"] = "#cloud-config\n" + yaml.safe_dump(document)
    result = preview(state, config)
    assert result.error is None, result.error
    assert {name: change.action for name, change in result.changes.items() if change.action != "same"} == {}


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
        key = tmp_path / "ssh_host_key"
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


def test_with_fips_the_helper_gets_an_ecdsa_host_key_that_the_upload_pins_and_openssh_accepts(lab, tmp_path):
    """OpenSSH in FIPS mode, where `pulumi up` runs for a FIPS cluster, refuses ed25519 host keys."""
    config, key = helper_stack(tmp_path, "ecdsa", fips=True)
    program_run = run(config)
    keys = helper_user_data_of(program_run)["ssh_keys"]
    assert set(keys) == {"ecdsa_private", "ecdsa_public"}  # cloud-init's names: its only host key
    environment = unwrap(program_run.by_name(UPLOAD).inputs["environment"])
    assert environment["HELPER_HOST_KEY"] == keys["ecdsa_public"] and keys["ecdsa_public"].startswith("ecdsa-sha2-nistp256 ")
    script = unwrap(program_run.by_name(UPLOAD).inputs["create"])
    assert "-o HostKeyAlgorithms=ecdsa-sha2-nistp256 " in script and "ssh-ed25519" not in script
    helper = Helper(lab, tmp_path, environment["HELPER_HOST"], keys["ecdsa_private"], key.with_suffix(".pub").read_text())
    namespace = deployer(lab)
    helper.start()
    result = upload(lab, namespace, program_run, tmp_path, "root")
    log = helper.stop()
    assert result.returncode == 0, (result.stderr, log)
    assert (helper.srv / "ignition" / "bootstrap.ign").read_text() == unwrap(program_run.by_name(UPLOAD).inputs["stdin"])
    assert "Accepted publickey for root" in log


# --------------------------------------------------------------------------- the helper's server, over TLS

SERVE = "/srv/ignition"
# A client in the node's namespace: GET `url` trusting the CA in `ca` alone ("system": the host's
# CAs; a plain-HTTP URL: none). Prints the status and the body's sha512, or the error.
CLIENT = """
import hashlib, json, ssl, sys, urllib.error, urllib.request
url, ca = sys.argv[1], sys.argv[2]
context = ssl.create_default_context() if ca == "system" else ssl.create_default_context(cadata=ca)
try:
    with urllib.request.urlopen(url, context=context, timeout=10) as response:
        print(json.dumps({"status": response.status, "body": hashlib.sha512(response.read()).hexdigest()}))
except urllib.error.HTTPError as error:
    print(json.dumps({"status": error.code, "body": error.read().decode(errors="replace")}))
except Exception as error:
    print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
"""


def shim_of(program_run: ProgramRun) -> dict:
    return json.loads(unwrap(program_run.by_name("ocp4-bootstrap-node").inputs["userData"]))


def pinned_ca(shim: dict) -> str:
    (authority,) = shim["ignition"]["security"]["tls"]["certificateAuthorities"]
    return base64.b64decode(authority["source"].split(",", 1)[1]).decode()


class Served:
    """The helper's server as its user_data sets it up (the script, the unit's command and its
    LoadCredential= files in a credentials directory, as systemd hands them over), in a network
    namespace holding the helper's address, with the upload's remote command run as on the helper."""

    def __init__(self, lab: netns.Lab, program_run: ProgramRun, tmp_path: Path):
        document = helper_user_data_of(program_run)
        files = {entry["path"]: entry for entry in document["write_files"]}
        self.unit = files["/etc/systemd/system/bootstrap-ignition.service"]["content"]
        service = dict(line.split("=", 1) for line in self.unit.splitlines() if line.startswith(("ExecStart=", "LoadCredential=")))
        _, script, self.bind, self.port, served, path_file = service["ExecStart"].split()
        self.root = tmp_path / "srv"
        self.root.mkdir()
        credentials = tmp_path / "credentials"
        credentials.mkdir(mode=0o700)
        for line in self.unit.splitlines():
            if line.startswith("LoadCredential="):
                name, source = line.removeprefix("LoadCredential=").split(":", 1)
                (credentials / name).write_text(files[source]["content"])
        (tmp_path / "server.py").write_text(files[script]["content"])
        self.url = shim_of(program_run)["ignition"]["config"]["merge"][0]["source"]
        self.address = urlsplit(self.url).hostname
        self.lab, self.namespace = lab, lab.namespace("node")
        lab.run(self.namespace, ["ip", "addr", "add", f"{self.address}/32", "dev", "lo"], check=True)
        self.log = tmp_path / "server.log"
        argv = [sys.executable, str(tmp_path / "server.py"), self.bind, self.port, *(p.replace(SERVE, str(self.root)) for p in (served, path_file))]
        self.process = lab.start(self.namespace, argv, stderr=self.log.open("w"), env={"PATH": os.environ["PATH"], "CREDENTIALS_DIRECTORY": str(credentials)})
        # What the upload runs on the helper over ssh (the script's last word), without sudo, into the scratch /srv.
        remote = shlex.split(unwrap(program_run.by_name(UPLOAD).inputs["create"]).splitlines()[-1])[-1]
        self.upload = remote.replace("sudo ", "").replace(SERVE, str(self.root))
        self.config = unwrap(program_run.by_name(UPLOAD).inputs["stdin"])

    def get(self, url: str, ca: str) -> dict:
        for _ in range(100):  # until the server listens
            done = self.lab.run(self.namespace, [sys.executable, "-c", CLIENT, url, ca], timeout=30)
            answer = json.loads(done.stdout)
            if "Connection refused" not in answer.get("error", ""):
                return answer
            time.sleep(0.1)
        return answer

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        return self.log.read_text()


@pytest.fixture
def node_lab():
    if netns.unavailable():
        pytest.skip(netns.unavailable())
    with netns.lab("helpertls") as instance:
        yield instance
    assert instance.leftovers() == []


def test_the_helper_serves_the_config_over_tls_to_a_client_trusting_the_shims_ca_alone(dev_helper_run, node_lab, tmp_path):
    served = Served(node_lab, dev_helper_run, tmp_path)
    ca = pinned_ca(shim_of(dev_helper_run))
    path = urlsplit(served.url).path
    assert served.url.startswith("https://") and served.bind == "0.0.0.0" and served.port == "8080"
    try:
        assert served.get(served.url, ca)["status"] == 404  # nothing before the upload
        subprocess.run(["bash", "-c", served.upload], input=served.config.encode(), check=True)
        assert served.get(served.url, ca) == {"status": 200, "body": hashlib.sha512(served.config.encode()).hexdigest()}
        # One path and nothing else.
        base = served.url.removesuffix(path)
        for other in ("/", "/bootstrap.ign", path.rsplit("/", 1)[0] + "/", path + "?x", "/url-path", "/" + path.strip("/").split("/")[0],
                      "/../../etc/passwd", path.replace("bootstrap.ign", "url-path")):
            answer = served.get(base + other, ca)
            assert answer["status"] == 404 and path.split("/")[1] not in answer["body"], other
        # A client that trusts anything but the helper's CA gets nothing: the host's CAs, or plain HTTP.
        refused = served.get(served.url, "system")
        assert "CERTIFICATE_VERIFY_FAILED" in refused.get("error", ""), refused
        plain = served.get(served.url.replace("https://", "http://"), ca)
        assert plain == {"error": "RemoteDisconnected: Remote end closed connection without response"}, plain
    finally:
        log = served.stop()
    assert path.split("/")[1] not in log  # the log never shows the path
    assert "GET 200" in log


def test_the_helpers_unit_is_one_systemd_takes(dev_helper_run, tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian package 'systemd')")
    unit = helper_user_data_of(dev_helper_run)["write_files"]
    (content,) = [entry["content"] for entry in unit if entry["path"].endswith("/bootstrap-ignition.service")]
    path = tmp_path / "bootstrap-ignition.service"
    path.write_text(content)
    done = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and path.name not in done.stdout + done.stderr, done.stdout + done.stderr


def test_the_real_ignition_fetches_the_config_from_the_helper_with_the_programs_shim(dev_helper_run, node_lab, tmp_path):
    if ignition.unavailable():
        pytest.skip(ignition.unavailable())
    served = Served(node_lab, dev_helper_run, tmp_path)
    try:
        subprocess.run(["bash", "-c", served.upload], input=served.config.encode(), check=True)
        served.get(served.url, pinned_ca(shim_of(dev_helper_run)))  # listening
        # The shim as Nova gets it, unchanged: its URL, its CA, its hash.
        result = ignition.run(unwrap(dev_helper_run.by_name("ocp4-bootstrap-node").inputs["userData"]), tmp_path / "node", netns=served.namespace)
    finally:
        log = served.stop()
    assert result.ok, f"{result.failure()}\n{result.log[-3000:]}\n{log}"
    # Over TLS, trusting the helper's CA (and Ignition's system pool, which signs no private address).
    assert served.url.startswith("https://") and f"GET {served.url}: attempt #1" in result.log
    assert f'Adding "{dev_helper_run.outputs["infraId"]}-bootstrap-helper-ca" to list of CAs' in result.log
    assert result.files["/etc/hostname"].contents == f"{dev_helper_run.outputs['infraId']}-bootstrap\n".encode()
    assert "bootkube.service" in result.units
