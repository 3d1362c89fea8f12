"""The on-node networking, checked on the rendered files (no binaries needed; see
test_networking_tools.py for keepalived/haproxy/nft themselves)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import pytest
import yaml
from jinja2 import UndefinedError

from cluster.addresses import AddressPlan, Node, plan_addresses
from cluster.config import ClusterConfig, ConfigError, load_config
from cluster.identity import ClusterIdentity
from cluster.installer_output import RELEASE_FILE, ROOT_FILE, InstallerAssets
from cluster.stackfile import read_stack_file
from ignition import assembly
from ignition.networking import (
    COREFILE,
    HAPROXY_CFG,
    KEEPALIVED_CONF,
    KEEPALIVED_RUN,
    KEEPALIVED_RUN_CONFIG,
    KUBELET_DROPIN,
    MANIFESTS,
    NM_CONF,
    NM_RESOLV_CONF,
    PREPENDER,
    PREPENDER_PATH,
    PREPENDER_SERVICE,
    REDIRECT_CONFIG,
    REDIRECT_SCRIPT,
    REDIRECT_UNIT,
    node_additions,
    node_images,
    vrids,
)
from ignition.nodes import USER_DATA_LIMIT
from ignition.render import render

REPO = Path(__file__).resolve().parents[2]
RELEASE = "quay.io/openshift-release-dev/ocp-release@sha256:" + "e" * 64
# What the installer run records of its release payload: each component pinned by digest.
PAYLOAD = {
    name: f"quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{digit * 64}"
    for name, digit in (("keepalived-ipfailover", "1"), ("haproxy-router", "2"), ("coredns", "3"))
}
IDENTITY = ClusterIdentity("ocp4-x7k2p", b"cluster secret one", RELEASE, PAYLOAD)


# --- helpers, shared with test_networking_tools.py ---------------------------------------

def standalone_config(workers: int | None = None, bootstrap: bool | None = None, **networking: Any) -> ClusterConfig:
    """The standalone stack (the one whose nodes get this networking), optionally with another
    worker count, bootstrap switch or networking keys."""
    raw = dict(read_stack_file(REPO / "Pulumi.standalone.yaml").config)
    raw["ocp:pullSecret"] = '{"auths":{}}'
    for key, field, value in (("workers", "count", workers), ("bootstrap", "enabled", bootstrap)):
        if value is not None:
            section = json.loads(raw[f"ocp:{key}"])
            section[field] = value
            raw[f"ocp:{key}"] = json.dumps(section)
    if networking:
        raw["ocp:networking"] = json.dumps(networking)
    return load_config(raw)


def files_of(config: ClusterConfig, node: Node, identity: ClusterIdentity = IDENTITY) -> dict[str, bytes]:
    return {item.path: item.contents for item in node_additions(config, plan_addresses(config), node, identity).files}


def every_node_kind(config: ClusterConfig) -> list[Node]:
    """Bootstrap, every master and one worker: each distinct kind of keepalived.conf."""
    plan = plan_addresses(config)
    return [plan.bootstrap, *plan.masters, *plan.workers[:1]]


def keepalived(text: str) -> dict[str, dict[str, Any]]:
    """The VRRP instances of a rendered keepalived.conf, each with its checks' weights."""
    weights = {
        name: int(re.search(r"\n\s*weight (-?\d+)", body).group(1))
        for name, body in re.findall(r"^vrrp_script (\w+) \{(.*?)^\}", text, re.S | re.M)
    }
    instances = {}
    for name, body in re.findall(r"^vrrp_instance (\w+) \{(.*?)^\}", text, re.S | re.M):
        def field(key: str) -> str:
            return re.search(rf"^\s*{key} (\S+)$", body, re.M).group(1)

        def block(key: str) -> list[str]:
            return re.search(rf"{key} \{{(.*?)\}}", body, re.S).group(1).split()

        def lines(key: str) -> list[str]:
            return [line.strip() for line in re.search(rf"{key} \{{(.*?)\}}", body, re.S).group(1).splitlines() if line.strip()]

        instances[name] = {
            "vrid": int(field("virtual_router_id")),
            "priority": int(field("priority")),
            "src": IPv4Address(field("unicast_src_ip")),
            "peers": [IPv4Address(line.split()[0]) for line in lines("unicast_peer")],
            "peer_options": {" ".join(line.split()[1:]) for line in lines("unicast_peer")},
            "check_unicast_src": re.search(r"^\s*check_unicast_src$", body, re.M) is not None,
            "password": field("auth_pass"),
            "vip": " ".join(block("virtual_ipaddress")),
            "checks": {check: weights[check] for check in block("track_script")},
        }
    return instances


