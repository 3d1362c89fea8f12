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
    DISPATCHER,
    HAPROXY_CFG,
    KEEPALIVED_CONF,
    REDIRECT_CONFIG,
    REDIRECT_SCRIPT,
    REDIRECT_TABLE,
    node_additions,
)
from tests.ignition.test_networking import IDENTITY, dev_config, every_node_kind, files_of, pointer_like
from tools import netns


def need(*binaries: str, root: bool = False) -> None:
    missing = [binary for binary in binaries if shutil.which(binary) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    if root and netns.unavailable():
        pytest.skip(netns.unavailable())


def interface_of(config: ClusterConfig, node: Node) -> str:
    return config.networking.bootstrap_interface if node.role == "bootstrap" else config.networking.interface


def _cases() -> list[tuple[str, ClusterConfig, Node]]:
    cases = []
    for label, config in (("dev", dev_config()), ("compact", dev_config(workers=0))):
        for node in every_node_kind(config):
            if label == "dev" or node.role == "master":
                cases.append((f"{label}-{node.name}", config, node))
    return cases


CASES = _cases()


@pytest.mark.parametrize(("config", "node"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_keepalived_accepts_the_config(tmp_path: Path, config: ClusterConfig, node: Node):
    need("keepalived", root=True)
    conf = tmp_path / "keepalived.conf"
    conf.write_bytes(files_of(config, node)[KEEPALIVED_CONF])
    network = plan_addresses(config).network
    with netns.lab("kt") as lab:
        namespace = lab.namespace("node")
        lab.attach(namespace, interface_of(config, node), f"{node.ip}/{network.prefixlen}")
        result = lab.run(namespace, ["keepalived", "-t", "-f", str(conf)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_keepalived_check_rejects_a_broken_config(tmp_path: Path):
    """The check above would notice: keepalived -t fails on a bad keyword."""
    need("keepalived", root=True)
    config = dev_config()
    node = plan_addresses(config).masters[0]
    conf = tmp_path / "keepalived.conf"
    conf.write_bytes(files_of(config, node)[KEEPALIVED_CONF].replace(b"advert_int", b"advert_intervall"))
    with netns.lab("kt") as lab:
        namespace = lab.namespace("node")
        lab.attach(namespace, config.networking.interface, f"{node.ip}/16")
        assert lab.run(namespace, ["keepalived", "-t", "-f", str(conf)]).returncode != 0


def test_haproxy_accepts_every_masters_config(tmp_path: Path):
    need("haproxy")
    config = dev_config()
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
    config = dev_config()
    plan = plan_addresses(config)
    files = files_of(config, plan.masters[0])
    script, env = tmp_path / "api-vip-redirect", tmp_path / "api-vip-redirect.env"
    script.write_bytes(files[REDIRECT_SCRIPT])
    env.write_bytes(files[REDIRECT_CONFIG])
    settings = config.networking

    with netns.lab("nat") as lab:
        node = lab.namespace("master-0")
        lab.attach(node, settings.interface, f"{plan.masters[0].ip}/16")

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
    config = dev_config()
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


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_dispatcher_puts_the_node_first(tmp_path: Path, shell: str):
    need(shell, "awk", "mktemp")
    config = dev_config()
    node = plan_addresses(config).masters[1]
    script = tmp_path / "30-local-dns"
    script.write_bytes(files_of(config, node)[DISPATCHER])
    upstream, target = tmp_path / "nm-resolv.conf", tmp_path / "etc" / "resolv.conf"
    target.parent.mkdir()
    upstream.write_text(UPSTREAM)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "NM_RESOLV_CONF": str(upstream), "RESOLV_CONF": str(target)}

    subprocess.run([shell, str(script), "ens3", "down"], env=env, check=True)
    assert not target.exists()
    subprocess.run([shell, str(script), "br-ex", "up"], env=env, check=True)
    expected = (
        f"search {config.cluster_domain} openstacklocal example.net\n"
        f"nameserver {node.ip}\nnameserver 10.20.0.1\nnameserver 10.20.0.2\n"
        "options edns0 trust-ad\n"
    )
    assert target.read_text() == expected
    # Running again (the next DHCP renewal) on its own output changes nothing.
    upstream.write_text(target.read_text())
    subprocess.run([shell, str(script), "br-ex", "dhcp4-change"], env=env, check=True)
    assert target.read_text() == expected
    assert [path.name for path in target.parent.iterdir()] == ["resolv.conf"]


def test_ignition_validate_accepts_every_kind_of_node(tmp_path: Path):
    need("ignition-validate")
    config = dev_config()
    plan = plan_addresses(config)
    for node in every_node_kind(config):
        additions = assembly.hostname(node.name) + node_additions(config, plan, node, IDENTITY)
        path = tmp_path / f"{node.name}.ign"
        path.write_text(assembly.dumps(assembly.with_additions(pointer_like(node.role), additions)))
        result = subprocess.run(["ignition-validate", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
