"""The forger's race against a real Kubernetes API server (harness/kubeapi.py: etcd, kube-apiserver and
the csrsigning controller): whoever holds the node-bootstrapper token asks for a new node's client
certificate as soon as its server answers, before the node's kubelet does. For a new worker and for a
replaced master, the approver's own loop runs through the race and the forger gets no certificate;
the kubelet's request is approved once the user names it (`approve-csrs --csr NAME`, through the
CLI's main), and an honest scale-up joins by itself once its request has settled. The settling
period is shortened through the approver's parameter (the played kubelets ask at once)."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from cryptography import x509
from pulumi import automation as auto

from cluster.csr import CLIENT_SIGNER, NODE_BOOTSTRAPPER, parse_time
from harness import kubeapi
from ocp import driver
from ocp.__main__ import main
from ocp.approver import approve_until_ready
from ocp.kube import Kube
from tests.ocp.played import CLIENT, PlayedCluster, request_pem
from tools import toolchain

DOMAIN = "race.lab.local"
SETTLE = timedelta(seconds=4)


def kube(api: kubeapi.KubeAPI) -> Kube:
    return Kube(str(toolchain.binary("kubectl")), api.kubeconfig)


def csr(api: kubeapi.KubeAPI, name: str) -> dict:
    return json.loads(api.kubectl("get", "csr", name, "-o", "json").stdout)


def ask(api: kubeapi.KubeAPI, node: str) -> tuple[str, datetime]:
    """A client request for `node` as the node bootstrapper (the forger holds its token; the kubelet
    uses it), named as client-go names it (`csr-` and what the API server adds; a forger may too): its
    name and creation time, the API server's clock."""
    name = PlayedCluster(api, {}, DOMAIN).submit("csr-", NODE_BOOTSTRAPPER, CLIENT_SIGNER, CLIENT, request_pem(f"system:node:{node}"))
    return name, parse_time(csr(api, name)["metadata"]["creationTimestamp"])


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def no_certificate(api: kubeapi.KubeAPI, name: str) -> None:
    """What the API says of it: no certificate, and no Approved condition."""
    item = csr(api, name)
    status = item.get("status") or {}
    assert not status.get("certificate"), item
    assert "Approved" not in {c.get("type") for c in status.get("conditions") or ()}, item


def issued(api: kubeapi.KubeAPI, name: str, timeout: float = 60) -> x509.Certificate:
    deadline = time.monotonic() + timeout
    while not (csr(api, name).get("status") or {}).get("certificate"):
        assert time.monotonic() < deadline, f"{name} was not signed in {timeout} s"
        time.sleep(0.5)
    return x509.load_pem_x509_certificate(base64.b64decode(csr(api, name)["status"]["certificate"]))


def race(api: kubeapi.KubeAPI, node: str, address: str) -> tuple[list[str], str, str]:
    """The forger asks first, alone; the approver's loop runs (the settling period shortened); the
    kubelet asks 1.5 s later, within the period. What the loop said, the forger's request, the kubelet's."""
    forged, asked = ask(api, node)
    made = asked - timedelta(seconds=2)  # the server was made 2 s before: its address answered
    said: list[str] = []
    loop = threading.Thread(
        target=approve_until_ready,
        args=(kube(api), {node: address}, {node}, DOMAIN, time.monotonic() + 3 * SETTLE.total_seconds(), said.append),
        kwargs={"interval": 0.3, "created": {node: stamp(made)}, "stack": "race", "settle": SETTLE},
    )
    loop.start()
    time.sleep(1.5)
    kubelets, _ = ask(api, node)
    loop.join(timeout=120)
    assert not loop.is_alive()
    return said, forged, kubelets


def as_stack(api: kubeapi.KubeAPI, tmp_path, monkeypatch, node: str, address: str | list[str], made_before: str | None, platform: str = "openstack") -> None:
    """`python -m ocp approve-csrs --stack race` reads this stack (outputs, config) in the CLI's main: one node,
    its server made 2 s before the request `made_before` (None: outputs without nodeCreated, as libvirt's
    and those of a stack last `up` by 0.1.0)."""
    outputs = {"nodes": {node: address}}
    if made_before is not None:
        outputs["nodeCreated"] = {node: stamp(parse_time(csr(api, made_before)["metadata"]["creationTimestamp"]) - timedelta(seconds=2))}
    stack_of(api, tmp_path, monkeypatch, outputs, platform)