def vrrp(config: ClusterConfig, node: Node, identity: ClusterIdentity = IDENTITY) -> dict[str, dict[str, Any]]:
    return keepalived(files_of(config, node, identity)[KEEPALIVED_CONF].decode())


def effective_priority(instance: dict[str, Any], passing: set[str]) -> int | None:
    """keepalived's priority with the given checks passing; None when a weight-0 check fails (FAULT)."""
    priority = instance["priority"]
    for check, weight in instance["checks"].items():
        if check in passing:
            priority += max(weight, 0)
        elif weight == 0:
            return None
        else:
            priority -= max(-weight, 0)
    return priority


def resolve(corefile: str, qname: str, qtype: str = "A") -> str | None:
    """What the Corefile's template and hosts blocks answer (CoreDNS runs template before hosts);
    None means the query goes upstream."""
    qname = qname.lower().rstrip(".") + "."
    for kind, zone, body in re.findall(r"template IN (\w+) (\S+) \{(.*?)\n    \}", corefile, re.S):
        if kind != qtype or not (qname == zone + "." or qname.endswith("." + zone + ".")):
            continue
        patterns = re.search(r"match (.+)", body).group(1).split()
        if any(re.search(pattern, qname) for pattern in patterns):
            answer = re.search(r'answer "\{\{ \.Name \}\} \d+ IN A (\S+)"', body)
            return answer.group(1) if answer else "NOERROR"
    hosts = re.search(r"hosts \{(.*?)\n    \}", corefile, re.S).group(1)
    for line in hosts.strip().splitlines():
        ip, *names = line.split()
        if ip[0].isdigit() and qname.rstrip(".") in names:
            return ip if qtype == "A" else "NOERROR"
    return None


# --- VRRP ------------------------------------------------------------------------------------

def test_vrids_are_distinct_in_range_and_follow_the_infra_id_not_the_name():
    config = standalone_config()
    for n in range(500):
        ids = vrids(config, ClusterIdentity(f"ocp4-{n:05x}", b"s"))
        assert ids["api"] != ids["ingress"]
        assert all(1 <= vrid <= 255 for vrid in ids.values())
    # Same name, different installations: different IDs.
    assert vrids(config, IDENTITY) != vrids(config, ClusterIdentity("ocp4-q9z3m", IDENTITY.secret))
    # The name plays no part.
    renamed = config.model_copy(update={"cluster_name": "other"})
    assert vrids(renamed, IDENTITY) == vrids(config, IDENTITY)
    # Nor does the secret: VRIDs are on the wire anyway.
    assert vrids(config, ClusterIdentity(IDENTITY.infra_id, b"another")) == vrids(config, IDENTITY)


def test_vrid_overrides_and_the_derived_one_steps_aside():
    derived = vrids(standalone_config(), IDENTITY)
    assert vrids(standalone_config(apiVrid=7), IDENTITY)["api"] == 7
    assert vrids(standalone_config(apiVrid=7), IDENTITY)["ingress"] != 7
    clash = vrids(standalone_config(ingressVrid=derived["api"]), IDENTITY)
    assert clash["ingress"] == derived["api"] and clash["api"] != clash["ingress"]
    assert vrids(standalone_config(apiVrid=3, ingressVrid=4), IDENTITY) == {"api": 3, "ingress": 4}
    overridden = standalone_config(apiVrid=3, ingressVrid=4, workers=0)
    rendered = vrrp(overridden, plan_addresses(overridden).masters[0])
    assert (rendered["api"]["vrid"], rendered["ingress"]["vrid"]) == (3, 4)


