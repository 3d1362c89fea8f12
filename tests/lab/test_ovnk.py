"""OVN-Kubernetes' MCS rules as the lab applies them (harness/lab/ovnk.py): connections from
outside still reach a node's MCS, connections a node opens are refused, and so the old design,
haproxy on a master in front of the masters' MCS, serves nothing once the rules are there."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from harness import netns
from harness.lab import ovnk
from tests.lab.conftest import need_lab

MASTERS = {"master-0": "10.0.0.20", "master-1": "10.0.0.21"}
CLIENT = "10.0.0.1"
OLD_FRONTEND = 22625  # the old haproxyMcsPort

# The shape of the old haproxy.cfg's MCS part (checking `/`: the stand-in MCS here is Python's
# http.server, whose directory listing answers 200 where the MCS's /healthz would).
OLD_HAPROXY = f"""global
    maxconn 100
defaults
    mode tcp
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend mcs
    bind :{OLD_FRONTEND}
    default_backend mcs
backend mcs
    option httpchk
    http-check send meth GET uri /
    default-server check inter 200ms fall 2 rise 1
""" + "".join(f"    server {name} {ip}:22624\n" for name, ip in MASTERS.items())


def _fetch(lab: netns.Lab, namespace: str, url: str) -> str:
    """The HTTP status curl got, or `000` when it got no answer."""
    result = lab.run(namespace, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", url])
    return result.stdout.strip()


def _settle(check, seconds: float = 5.0) -> str:
    """Poll `check` until it gives the same answer twice 0.5 s apart (haproxy's checks settle)."""
    deadline = time.monotonic() + seconds
    last = check()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = check()
        if now == last:
            return now
        last = now
    return last


def _old_design(tmp_path: Path, rules: bool) -> dict[str, str]:
    """Both masters serve an MCS stand-in; master-1 runs the old haproxy in front of both.
    Returns what the client outside got directly from master-0's MCS and through haproxy."""
    config = tmp_path / f"haproxy-{rules}.cfg"
    config.write_text(OLD_HAPROXY)
    with netns.lab("ovnk") as lab:
        namespaces = {}
        for name, ip in MASTERS.items():
            namespaces[name] = lab.namespace(name)
            lab.attach(namespaces[name], "ens3", f"{ip}/24")
            if rules:
                ovnk.block_mcs(namespaces[name])
            lab.start(
                namespaces[name],
                [sys.executable, "-m", "http.server", "--bind", "0.0.0.0", "22624"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        client = lab.namespace("client")
        lab.attach(client, "eth0", f"{CLIENT}/24")
        lab.start(namespaces["master-1"], ["haproxy", "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        direct = _settle(lambda: _fetch(lab, client, f"http://{MASTERS['master-0']}:22624/"))
        through = _settle(lambda: _fetch(lab, client, f"http://{MASTERS['master-1']}:{OLD_FRONTEND}/"))
        own = _fetch(lab, namespaces["master-1"], "http://127.0.0.1:22624/")
    return {"direct": direct, "through haproxy": through, "own, from the node": own}


def test_the_rules_refuse_what_a_node_opens_and_let_outside_connections_in(tmp_path: Path):
    need_lab()
    assert _old_design(tmp_path, rules=False) == {"direct": "200", "through haproxy": "200", "own, from the node": "200"}
    # With the rules: the MCS still answers a client outside; haproxy's backends are all
    # down (its checks and connections come from the node), and so is keepalived's old curl.
    assert _old_design(tmp_path, rules=True) == {"direct": "200", "through haproxy": "000", "own, from the node": "000"}