def stack_of(api: kubeapi.KubeAPI, tmp_path, monkeypatch, outputs: dict, platform: str = "openstack") -> None:
    """The stack `python -m ocp ... --stack race` reads in the CLI's main: these outputs (and the API's kubeconfig)."""
    outputs = {**outputs, "kubeconfig": api.embedded_kubeconfig(), "kubeadminPassword": "unused"}
    stack = SimpleNamespace(name="race", outputs=lambda: {key: auto.OutputValue(value, False) for key, value in outputs.items()})
    config = SimpleNamespace(
        installer=SimpleNamespace(binary=None, assets_dir=str(tmp_path / "assets"), oc=str(toolchain.binary("kubectl"))),
        cluster_domain=DOMAIN, platform=platform,
    )
    monkeypatch.setattr(driver, "_stack", lambda name: stack)
    monkeypatch.setattr(driver, "_config", lambda s: config)


def test_a_forged_request_before_a_new_workers_kubelets_gets_no_certificate(api, tmp_path, monkeypatch, capsys):
    node, address = "race-worker-3", "192.0.2.53"
    said, forged, kubelets = race(api, node, address)
    # Alone, the forger's request only waited; then the kubelet's came: neither is approved.
    text = "\n".join(said)
    assert f"csr: left pending {forged} (client): settling until " in text, text
    assert not any(line.startswith("csr: approved") for line in said), text
    why = f"2 client requests for {node} since its server was made ({', '.join(sorted([forged, kubelets]))}): none is approved automatically, as one may be a forger's"
    assert any(line.startswith(f"csr: left pending {forged} (client): {why}; key SHA-256 ") for line in said), text
    assert any(line.startswith(f"csr: left pending {kubelets} (client): {why}; key SHA-256 ") for line in said), text
    assert (
        f"csr:   approve it only if {node}'s kubelet made it: on {node} (its console or ssh), "
        f"`journalctl -u kubelet | grep 'Certificate signing request created' | grep client-kubelet` names it (csr=\"{kubelets}\"); "
        f"then: python -m ocp approve-csrs --stack race --csr {kubelets}"
    ) in said, text
    no_certificate(api, forged)
    no_certificate(api, kubelets)
    # The user finds the kubelet's request in the node's journal and names it: that one only is approved and signed.
    as_stack(api, tmp_path, monkeypatch, node, address, made_before=forged)
    code = main(["approve-csrs", "--stack", "race", "--csr", kubelets, "--timeout", "0.05"], settle=SETTLE)
    out = capsys.readouterr().out
    assert f"csr: approved {kubelets}: client certificate of {node}, a node of this stack" in out, out
    assert code == 1 and f"csr: not Ready by the deadline: {node}" in out  # nothing here plays its kubelet
    assert issued(api, kubelets).subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == f"system:node:{node}"
    no_certificate(api, forged)


def test_a_forged_request_for_a_replaced_master_gets_no_certificate(api, tmp_path, monkeypatch, capsys):
    """docs/day2.md's dead master: its Node deleted, a new server made; the forger asks first."""
    node, address = "race-master-1", "192.0.2.41"
    said, forged, kubelets = race(api, node, address)
    text = "\n".join(said)
    for name in (forged, kubelets):
        assert any(line.startswith(f"csr: left pending {name} (client): {node} is a master: its client certificate is never approved automatically") for line in said), text
        assert f"python -m ocp approve-csrs --stack race --csr {name}" in text
    no_certificate(api, forged)
    no_certificate(api, kubelets)
    # Named, exactly that request is approved; a name that is no pending request is said so, and fails the command.
    as_stack(api, tmp_path, monkeypatch, node, address, made_before=forged)
    assert main(["approve-csrs", "--stack", "race", "--csr", "no-such-csr"], settle=SETTLE) == 1
    assert "csr: no pending request no-such-csr (`oc get csr -- no-such-csr`: it may be decided already, or deleted)" in capsys.readouterr().out
    no_certificate(api, kubelets)
    main(["approve-csrs", "--stack", "race", "--csr", kubelets, "--timeout", "0.05"], settle=SETTLE)
    out = capsys.readouterr().out
    assert f"csr: approved {kubelets}: client certificate of {node}, a node of this stack" in out, out
    issued(api, kubelets)
    no_certificate(api, forged)