@pytest.mark.parametrize(
    ("networking", "expected"),
    [
        ({"apiVrid": 0}, "ocp:networking.apiVrid: 0 is not a VRRP router ID: write a number from 1 to 255"),
        ({"apiVrid": 9, "ingressVrid": 9}, "ocp:networking: apiVrid and ingressVrid are both 9"),
        ({"advertInt": 0}, "ocp:networking.advertInt: 0 is not a VRRP advertisement interval: write whole seconds"),
        ({"haproxyPort": 9443}, "ocp:networking.haproxyPort: 9443 is taken by OpenShift webhooks"),
        ({"haproxyPort": 80}, "ocp:networking.haproxyPort: 80 is not an unprivileged port"),
        ({"haproxyHealthPort": 9445}, "ocp:networking: haproxy's ports must differ"),
        (
            {"haproxyHealthPort": 50936},
            "ocp:networking.haproxyHealthPort: 50936 is in Linux's ephemeral port range (32768-60999), where "
            "outgoing connections take their ports and can hold this one when haproxy starts: write a port below "
            "32768 or above 60999, e.g. 9444",
        ),
        ({"haproxyPort": 32768}, "ocp:networking.haproxyPort: 32768 is in Linux's ephemeral port range"),
        ({"haproxyStatsPort": 60999}, "ocp:networking.haproxyStatsPort: 60999 is in Linux's ephemeral port range"),
        ({"images": {"coredns": "coredns latest"}}, "ocp:networking.images: coredns: 'coredns latest' is not a pullable"),
        ({"images": {"haproxy": "quay.io/a/b:1"}}, "ocp:networking.images: 'haproxy' is not an image of the on-node"),
        (
            {"haproxyMcsPort": 22625},
            "ocp:networking.haproxyMcsPort: is no longer a setting: new nodes fetch their config from the API VIP "
            "holder's own machine config server, not through haproxy",
        ),
        ({"interface": "br-ex"}, "ocp:networking.interface: unknown key"),
        ({"corednsImage": "quay.io/a/b:1"}, "ocp:networking.corednsImage: unknown key"),
        ({"vrid": 5}, "ocp:networking.vrid: unknown key"),
    ],
)
def test_settings_errors_name_the_key_and_say_what_to_write(networking, expected):
    with pytest.raises(ConfigError) as error:
        standalone_config(**networking)
    assert any(problem.startswith(expected) for problem in error.value.problems), error.value.problems


def test_auth_passwords_come_from_the_cluster_secret_not_the_name():
    config = standalone_config(workers=0)

    def passwords(identity: ClusterIdentity, cfg: ClusterConfig = config) -> dict[str, str]:
        instances = vrrp(cfg, plan_addresses(cfg).masters[0], identity)
        return {name: instance["password"] for name, instance in instances.items()}

    first = passwords(IDENTITY)
    assert all(len(password) == 8 for password in first.values())  # PASS auth uses 8 characters
    assert first["api"] != first["ingress"]
    assert passwords(dataclasses.replace(IDENTITY, secret=b"cluster secret two")) != first
    assert passwords(IDENTITY, config.model_copy(update={"cluster_name": "other"})) == first
    for password in first.values():
        assert config.cluster_name not in password and IDENTITY.infra_id not in password


def _assets(infra_id: str, password: str, root: bytes | None) -> InstallerAssets:
    """The installer's output as the state holds it (a bundle), with the run script's root or without (recorded before it)."""
    files = {name: b"{}" for name in ("bootstrap.ign", "master.ign", "worker.ign")}
    files |= {"metadata.json": json.dumps({"infraID": infra_id}).encode(), "auth/kubeconfig": b"", "auth/kubeadmin-password": password.encode()}
    files[RELEASE_FILE] = json.dumps({"release": RELEASE, "images": PAYLOAD}).encode()
    return InstallerAssets.from_files({**files, **({ROOT_FILE: root} if root is not None else {})})


def test_vrrp_passwords_of_a_stack_recorded_before_the_random_root_stay_as_they_were():
    """A master made later must speak VRRP with the running ones: a bundle without ocp-cluster-root derives as
    the program always did (values made by d2fbdbd's code from this password)."""
    config = standalone_config(workers=0)
    old = _assets("ocp4-x7k2p", "kb4Tq-Zv7Yp-Rc2Ld-Wm9Xn", None).identity
    instances = vrrp(config, plan_addresses(config).masters[0], old)
    assert {name: instance["password"] for name, instance in instances.items()} == {"api": "77024c7b", "ingress": "cf27bfe1"}
    assert old.derive("bootstrap-helper-path", 32) == "70ca57a26cea099b1116dce369395112"


