"""The rendered files against the real tools: keepalived, haproxy, nft, sh, ignition-validate.

Namespaced tests skip (saying why) only when not root or a binary is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster.addresses import Node, plan_addresses
from cluster.config import ClusterConfig
from ignition import assembly
from ignition.networking import (
    HAPROXY_CFG,
    KEEPALIVED_CONF,
    KEEPALIVED_RUN,
    KEEPALIVED_RUN_CONFIG,
    KUBELET_DROPIN,
    PREPENDER,
    PREPENDER_PATH,
    PREPENDER_SERVICE,
    REDIRECT_CONFIG,
    REDIRECT_SCRIPT,
    REDIRECT_TABLE,
    node_additions,
)
from harness import netns
from harness.lab import ovnk
from tests.ignition.test_networking import IDENTITY, standalone_config, every_node_kind, files_of, pointer_like, vrrp


def need(*binaries: str, root: bool = False) -> None:
    missing = [binary for binary in binaries if shutil.which(binary) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    if root and netns.unavailable():
        pytest.skip(netns.unavailable())


# NIC names real nodes have: virtio on q35 machines, on the `pc` machine type, and a cloud's.
NICS = {"bootstrap": "enp1s0", "master": "ens3", "worker": "eth0"}


def _cases() -> list[tuple[str, ClusterConfig, Node]]:
    cases = []
    for label, config in (("dev", standalone_config()), ("compact", standalone_config(workers=0))):
        for node in every_node_kind(config):
            if label == "dev" or node.role == "master":
                cases.append((f"{label}-{node.name}", config, node))
    return cases


CASES = _cases()


class Runner:
    """A node's keepalived-run, as its static pod starts it, in a namespace of `lab`."""

    def __init__(self, lab: netns.Lab, namespace: str, files: dict[str, bytes], work: Path):
        self.lab, self.namespace, self.work = lab, namespace, work
        for path in (KEEPALIVED_RUN, KEEPALIVED_RUN_CONFIG, KEEPALIVED_CONF):
            (work / Path(path).name).write_bytes(files[path])
        self.run_dir = work / "run"
        self.log = work / "keepalived-run.log"
        self.argv = ["sh", *(str(work / Path(path).name) for path in (KEEPALIVED_RUN, KEEPALIVED_RUN_CONFIG, KEEPALIVED_CONF))]
        self.argv.append(str(self.run_dir))
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        with self.log.open("a") as output:
            self.process = self.lab.start(
                self.namespace, [*self.argv, "--no-syslog"], stdout=output, stderr=subprocess.STDOUT, text=True
            )

    def alive(self) -> bool:
        return self.lab.run(self.namespace, [*self.argv, "alive"]).returncode == 0

    def config(self) -> Path:
        return self.run_dir / "keepalived.conf"

    def text(self) -> str:
        return self.log.read_text()


def addresses(lab: netns.Lab, namespace: str) -> str:
    return lab.run(namespace, ["ip", "-4", "-o", "addr", "show"]).stdout