def test_an_honest_scale_up_joins_once_its_request_has_settled(api):
    """A new worker whose kubelet asks alone (the played cluster registers its Node once the client
    certificate is issued, asks to serve, and is Ready once that is issued)."""
    node, address = "honest-worker-4", "192.0.2.64"
    played = PlayedCluster(api, {}, DOMAIN, foreign=False)
    played.start()
    try:
        made = datetime.now(UTC) - timedelta(seconds=5)
        played.add_worker(node, address)
        said: list[str] = []
        began = time.monotonic()
        assert approve_until_ready(
            kube(api), {node: address}, {node}, DOMAIN, time.monotonic() + 90, said.append,
            interval=0.3, created={node: stamp(made)}, stack="race", settle=SETTLE,
        ), said
    finally:
        played.stop()
    client, serving = played.names[f"{node}-client"], played.names[f"{node}-serving"]
    assert [line.split("; key SHA-256 ")[0] for line in said if line.startswith("csr: approved")] == [
        f"csr: approved {client}: client certificate of {node}, a node of this stack",
        f"csr: approved {serving}: serving certificate of {node}, a node of this stack",
    ], said
    assert next(line for line in said if client in line).startswith(f"csr: left pending {client} (client): settling until "), said
    assert time.monotonic() - began >= SETTLE.total_seconds() - 1  # it waited (the API's clock may lead this one by a second)


@pytest.mark.parametrize("platform", ["openstack", "libvirt"])
def test_a_stack_without_creation_times_approves_no_client_request_by_itself(api, tmp_path, monkeypatch, capsys, platform):
    """libvirt's domains keep no creation time; an OpenStack stack last `up` by 0.1.0 has no nodeCreated output."""
    node, address = f"untimed-{platform}-worker-0", "192.0.2.70"
    name, _ = ask(api, node)
    time.sleep(SETTLE.total_seconds())
    as_stack(api, tmp_path, monkeypatch, node, address, made_before=None, platform=platform)
    assert main(["approve-csrs", "--stack", "race", "--timeout", "0.02"], settle=SETTLE) == 1
    out = capsys.readouterr().out
    why = {
        "openstack": "the stack's outputs have no nodeCreated (its last `pulumi up` ran release 0.1.0): run `pulumi up --stack race` once, then this again",
        "libvirt": "libvirt keeps no creation time for its domains (client certificates are approved automatically only during `python -m ocp install`)",
    }[platform]
    assert f"csr: left pending {name} (client): {why}: a client certificate is approved automatically only where its server's creation time is known" in out, out
    assert f"python -m ocp approve-csrs --stack race --csr {name}" in out
    no_certificate(api, name)