def test_vrrp_passwords_of_a_new_install_come_from_its_random_root_and_infra_id():
    """Not from the kubeadmin password (handed to console users): the same password, or the same root
    under another infra ID, gives other values; the run script's 32 random bytes are the root."""
    config = standalone_config(workers=0)
    master = plan_addresses(config).masters[0]

    def passwords(assets: InstallerAssets) -> dict[str, str]:
        return {name: instance["password"] for name, instance in vrrp(config, master, assets.identity).items()}

    root, password = bytes(range(32)), "kb4Tq-Zv7Yp-Rc2Ld-Wm9Xn"
    first = passwords(_assets("ocp4-x7k2p", password, root))
    assert first != {"api": "77024c7b", "ingress": "cf27bfe1"}  # not the password's
    assert passwords(_assets("ocp4-x7k2p", password, bytes(reversed(root)))) != first  # another cluster, same password
    assert passwords(_assets("ocp4-q9z3m", password, root)) != first  # the infra ID is in every label
    assert passwords(_assets("ocp4-x7k2p", "another-password", root)) == first


def test_an_empty_kubeadmin_password_is_refused():
    """Every stack with one would derive the same secrets (it was the root): refused, saying where to look."""
    with pytest.raises(ValueError, match="auth/kubeadmin-password is empty"):
        _assets("ocp4-x7k2p", " \n", None)


def test_adverts_count_only_from_a_peer_on_the_segment():
    """A pod can read the VRRP password (user_data, served by the metadata service) and can send
    from its node's address (OVN-Kubernetes SNATs it), but its packet is routed: every instance
    takes adverts from its unicast peers alone, at keepalived's own TTL 255."""
    config = standalone_config()
    for node in every_node_kind(config):
        for name, instance in vrrp(config, node).items():
            assert instance["check_unicast_src"], (node.name, name)
            assert instance["peers"] and instance["peer_options"] == {"min_ttl 255"}, (node.name, name)


def test_api_vip_stays_on_the_bootstrap_while_it_serves_then_follows_a_ready_master():
    config = standalone_config()
    plan = plan_addresses(config)
    bootstrap, master = vrrp(config, plan.bootstrap)["api"], vrrp(config, plan.masters[0])["api"]
    healthy_master = effective_priority(master, {"api_ready", "api_haproxy", "mcs_listening"})
    no_mcs_master = effective_priority(master, {"api_ready", "api_haproxy"})  # its MCS is down
    lb_only_master = effective_priority(master, {"api_haproxy", "mcs_listening"})  # its own API is down
    mcs_only_master = effective_priority(master, {"mcs_listening"})  # no API anywhere, its MCS up
    api_only_master = effective_priority(master, {"api_ready"})  # early: no haproxy backend, no MCS yet
    starting_master = effective_priority(master, set())
    live_bootstrap = effective_priority(bootstrap, {"mcs_listening", "api_ready"})
    mcs_only_bootstrap = effective_priority(bootstrap, {"mcs_listening"})  # its API not up yet
    done_bootstrap = effective_priority(bootstrap, {"api_ready"})  # bootkube done: MCS gone

    assert live_bootstrap > healthy_master > no_mcs_master
    assert healthy_master > lb_only_master
    # Only the holder's own MCS answers <API VIP>:22624, while haproxy serves the API through
    # any master: a master whose MCS listens beats one whose MCS does not, whatever its API.
    assert lb_only_master > no_mcs_master and mcs_only_master > effective_priority(master, {"api_ready"})
    assert api_only_master > mcs_only_bootstrap > starting_master
    assert done_bootstrap is None  # FAULT: out of the election, the VIP moves at once
    assert effective_priority(bootstrap, set()) is None
    assert max(live_bootstrap, healthy_master) < 255  # 255 is reserved for the address owner
    assert bootstrap["vrid"] == master["vrid"] and bootstrap["password"] == master["password"]


def test_the_machine_config_server_is_checked_every_second_without_connecting_to_it():
    """OVN-Kubernetes rejects every connection a node opens to 22623/22624: the check looks for
    the listening socket instead (run for real in the lab and test_networking_tools.py)."""
    config = standalone_config()
    plan = plan_addresses(config)
    for node in (plan.bootstrap, plan.masters[0]):
        text = files_of(config, node)[KEEPALIVED_CONF].decode()
        body = re.search(r"^vrrp_script mcs_listening \{(.*?)^\}", text, re.S | re.M).group(1)
        assert "script \"/bin/sh -c 'ss -Hltn sport = :22624 | grep -q .'\"\n" in body
        assert "\n    interval 1\n" in body
        assert not re.search(r"2262[34]/|:2262[34] ", text.replace("sport = :22624 ", ""))  # nothing connects to it