@pytest.mark.parametrize(("config", "node"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_keepalived_accepts_the_config_keepalived_run_makes(tmp_path: Path, config: ClusterConfig, node: Node):
    """The config as keepalived reads it: keepalived-run's, on a NIC named as on real nodes."""
    need("keepalived", root=True)
    network = plan_addresses(config).network
    with netns.lab("kt") as lab:
        namespace = lab.namespace("node")
        lab.attach(namespace, NICS[node.role], f"{node.ip}/{network.prefixlen}")
        runner = Runner(lab, namespace, files_of(config, node), tmp_path)
        runner.start()
        _wait_for(lambda: runner.alive(), "keepalived to run")
        generated = runner.config().read_text()
        result = lab.run(namespace, ["keepalived", "-t", "-f", str(runner.config())])
    assert generated.startswith(f"$VRRP_INTERFACE={NICS[node.role]}\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


ADVERT = Path(__file__).parent / "vrrp_advert.py"
# The router's health endpoint the worker's check asks (router_ready), answered on the namespace's loopback.
ROUTER_HEALTH = (
    "import http.server as s\n"
    "class H(s.BaseHTTPRequestHandler):\n"
    "    def do_GET(self): self.send_response(200); self.end_headers()\n"
    "    def log_message(self, *args): pass\n"
    "s.HTTPServer(('127.0.0.1', 1936), H).serve_forever()\n"
)


def test_forged_adverts_with_the_password_do_not_take_the_vip(tmp_path: Path):
    """A worker holding the Ingress VIP, and adverts of a higher priority with the right password
    (user_data has it): from a peer's address routed once (TTL 254, a pod's packet SNATed by
    OVN-Kubernetes), or from an address that is no peer, the worker keeps the VIP and says why;
    the same advert from the peer on the segment (TTL 255) takes it, as VRRP must."""
    need("keepalived", root=True)
    config = standalone_config()
    plan = plan_addresses(config)
    worker, peer = plan.workers[0], plan.workers[1]
    instance = vrrp(config, worker)["ingress"]
    vip = f"{plan.ingress_vip}/32"
    with netns.lab("va") as lab:
        namespace = lab.namespace("node")
        lab.attach(namespace, NICS["worker"], f"{worker.ip}/{plan.network.prefixlen}")
        lab.run(namespace, ["ip", "link", "set", "lo", "up"])
        lab.start(namespace, [sys.executable, "-c", ROUTER_HEALTH])  # stopped with the lab, as keepalived-run is
        runner = Runner(lab, namespace, files_of(config, worker), tmp_path)
        runner.start()
        holds = lambda: vip in addresses(lab, namespace)  # noqa: E731
        deadline = time.monotonic() + 30
        while not holds():
            assert time.monotonic() < deadline, runner.text()[-2000:]
            time.sleep(0.2)
        outcomes = {}
        for label, source, ttl in (("routed", peer.ip, 254), ("stranger", "10.0.0.250", 255), ("peer", peer.ip, 255)):
            sender = lab.namespace(label)
            lab.attach(sender, "eth0", f"{source}/{plan.network.prefixlen}")
            forged = lab.start(sender, [sys.executable, str(ADVERT), str(instance["vrid"]), "250", str(plan.ingress_vip), instance["password"], str(ttl), str(worker.ip), "8"])
            kept = True
            while forged.poll() is None:
                kept = kept and holds()
                time.sleep(0.1)
            outcomes[label] = kept
            if not holds():  # given up (the control): back as the only router once the adverts stop
                deadline = time.monotonic() + 15
                while not holds():
                    assert time.monotonic() < deadline, runner.text()[-2000:]
                    time.sleep(0.2)
    log = runner.text()
    assert outcomes == {"routed": True, "stranger": True, "peer": False}, log[-3000:]
    assert "(ingress) TTL/HL 254 not in range 255 - 255" in log
    assert "(ingress) unicast source address 10.0.0.250 not a unicast peer" in log
    assert f"(ingress) Master received advert from {peer.ip} with higher priority 250, ours {instance['priority']}" in log


def test_keepalived_check_rejects_a_broken_config(tmp_path: Path):
    """The check above would notice: keepalived -t fails on a bad keyword, and on a config read
    without keepalived-run (no interface defined)."""
    need("keepalived", root=True)
    config = standalone_config()
    node = plan_addresses(config).masters[0]
    text = files_of(config, node)[KEEPALIVED_CONF]
    broken, bare = tmp_path / "broken.conf", tmp_path / "bare.conf"
    broken.write_bytes(b"$VRRP_INTERFACE=ens3\n" + text.replace(b"advert_int", b"advert_intervall"))
    bare.write_bytes(text)
    with netns.lab("kt") as lab:
        namespace = lab.namespace("node")
        lab.attach(namespace, "ens3", f"{node.ip}/16")
        assert lab.run(namespace, ["keepalived", "-t", "-f", str(broken)]).returncode != 0
        assert lab.run(namespace, ["keepalived", "-t", "-f", str(bare)]).returncode != 0


def test_keepalived_run_removes_stale_vips_follows_the_address_and_stops_cleanly(tmp_path: Path):
    """A master with a VIP left on its NIC and a killed container's pid files: the VIP removed
    and keepalived started all the same; the VIP taken (no peer answers) on the NIC; the
    address moves to br-ex as OVN-Kubernetes moves it, and keepalived follows it there with
    the VIP; SIGTERM leaves no VIP and no process."""
    need("keepalived", "sh", root=True)
    config = standalone_config()
    plan = plan_addresses(config)
    node = plan.masters[0]
    with netns.lab("kr") as lab:
        namespace = lab.namespace("node")
        lab.attach(namespace, "ens3", f"{node.ip}/16")
        lab.run(namespace, ["ip", "addr", "add", f"{plan.ingress_vip}/32", "dev", "ens3"], check=True)
        runner = Runner(lab, namespace, files_of(config, node), tmp_path)
        # A killed container's pid files, naming a live process: keepalived must start all the same.
        squatter = lab.start(namespace, ["sleep", "60"])
        runner.run_dir.mkdir()
        for name in ("keepalived.pid", "vrrp.pid"):
            (runner.run_dir / name).write_text(f"{squatter.pid}\n")
        runner.start()
        _wait_for(lambda: f"removed VIP {plan.ingress_vip}/32 from ens3" in runner.text(), "the stale VIP to go")
        _wait_for(lambda: f" ens3    inet {plan.api_vip}/32" in addresses(lab, namespace), "the VIP on ens3")

        for command in (
            ["ip", "addr", "flush", "dev", "ens3"],
            ["ip", "link", "add", "br-ex", "type", "bridge"],
            ["ip", "link", "set", "ens3", "master", "br-ex"],
            ["ip", "link", "set", "br-ex", "up"],
            ["ip", "addr", "add", f"{node.ip}/16", "dev", "br-ex"],
        ):
            lab.run(namespace, command, check=True)
        _wait_for(lambda: "starting keepalived on br-ex" in runner.text(), "keepalived to follow the address")
        _wait_for(lambda: f" br-ex    inet {plan.api_vip}/32" in addresses(lab, namespace), "the VIP on br-ex")
        assert runner.config().read_text().startswith("$VRRP_INTERFACE=br-ex\n")
        assert runner.alive()

        assert runner.process is not None
        runner.process.terminate()
        runner.process.wait(timeout=10)
        squatter.kill()
        squatter.wait()
        assert str(plan.api_vip) not in addresses(lab, namespace)
        assert not runner.alive()
        assert netns.processes_in(set(lab.created.values())) == []
    assert runner.process.returncode == 0


def test_the_mcs_check_sees_a_listener_under_ovn_kubernetes_rules_where_a_connection_fails():
    """The check keepalived runs for the MCS, as rendered, in a namespace with OVN-Kubernetes'
    rules: it passes while something listens on 22624 and fails when nothing does, while
    curl to that listener from the node itself (what the check did before) is refused."""
    need("ss", "nft", "curl", root=True)
    config = standalone_config()
    plan = plan_addresses(config)
    for node in (plan.bootstrap, plan.masters[0]):
        text = files_of(config, node)[KEEPALIVED_CONF].decode()
        script = text.split("vrrp_script mcs_listening {", 1)[1].split('script "', 1)[1].split('"\n', 1)[0]
        with netns.lab("mcs") as lab:
            namespace = lab.namespace("node")
            lab.attach(namespace, "ens3", f"{node.ip}/16")
            ovnk.block_mcs(namespace)

            def check() -> int:
                # keepalived splits the script line the way the shell does here.
                return lab.run(namespace, ["sh", "-c", script]).returncode

            assert check() != 0
            server = lab.start(namespace, [sys.executable, "-m", "http.server", "--bind", "::", "22624"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _wait_for(lambda: check() == 0, "the check to see the listener (IPv6 and IPv4, as Go's)")
            for address in ("127.0.0.1", node.ip):
                curl = lab.run(namespace, ["curl", "-s", "-o", "/dev/null", "--max-time", "2", f"http://{address}:22624/"])
                assert curl.returncode == 7, curl  # couldn't connect: rejected
            server.terminate()
            server.wait()
            _wait_for(lambda: check() != 0, "the check to fail with nothing listening")


def shellcheck_master_scripts(config: ClusterConfig, tmp_path: Path) -> None:
    """shellcheck on a master's scripts (keepalived-run, the API VIP redirect, the resolv.conf prepender)."""
    need("shellcheck")
    files = files_of(config, plan_addresses(config).masters[0])
    paths = []
    for path in (KEEPALIVED_RUN, REDIRECT_SCRIPT, PREPENDER):
        paths.append(tmp_path / Path(path).name)
        paths[-1].write_bytes(files[path])
    result = subprocess.run(["shellcheck", "--shell=sh", *map(str, paths)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_scripts_pass_shellcheck(tmp_path: Path):
    shellcheck_master_scripts(standalone_config(), tmp_path)


def test_systemd_accepts_the_resolv_conf_units_and_the_kubelet_drop_in(tmp_path: Path):
    """systemd-analyze verify on the path unit, its service and a kubelet.service with the
    drop-in a node gets (which pulls the service in). The service's script is the node's, at
    a path of this machine (verify wants an executable there)."""
    need("systemd-analyze")
    config = standalone_config()
    plan = plan_addresses(config)
    node = plan.masters[0]
    files = files_of(config, node)
    units = tmp_path / "units"
    (units / "kubelet.service.d").mkdir(parents=True)
    (units / "kubelet.service").write_text("[Service]\nExecStart=/bin/true\nRestart=always\n")
    (units / "kubelet.service.d" / Path(KUBELET_DROPIN).name).write_bytes(files[KUBELET_DROPIN])
    script = tmp_path / Path(PREPENDER).name
    script.write_bytes(files[PREPENDER])
    script.chmod(0o755)
    rendered = {unit.name: unit.contents for unit in node_additions(config, plan, node, IDENTITY).units}
    for name in (PREPENDER_PATH, PREPENDER_SERVICE):
        (units / name).write_text(rendered[name].replace(f"ExecStart={PREPENDER}\n", f"ExecStart={script}\n"))
    assert f"ExecStart={script}\n" in (units / PREPENDER_SERVICE).read_text()
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *(str(units / name) for name in ("kubelet.service", PREPENDER_PATH, PREPENDER_SERVICE))],
        capture_output=True, text=True, env={"SYSTEMD_UNIT_PATH": f"{units}:"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.strip() == ""


def test_haproxy_accepts_every_masters_config(tmp_path: Path):
    need("haproxy")
    config = standalone_config()
    for master in plan_addresses(config).masters:
        cfg = tmp_path / f"{master.name}.cfg"
        cfg.write_bytes(files_of(config, master)[HAPROXY_CFG])
        result = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "WARNING" not in result.stdout + result.stderr


HEALTH_STUB = """
import http.server, sys
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
"""

# Stands in for haproxy's frontend: says "lb" to whoever connects.
LB_STUB = """
import socket, sys
server = socket.create_server(("0.0.0.0", int(sys.argv[1])))
while True:
    connection, _ = server.accept()
    connection.sendall(b"lb"); connection.close()
"""

CONNECT = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2) as connection:
        print(connection.recv(16).decode())
except OSError as error:
    print(type(error).__name__)
"""


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_api_vip_redirect_follows_haproxy_health(tmp_path: Path):
    """The very script and config a master gets, run in a namespace: the redirect exists
    (and works, for local clients) only while the health endpoint answers, and goes away
    without a trace."""
    need("nft", "curl", "sh", root=True)
    config = standalone_config()
    plan = plan_addresses(config)
    files = files_of(config, plan.masters[0])
    script, env = tmp_path / "api-vip-redirect", tmp_path / "api-vip-redirect.env"
    script.write_bytes(files[REDIRECT_SCRIPT])
    env.write_bytes(files[REDIRECT_CONFIG])
    settings = config.networking

    with netns.lab("nat") as lab:
        node = lab.namespace("master-0")
        lab.attach(node, "ens3", f"{plan.masters[0].ip}/16")

        def redirect(action: str) -> subprocess.CompletedProcess[str]:
            result = lab.run(node, ["sh", str(script), str(env), action])
            assert result.returncode == 0, result.stderr
            return result

        def ruleset() -> str:
            return lab.run(node, ["nft", "list", "ruleset"]).stdout

        def connect(address: object, port: int) -> str:
            return lab.run(node, [sys.executable, "-c", CONNECT, str(address), str(port)]).stdout.strip()

        def connect_to_vip() -> str:
            return connect(plan.api_vip, 6443)

        lab.start(node, [sys.executable, "-c", LB_STUB, str(settings.haproxy_port)])
        _wait_for(lambda: connect("127.0.0.1", settings.haproxy_port) == "lb", "the stand-in load balancer")

        redirect("once")  # haproxy unhealthy: nothing
        assert REDIRECT_TABLE not in ruleset()
        assert connect_to_vip() != "lb"

        health_url = f"http://127.0.0.1:{settings.haproxy_health_port}/"
        health = lab.start(node, [sys.executable, "-c", HEALTH_STUB, str(settings.haproxy_health_port)])
        _wait_for(lambda: lab.run(node, ["curl", "-fs", health_url]).returncode == 0, "the stand-in health endpoint")
        assert "redirecting" in redirect("once").stdout
        rules = ruleset()
        assert f"table ip {REDIRECT_TABLE}" in rules
        assert rules.count(f"ip daddr {plan.api_vip} tcp dport 6443 redirect to :{settings.haproxy_port}") == 2
        assert "22624" not in rules  # the holder's own MCS answers <API VIP>:22624
        assert connect_to_vip() == "lb"
        assert redirect("once").stdout == ""  # already there: left alone

        health.terminate()
        health.wait()
        assert "removed" in redirect("once").stdout
        assert ruleset().strip() == ""
        assert connect_to_vip() != "lb"
        redirect("remove")  # idempotent


def test_nft_accepts_the_rules_offline():
    """Syntax check without applying, for hosts where the namespace test is skipped."""
    need("nft")
    config = standalone_config()
    files = files_of(config, plan_addresses(config).masters[0])
    script = files[REDIRECT_SCRIPT].decode()
    rules = script.split("<<RULES\n", 1)[1].split("\nRULES\n", 1)[0]
    env = dict(line.split("=", 1) for line in files[REDIRECT_CONFIG].decode().splitlines() if "=" in line)
    for key, value in env.items():
        rules = rules.replace(f"${key}", value)
    result = subprocess.run(["nft", "-c", "-f", "-"], input=rules, capture_output=True, text=True)
    if result.returncode != 0 and "Operation not permitted" in result.stderr:
        pytest.skip("nft -c needs CAP_NET_ADMIN here")
    assert result.returncode == 0, result.stderr


UPSTREAM = """# Generated by NetworkManager
search openstacklocal example.net
nameserver 10.20.0.1
nameserver 10.20.0.2
nameserver 10.20.0.3
options edns0 trust-ad
"""


def prepender(tmp_path: Path, config, node, path: str = "/usr/sbin:/usr/bin:/sbin:/bin") -> tuple[Path, Path, Path, dict[str, str]]:
    """The node's resolv.conf prepender in `tmp_path`: (script, NetworkManager's file, the
    resolv.conf it writes, its environment with `path` as PATH)."""
    script = tmp_path / "local-dns-prepender"
    script.write_bytes(files_of(config, node)[PREPENDER])
    upstream, target = tmp_path / "nm-resolv.conf", tmp_path / "etc" / "resolv.conf"
    target.parent.mkdir()
    env = {"PATH": path, "NM_RESOLV_CONF": str(upstream), "RESOLV_CONF": str(target), "TMPDIR": str(tmp_path)}
    return script, upstream, target, env


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_the_prepender_puts_the_node_first(tmp_path: Path, shell: str):
    need(shell, "awk", "mktemp")
    config = standalone_config()
    node = plan_addresses(config).masters[1]
    script, upstream, target, env = prepender(tmp_path, config, node)

    # At boot, before NetworkManager wrote anything: nothing to do, and no failure.
    assert "does not exist yet" in subprocess.run([shell, str(script)], env=env, check=True, capture_output=True, text=True).stdout
    assert not target.exists()
    upstream.write_text(UPSTREAM)
    subprocess.run([shell, str(script)], env=env, check=True)
    expected = (
        f"search {config.cluster_domain} openstacklocal example.net\n"
        f"nameserver {node.ip}\nnameserver 10.20.0.1\nnameserver 10.20.0.2\n"
        "options edns0 trust-ad\n"
    )
    assert target.read_text() == expected
    # Running again (the next DHCP renewal) on its own output changes nothing, not even the file.
    inode = target.stat().st_ino
    upstream.write_text(target.read_text())
    subprocess.run([shell, str(script)], env=env, check=True)
    assert target.read_text() == expected and target.stat().st_ino == inode
    assert [path.name for path in target.parent.iterdir()] == ["resolv.conf"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["etc", "local-dns-prepender", "nm-resolv.conf"]
    # NetworkManager learnt other servers: followed.
    upstream.write_text("nameserver 10.30.0.1\n")
    subprocess.run([shell, str(script)], env=env, check=True)
    assert target.read_text() == f"search {config.cluster_domain}\nnameserver {node.ip}\nnameserver 10.30.0.1\n"


def test_the_prepender_catches_up_with_a_change_made_while_it_ran(tmp_path: Path):
    """NetworkManager rewrites its file while the service runs (the path unit's start request
    then merges into the running job): the script notices and writes the newer servers."""
    need("sh", "awk", "mktemp")
    config = standalone_config()
    node = plan_addresses(config).masters[0]
    bin_dir = tmp_path / "bin"
    script, upstream, target, env = prepender(tmp_path, config, node, f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin")
    upstream.write_text(UPSTREAM)
    # awk that, on its first run, stands in for NetworkManager writing meanwhile.
    bin_dir.mkdir()
    awk = bin_dir / "awk"
    awk.write_text(
        f"#!/bin/sh\n[ -e {tmp_path}/written ] || {{ : >{tmp_path}/written; echo 'nameserver 10.40.0.1' >{upstream}; }}\n"
        f'exec {shutil.which("awk")} "$@"\n'
    )
    awk.chmod(0o755)
    subprocess.run(["sh", str(script)], env=env, check=True)
    assert target.read_text() == f"search {config.cluster_domain}\nnameserver {node.ip}\nnameserver 10.40.0.1\n"


def ignition_validate_every_node_kind(config: ClusterConfig, tmp_path: Path) -> None:
    """ignition-validate on each kind of node's config: the pointer with this program's networking added."""
    need("ignition-validate")
    plan = plan_addresses(config)
    for node in every_node_kind(config):
        additions = assembly.hostname(node.name) + node_additions(config, plan, node, IDENTITY)
        path = tmp_path / f"{node.name}.ign"
        path.write_text(assembly.dumps(assembly.with_additions(pointer_like(node.role), additions)))
        result = subprocess.run(["ignition-validate", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_ignition_validate_accepts_every_kind_of_node(tmp_path: Path):
    ignition_validate_every_node_kind(standalone_config(), tmp_path)