def test_a_node_back_after_a_long_shutdown_is_approved_only_by_name(api, tmp_path, monkeypatch, capsys):
    """docs/day2.md's restart after a long shutdown: back-worker-5's kubelet lost its client certificate while the
    cluster was off and asks again as the bootstrapper; its Node exists, marked Unknown by the node lifecycle
    controller (played here: none runs). A forger asks for live-worker-6, whose kubelet still reports."""
    back, live = "back-worker-5", "live-worker-6"
    nodes = {back: "192.0.2.55", live: "192.0.2.56"}
    played = PlayedCluster(api, nodes, DOMAIN)
    shut = datetime.now(UTC) - timedelta(days=62)
    for node in nodes:
        played.register(node, datetime.now(UTC))
    quiet = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": stamp(shut), "lastTransitionTime": stamp(shut + timedelta(seconds=40))}
    played.status("node", back, {"conditions": [quiet]})
    kubelets, asked = ask(api, back)
    forged, _ = ask(api, live)
    outputs = {"nodes": nodes, "nodeCreated": {node: stamp(asked - timedelta(days=400)) for node in nodes}, "kubeconfig": api.embedded_kubeconfig(), "kubeadminPassword": "unused"}
    stack = SimpleNamespace(name="race", outputs=lambda: {key: auto.OutputValue(value, False) for key, value in outputs.items()})
    config = SimpleNamespace(installer=SimpleNamespace(binary=None, assets_dir=str(tmp_path / "assets"), oc=str(toolchain.binary("kubectl"))), cluster_domain=DOMAIN, platform="openstack")
    monkeypatch.setattr(driver, "_stack", lambda name: stack)
    monkeypatch.setattr(driver, "_config", lambda s: config)
    # Unnamed: both stay pending; the quiet node's request with what to check and how to name it.
    assert main(["approve-csrs", "--stack", "race", "--timeout", "0"], settle=SETTLE) == 1  # one pass
    out = capsys.readouterr().out
    assert (
        f"csr: left pending {kubelets} (client): Node {back} exists and its kubelet stopped reporting at {shut:%Y-%m-%d %H:%M:%S}Z (Ready Unknown): "
        "a kubelet whose client certificate expired (a long shutdown) asks again so, and so may a forger: approved only when named, once the node's journal names it"
    ) in out, out
    assert f"csr:   approve it only if {back}'s kubelet made it: on {back} (its console or ssh), " in out
    assert f"python -m ocp approve-csrs --stack race --csr {kubelets}" in out
    assert f"csr: left pending {forged} (client): Node {live} exists and is Ready as its kubelet reported at " in out, out
    assert f"--csr {forged}" not in out
    no_certificate(api, kubelets)
    no_certificate(api, forged)
    # Named, the forger's request for the node that still reports is refused all the same.
    assert main(["approve-csrs", "--stack", "race", "--csr", forged, "--timeout", "0"], settle=SETTLE) == 1
    out = capsys.readouterr().out
    assert f"csr: left pending {forged} (client): Node live-worker-6 exists and is Ready as its kubelet reported at " in out and "csr: approved" not in out, out
    no_certificate(api, forged)
    # Named, the quiet node's request is approved and signed for exactly that node.
    main(["approve-csrs", "--stack", "race", "--csr", kubelets, "--timeout", "0"], settle=SETTLE)
    out = capsys.readouterr().out
    assert f"csr: approved {kubelets}: client certificate of {back}, a node of this stack whose kubelet stopped reporting at {shut:%Y-%m-%d %H:%M:%S}Z" in out, out
    assert issued(api, kubelets).subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == f"system:node:{back}"
    no_certificate(api, forged)


def test_approve_csrs_takes_the_masters_in_while_the_bootstrap_runs(api, tmp_path, monkeypatch, capsys):
    """A user who runs plain `pulumi up`, not `python -m ocp install`: the bootstrap's blanket approver is
    masked, and `python -m ocp approve-csrs` approves the masters' requests (and the workers') while the
    stack's bootstrap is there and the API says it has not handed over, until they are Ready."""
    nodes = {"plain-bootstrap": "192.0.2.80", "plain-master-0": "192.0.2.81", "plain-worker-0": "192.0.2.90"}
    played = PlayedCluster(api, nodes, DOMAIN, foreign=False)
    for node in played.joining:
        played.ask(node, "client")
    first = min(parse_time(csr(api, played.names[f"{node}-client"])["metadata"]["creationTimestamp"]) for node in played.joining)
    stack_of(api, tmp_path, monkeypatch, {"nodes": nodes, "nodeCreated": {node: stamp(first - timedelta(seconds=2)) for node in played.joining}})
    played.start()
    try:
        code = main(["approve-csrs", "--stack", "race", "--timeout", "2"], settle=SETTLE)
    finally:
        played.stop()
    out = capsys.readouterr().out
    assert code == 0, out
    approved = re.findall(r"^csr: approved (\S+): (\w+) certificate of (\S+),", out, re.M)
    assert sorted(approved) == sorted((played.names[f"{node}-{kind}"], kind, node) for node in played.joining for kind in ("client", "serving")), out