def test_ingress_vip_only_where_a_router_answers():
    config = standalone_config()
    worker = plan_addresses(config).workers[0]
    instances = vrrp(config, worker)
    assert set(instances) == {"ingress"}
    assert effective_priority(instances["ingress"], set()) is None  # FAULT: never holds the VIP
    assert effective_priority(instances["ingress"], {"router_ready"}) is not None
    text = files_of(config, worker)[KEEPALIVED_CONF].decode()
    body = re.search(r"^vrrp_script router_ready \{(.*?)^\}", text, re.S | re.M).group(1)
    # Not ready: out within two checks a second apart, then priority 0 hands the VIP over.
    assert "http://localhost:1936/healthz/ready" in body
    assert "\n    interval 1\n" in body and "\n    fall 2\n" in body


def test_compact_cluster_puts_ingress_on_the_masters():
    compact = standalone_config(workers=0)
    plan = plan_addresses(compact)
    for master in plan.masters:
        instances = vrrp(compact, master)
        assert set(instances) == {"api", "ingress"}
        # As the MCO writes it: ovn-kubernetes leaves addresses labelled vip out of the node's own.
        assert instances["ingress"]["vip"] == f"{plan.ingress_vip}/32 label vip"
        assert instances["ingress"]["peers"] == [slot.ip for slot in plan.master_slots if slot != master]
    with_workers = standalone_config()
    for master in plan_addresses(with_workers).masters:
        assert set(vrrp(with_workers, master)) == {"api"}


@pytest.mark.parametrize("workers", [0, 2])
def test_peers_are_the_other_slots_of_the_same_vip(workers):
    config = standalone_config(workers=workers)
    plan = plan_addresses(config)
    api_candidates = [plan.bootstrap.ip] + [slot.ip for slot in plan.master_slots]
    ingress_candidates = [slot.ip for slot in plan.router_slots]
    for node in plan.nodes:
        for name, instance in vrrp(config, node).items():
            candidates = api_candidates if name == "api" else ingress_candidates
            assert instance["src"] == node.ip
            assert node.ip not in instance["peers"]
            assert instance["peers"] == [ip for ip in candidates if ip != node.ip]
    if workers:
        # The other router slots only, never the 100 reserved worker slots (docs/lab.md, finding 3).
        assert vrrp(config, plan.workers[0])["ingress"]["peers"] == [IPv4Address("10.0.0.31"), IPv4Address("10.0.0.32")]


def test_workers_beyond_the_router_slots_hold_no_vip():
    config = standalone_config(workers=5)
    plan = plan_addresses(config)
    assert [node.name for node in plan.router_slots] == ["ocp4-worker-0", "ocp4-worker-1", "ocp4-worker-2"]
    for worker in plan.workers[3:]:
        files = files_of(config, worker)
        assert KEEPALIVED_CONF not in files and f"{MANIFESTS}/keepalived.yaml" not in files
        assert COREFILE in files  # DNS on every node all the same


# --- DNS, haproxy, what each node gets ---------------------------------------------------

def test_coredns_answers_the_cluster_names_and_forwards_the_rest():
    config = standalone_config()
    plan = plan_addresses(config)
    corefile = files_of(config, plan.masters[0])[COREFILE].decode()
    domain = config.cluster_domain
    for name in (f"api.{domain}", f"api-int.{domain}", f"API.{domain}."):
        assert resolve(corefile, name) == str(plan.api_vip)
    for name in (f"console-openshift-console.apps.{domain}", f"a.b.apps.{domain}"):
        assert resolve(corefile, name) == str(plan.ingress_vip)
    for slot in (plan.bootstrap, *plan.master_slots, *plan.worker_slots):
        assert resolve(corefile, slot.name) == str(slot.ip)
        assert resolve(corefile, slot.fqdn(domain)) == str(slot.ip)
        assert resolve(corefile, slot.fqdn(domain), "AAAA") == "NOERROR"
    assert resolve(corefile, f"api.{domain}", "AAAA") == "NOERROR"  # not the upstream's NXDOMAIN
    for name in (f"apps.{domain}", f"apix.{domain}", "api.example.com", "quay.io", f"{domain}"):
        assert resolve(corefile, name) is None
    assert re.search(r"^    forward \. 10\.20\.0\.1 \{$", corefile, re.M)
    for directive in ("health :18080", "cache 30", "errors", "reload"):
        assert f"\n    {directive}\n" in corefile


def test_every_node_points_resolv_conf_at_its_own_coredns():
    config = standalone_config()
    plan = plan_addresses(config)
    for node in plan.nodes:
        additions = node_additions(config, plan, node, IDENTITY)
        prepender = next(item for item in additions.files if item.path == PREPENDER)
        assert prepender.mode == 0o755
        assert f"-v ip='{node.ip}'" in prepender.contents.decode()
        assert f"-v domain='{config.cluster_domain}'" in prepender.contents.decode()


def test_haproxy_balances_over_every_master_slot_with_readyz_checks():
    config = standalone_config()
    plan = plan_addresses(config)
    files = files_of(config, plan.masters[0])
    cfg = files[HAPROXY_CFG].decode()
    servers = re.findall(r"^    server (\S+) (\S+)$", cfg, re.M)
    # The API only: haproxy's connections to the masters' MCS would be rejected by OVN-Kubernetes.
    assert servers == [(slot.name, f"{slot.ip}:6443") for slot in plan.master_slots]
    sections = re.findall(r"^(?:frontend|backend) (\S+)$", cfg, re.M)
    assert sections == ["api", "masters", "health", "stats"]
    assert "default-server check check-ssl verify none inter 500ms fall 2 rise 3" in cfg
    assert "option redispatch 1" in cfg  # a refused connection goes to another master at once
    assert "bind :9445\n" in cfg and "bind 127.0.0.1:29445\n" in cfg and "bind 127.0.0.1:9444\n" in cfg
    assert "timeout tunnel 86400s" in cfg
    env = dict(line.split("=", 1) for line in files[REDIRECT_CONFIG].decode().splitlines() if "=" in line)
    assert env == {
        "VIP": str(plan.api_vip),
        "API_PORT": "6443",
        "LB_PORT": "9445",
        "HEALTH_URL": "http://127.0.0.1:9444/haproxy_ready",
        "TABLE": "api_vip_redirect",
        "INTERVAL": "1",
    }


EXPECTED_FILES = {
    "bootstrap": {
        COREFILE: 0o644,
        "/etc/kubernetes/manifests/coredns.yaml": 0o644,
        PREPENDER: 0o755,
        NM_CONF: 0o644,
        KUBELET_DROPIN: 0o644,
        KEEPALIVED_CONF: 0o600,
        KEEPALIVED_RUN: 0o755,
        KEEPALIVED_RUN_CONFIG: 0o644,
        "/etc/kubernetes/manifests/keepalived.yaml": 0o644,
    },
}
EXPECTED_FILES["worker"] = EXPECTED_FILES["bootstrap"]
EXPECTED_FILES["master"] = {
    **EXPECTED_FILES["bootstrap"],
    HAPROXY_CFG: 0o644,
    "/etc/kubernetes/manifests/haproxy.yaml": 0o644,
    REDIRECT_SCRIPT: 0o755,
    REDIRECT_CONFIG: 0o644,
}


def test_templates_render_strictly():
    with pytest.raises(UndefinedError):
        render("keepalived.conf.j2", node_name="x")


def test_what_each_role_gets():
    override = "registry.example.com/dns/coredns@sha256:" + "a" * 64
    config = standalone_config(images={"coredns": override})
    plan = plan_addresses(config)
    for node in every_node_kind(config):
        additions = node_additions(config, plan, node, IDENTITY)
        assert {item.path: item.mode for item in additions.files} == EXPECTED_FILES[node.role]
        assert [(unit.name, unit.enabled) for unit in additions.units] == [
            (PREPENDER_PATH, True),
            (PREPENDER_SERVICE, True),
            *([(REDIRECT_UNIT, True)] if node.role == "master" else []),
        ]
        images = node_images(config, node, IDENTITY)
        for item in additions.files:
            if item.path.startswith("/etc/kubernetes/manifests/"):
                pod = yaml.safe_load(item.contents)
                container = pod["spec"]["containers"][0]
                name = {"keepalived": "keepalived-ipfailover", "haproxy": "haproxy-router"}.get(
                    pod["metadata"]["name"], pod["metadata"]["name"]
                )
                assert container["image"] == images[name][0]
                assert pod["spec"]["hostNetwork"] is True
                assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]
                assert set(pod["metadata"]["annotations"]) == {
                    "target.workload.openshift.io/management",
                    "openshift.io/required-scc",
                }
                assert "livenessProbe" in container
                config_dir = pod["spec"]["volumes"][0]["hostPath"]["path"]
                assert any(path.startswith(config_dir + "/") for path in EXPECTED_FILES[node.role])
                assert any(word.startswith(config_dir + "/") for word in container["command"])
    unit = next(unit for unit in node_additions(config, plan, plan.masters[0], IDENTITY).units if unit.name == REDIRECT_UNIT).contents
    assert f"ExecStart={REDIRECT_SCRIPT} {REDIRECT_CONFIG} run\n" in unit
    assert f"ExecStopPost={REDIRECT_SCRIPT} {REDIRECT_CONFIG} remove\n" in unit


def test_images_come_from_the_payload_unless_overridden():
    config = standalone_config()
    plan = plan_addresses(config)
    assert node_images(config, plan.masters[0], IDENTITY) == {name: (ref, "payload") for name, ref in PAYLOAD.items()}
    # A worker beyond the router slots runs CoreDNS only; a router slot keepalived too.
    assert node_images(config, plan_addresses(standalone_config(workers=5)).workers[4], IDENTITY) == {
        "coredns": (PAYLOAD["coredns"], "payload")
    }
    assert set(node_images(config, plan.workers[0], IDENTITY)) == {"coredns", "keepalived-ipfailover"}
    mirrored = "mirror.example.com/ocp/release@sha256:" + "b" * 64
    overridden = standalone_config(images={"haproxy-router": mirrored})
    images = node_images(overridden, plan.masters[0], IDENTITY)
    assert images["haproxy-router"] == (mirrored, "override")
    assert images["coredns"] == (PAYLOAD["coredns"], "payload")
    haproxy = yaml.safe_load(files_of(overridden, plan.masters[0])[f"{MANIFESTS}/haproxy.yaml"])
    assert haproxy["spec"]["containers"][0]["image"] == mirrored


def test_an_image_in_neither_payload_nor_override_names_the_key_to_set():
    config = standalone_config(images={"coredns": "mirror.example.com/coredns:4.16"})
    plan = plan_addresses(config)
    partial = ClusterIdentity(IDENTITY.infra_id, IDENTITY.secret, RELEASE, {"keepalived-ipfailover": PAYLOAD["keepalived-ipfailover"]})
    with pytest.raises(ConfigError) as error:
        node_additions(config, plan, plan.masters[0], partial)
    assert len(error.value.problems) == 1
    assert error.value.problems[0].startswith(f"ocp:networking.images.haproxy-router: no image for /usr/sbin/haproxy in {RELEASE}")
    # A worker runs no haproxy: nothing missing there.
    assert set(node_images(config, plan.workers[0], partial)) == {"coredns", "keepalived-ipfailover"}


def test_no_interface_name_in_any_rendered_file():
    """keepalived-run finds the interface at run time: nothing names one, not even br-ex."""
    config = standalone_config(workers=0)
    names = re.compile(r"\b(ens\d+|enp\d+s\d+|eth\d+|br-ex)\b")
    for node in every_node_kind(config):
        for path, contents in files_of(config, node).items():
            assert not names.search(contents.decode()), (node.name, path)
    conf = files_of(config, plan_addresses(config).masters[0])[KEEPALIVED_CONF].decode()
    assert conf.count("interface $VRRP_INTERFACE\n") == 2
    assert "max_auto_priority -1\n" in conf
    assert "advert_int 3\n" in files_of(standalone_config(advertInt=3), plan_addresses(config).masters[0])[KEEPALIVED_CONF].decode()


def test_networkmanager_leaves_resolv_conf_to_the_prepender_and_the_kubelet_waits_for_it():
    """OPNET-569: a path unit on NetworkManager's resolv.conf starts a oneshot service, no
    NetworkManager dispatcher script (the MCO moved off it because of races)."""
    config = standalone_config()
    plan = plan_addresses(config)
    for node in every_node_kind(config):
        files = files_of(config, node)
        nm = files[NM_CONF].decode()
        assert "[main]\nrc-manager=unmanaged\n" in nm
        dropin = files[KUBELET_DROPIN].decode()
        assert f'grep -qx "nameserver {node.ip}" /etc/resolv.conf' in dropin and "exit 255" in dropin
        assert f"After={PREPENDER_SERVICE}\n" in dropin
        assert not any(path.startswith("/etc/NetworkManager/dispatcher.d/") for path in files)
        units = {unit.name: unit.contents for unit in node_additions(config, plan, node, IDENTITY).units}
        assert f"PathChanged={NM_RESOLV_CONF}\nUnit={PREPENDER_SERVICE}\n" in units[PREPENDER_PATH]
        assert f"Type=oneshot\nExecStart={PREPENDER}\n" in units[PREPENDER_SERVICE]
    assert KUBELET_DROPIN.startswith("/etc/systemd/system/kubelet.service.d/")


# --- change isolation, determinism, size ---------------------------------------------------

def _additions_by_node(config: ClusterConfig) -> dict[str, assembly.Additions]:
    plan = plan_addresses(config)
    return {node.name: node_additions(config, plan, node, IDENTITY) for node in plan.nodes}


def test_scaling_workers_or_dropping_the_bootstrap_changes_no_other_node():
    variants = [standalone_config(workers=n, bootstrap=b) for n in (1, 2, 5) for b in (True, False)]
    rendered = [_additions_by_node(config) for config in variants]
    for first in rendered:
        for second in rendered:
            for name in first.keys() & second.keys():
                assert first[name] == second[name], name


def test_compact_cluster_changes_only_the_masters_keepalived_conf():
    compact, scaled = _additions_by_node(standalone_config(workers=0)), _additions_by_node(standalone_config(workers=2))
    for name in compact.keys() & scaled.keys():
        before = {item.path: item for item in compact[name].files}
        after = {item.path: item for item in scaled[name].files}
        changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
        assert changed == ({KEEPALIVED_CONF} if "master" in name else set()), name
        assert compact[name].units == scaled[name].units


def _digest() -> str:
    config = standalone_config(workers=0)
    additions = _additions_by_node(config).values()
    parts = [assembly.dumps(assembly.with_additions({}, item)) for item in additions]
    return hashlib.sha256("".join(parts).encode()).hexdigest()


def test_rendering_is_deterministic_across_processes():
    code = "from tests.ignition.test_networking import _digest; print(_digest())"
    digests = {
        subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert digests == {_digest()}


def pointer_like(role: str) -> dict[str, Any]:
    """About the size of the installer's master/worker pointer config (~2 KB)."""
    body = base64.b64encode(bytes(range(256)) * 4).decode()
    ca = f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    return {
        "ignition": {
            "version": "3.2.0",
            "config": {"merge": [{"source": f"https://10.0.0.5:22623/config/{role}"}]},
            "security": {"tls": {"certificateAuthorities": [
                {"source": "data:text/plain;charset=utf-8;base64," + base64.b64encode(ca.encode()).decode()}
            ]}},
        }
    }


def user_data(config: ClusterConfig, plan: AddressPlan, node: Node) -> str:
    additions = assembly.hostname(node.name) + node_additions(config, plan, node, IDENTITY)
    if node.role == "bootstrap":
        served = "{}" * 150_000  # stands in for the ~300 KB bootstrap config
        return assembly.dumps(assembly.shim_config("http://10.0.0.11:8080/b.ign", served, [], additions))
    return assembly.dumps(assembly.with_additions(pointer_like(node.role), additions))


def test_user_data_fits_the_budget_with_100_worker_slots(record_property):
    for workers in (0, 2):
        config = standalone_config(workers=workers)
        plan = plan_addresses(config)
        assert len(plan.worker_slots) == 100
        for node in every_node_kind(config):
            size = len(user_data(config, plan, node).encode())
            record_property(f"user_data/{workers}-workers/{node.name}", size)
            print(f"user_data with {workers} workers, {node.name}: {size} bytes")
            assert size < USER_DATA_LIMIT, (node.name, size)
    assert len(json.dumps(pointer_like("master"))) in range(1800, 2400)


def test_the_most_worker_slots_the_config_allows_still_fit_the_budget():
    config = standalone_config(workers=2)
    config = config.model_copy(update={"workers": config.workers.model_copy(update={"max_count": 500})})
    plan = plan_addresses(config)
    sizes = {node.name: len(user_data(config, plan, node).encode()) for node in every_node_kind(config)}
    assert max(sizes.values()) < USER_DATA_LIMIT, sizes
