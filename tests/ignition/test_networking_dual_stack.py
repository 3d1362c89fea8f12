"""The on-node networking with two address families (and IPv6 alone): the rendered files, then
the real tools on them (keepalived, haproxy, nft, shellcheck, ignition-validate). Single-family
IPv4 stacks are held byte-identical by test_networking.py and tests/test_states.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path
from typing import Any

import pytest

from cluster.addresses import Node, plan_addresses
from cluster.config import ClusterConfig, load_config
from cluster.identity import ClusterIdentity
from cluster.stackfile import read_stack_file
from harness import netns
from ignition.networking import (
    COREFILE,
    HAPROXY_CFG,
    KEEPALIVED_CONF,
    KEEPALIVED_RUN_CONFIG,
    KUBELET_DROPIN,
    PREPENDER,
    REDIRECT_CONFIG,
    REDIRECT_SCRIPT,
    REDIRECT_TABLE,
    vrids,
)
from ignition.nodes import USER_DATA_LIMIT
from tests.ignition.test_networking import IDENTITY, REPO, every_node_kind, files_of, standalone_config, user_data
from tests.ignition.test_networking_tools import CONNECT, HEALTH_STUB, NICS, Runner, _wait_for, ignition_validate_every_node_kind, need, shellcheck_master_scripts

IPV4 = {"machine": "10.0.0.0/16", "cluster": {"cidr": "10.128.0.0/14", "hostPrefix": 23}, "service": "172.30.0.0/16"}
IPV6 = {"machine": "fd00:10::/64", "cluster": {"cidr": "fd01::/48", "hostPrefix": 64}, "service": "fd02::/112"}


def families_config(*families: dict[str, Any], workers: int | None = None) -> ClusterConfig:
    """The standalone stack with these address families, the first the primary (upstream's
    install-config lists: machine, cluster and service networks in the same order)."""
    raw = dict(read_stack_file(REPO / "Pulumi.standalone.yaml").config)
    raw["ocp:pullSecret"] = '{"auths":{}}'
    raw["ocp:machineNetwork"] = json.dumps([family["machine"] for family in families])
    raw["ocp:clusterNetwork"] = json.dumps([family["cluster"] for family in families])
    raw["ocp:serviceNetwork"] = json.dumps([family["service"] for family in families])
    if families != (IPV4,):  # IPv6 needs a network the user brings (one subnet per family)
        subnets = [f"nodes-ipv{4 if family is IPV4 else 6}" for family in families]
        openstack = {**json.loads(raw["ocp:openstack"]), "existingNetwork": {"networkId": "nodes", "subnetId": subnets}}
        if IPV4 not in families:  # IPv6 alone: no floating IPs (IPv4), SSH from its own family
            for key in ("externalNetwork", "apiFloatingIp", "ingressFloatingIp"):
                openstack.pop(key, None)
            openstack["sshAllowedCidr"] = IPV6["machine"]
            bootstrap = json.loads(raw["ocp:bootstrap"])
            raw["ocp:bootstrap"] = json.dumps({**bootstrap, "helper": {**bootstrap.get("helper", {}), "floatingIp": False}})
        raw["ocp:openstack"] = json.dumps(openstack)
    if workers is not None:
        raw["ocp:workers"] = json.dumps({**json.loads(raw["ocp:workers"]), "count": workers})
    return load_config(raw)


# Standalone nodes run platform: none, where the installer takes two families with IPv4 first only.
DUAL = {"ipv4-first": (IPV4, IPV6)}


def instances(text: str) -> dict[str, dict[str, Any]]:
    """The VRRP instances of a rendered keepalived.conf, of either family."""
    found = {}
    for name, body in re.findall(r"^vrrp_instance (\w+) \{(.*?)^\}", text, re.S | re.M):
        def field(key: str) -> str | None:
            match = re.search(rf"^\s*{key} (\S+)$", body, re.M)
            return match.group(1) if match else None

        peers = re.search(r"unicast_peer \{(.*?)\}", body, re.S).group(1).splitlines()
        found[name] = {
            "interface": field("interface"),
            "vrid": int(field("virtual_router_id")),
            "priority": int(field("priority")),
            "src": ip_address(field("unicast_src_ip")),
            "peers": [ip_address(line.split()[0]) for line in peers if line.strip()],
            "password": field("auth_pass"),
            "vip": " ".join(re.search(r"virtual_ipaddress \{(.*?)\}", body, re.S).group(1).split()),
            "checks": re.search(r"track_script \{(.*?)\}", body, re.S).group(1).split(),
            "text": body,
        }
    return found


def of_family(addresses: tuple[IPv4Address | IPv6Address, ...], version: int) -> IPv4Address | IPv6Address:
    return next(address for address in addresses if address.version == version)


# --- what each node gets ------------------------------------------------------------------------

@pytest.mark.parametrize("order", list(DUAL))
def test_every_vip_of_each_family_has_its_own_vrrp_instance(order: str):
    """keepalived refuses one instance with both families: the second family's VIPs get instances
    of their own, speaking from the node's address of that family to the peers' of that family."""
    config = families_config(*DUAL[order])
    plan = plan_addresses(config)
    primary, second = 4, 6
    suffix = f"_ipv{second}"
    for node in every_node_kind(config):
        found = instances(files_of(config, node)[KEEPALIVED_CONF].decode())
        bases = ["api"] * (node.role != "worker") + ["ingress"] * (node in plan.router_slots)
        assert list(found) == [name for base in bases for name in (base, base + suffix)], node.name
        for base in bases:
            vips = plan.api_vips if base == "api" else plan.ingress_vips
            candidates = (plan.bootstrap, *plan.master_slots) if base == "api" else plan.router_slots
            for name, version in ((base, primary), (base + suffix, second)):
                instance = found[name]
                assert instance["src"] == of_family(node.ips, version)
                assert instance["peers"] == [of_family(other.ips, version) for other in candidates if other != node]
                assert instance["interface"] == ("$VRRP_INTERFACE" if version == primary else f"$VRRP_INTERFACE{suffix.upper()}")
                if version == 4:
                    assert instance["vip"] == f"{of_family(vips, 4)}/32 label vip"
                    assert instance["password"] is not None and len(instance["password"]) == 8
                else:
                    # VRRP version 3: no authentication; deprecated, so never a source address.
                    assert instance["vip"] == f"{of_family(vips, 6)}/128 preferred_lft 0"
                    assert instance["password"] is None and "authentication {" not in instance["text"]
                assert "check_unicast_src" in instance["text"] and " min_ttl 255\n" in instance["text"]
            # Both families' VIPs follow the same health: same checks, same priority.
            assert found[base]["checks"] == found[base + suffix]["checks"]
            assert found[base]["priority"] == found[base + suffix]["priority"]


def test_the_ipv4_instances_of_a_dual_stack_node_are_those_of_an_ipv4_one():
    """Adding IPv6 changes nothing of the IPv4 elections: the same IDs, passwords, peers."""
    dual, single = families_config(IPV4, IPV6, workers=0), standalone_config(workers=0)
    for node_dual, node_single in zip(every_node_kind(dual), every_node_kind(single), strict=True):
        two, one = (instances(files_of(c, n)[KEEPALIVED_CONF].decode()) for c, n in ((dual, node_dual), (single, node_single)))
        assert {name: two[name]["text"] for name in one} == {name: one[name]["text"] for name in one}


def test_vrids_of_every_instance_are_distinct_and_follow_the_infra_id():
    config = families_config(IPV4, IPV6)
    for n in range(300):
        ids = vrids(config, ClusterIdentity(f"ocp4-{n:05x}", b"s"))
        assert set(ids) == {"api", "ingress", "api_ipv6", "ingress_ipv6"}
        assert len(set(ids.values())) == 4 and all(1 <= vrid <= 255 for vrid in ids.values())
    assert vrids(config, IDENTITY) == vrids(config, IDENTITY)
    assert vrids(config, IDENTITY) != vrids(config, ClusterIdentity("ocp4-q9z3m", IDENTITY.secret))
    # The primary family's IDs are the single-family stack's; IPv6 first names the IPv4 ones.
    assert {key: vrids(config, IDENTITY)[key] for key in ("api", "ingress")} == vrids(standalone_config(), IDENTITY)
    assert set(vrids(families_config(IPV6), IDENTITY)) == {"api", "ingress"}


def test_vrid_overrides_move_the_second_familys_ids_with_them():
    base = families_config(IPV4, IPV6)
    overridden = base.model_copy(
        update={"networking": base.networking.model_copy(update={"api_vrid": 3, "ingress_vrid": 4})}
    )
    ids = vrids(overridden, IDENTITY)
    assert (ids["api"], ids["ingress"]) == (3, 4)
    assert len(set(ids.values())) == 4 and ids["api_ipv6"] == 3 + 127
    for name, instance in instances(files_of(overridden, plan_addresses(overridden).masters[0])[KEEPALIVED_CONF].decode()).items():
        assert instance["vrid"] == ids[name]


def _answers(corefile: str, qtype: str, name: str) -> list[str] | str | None:
    """What the Corefile answers for `name`: template answers, the hosts entries of that family, an
    empty NOERROR, or None (upstream)."""
    qname = name.rstrip(".") + "."
    for kind, body in re.findall(r"template IN (\w+) \S+ \{(.*?)\n    \}", corefile, re.S):
        if kind == qtype and any(re.search(p, qname) for p in re.search(r"match (.+)", body).group(1).split()):
            answer = re.search(rf'answer "\{{\{{ \.Name \}}\}} 60 IN {qtype} (\S+)"', body)
            return [answer.group(1)] if answer else "NOERROR"
    hosts = [line.split() for line in re.search(r"hosts \{(.*?)\n    \}", corefile, re.S).group(1).strip().splitlines()]
    matching = [ip for ip, *names in hosts if name.rstrip(".") in names]
    if matching:
        wanted = [ip for ip in matching if ip_address(ip).version == (4 if qtype == "A" else 6)]
        return wanted or "NOERROR"
    return None


@pytest.mark.parametrize("order", list(DUAL))
def test_coredns_answers_both_families(order: str):
    config = families_config(*DUAL[order])
    plan = plan_addresses(config)
    domain = config.cluster_domain
    corefile = files_of(config, plan.masters[0])[COREFILE].decode()
    for qtype, version in (("A", 4), ("AAAA", 6)):
        for name in (f"api.{domain}", f"api-int.{domain}"):
            assert _answers(corefile, qtype, name) == [str(of_family(plan.api_vips, version))]
        assert _answers(corefile, qtype, f"console-openshift-console.apps.{domain}") == [str(of_family(plan.ingress_vips, version))]
        for slot in (plan.bootstrap, *plan.master_slots, *plan.worker_slots[:3]):
            assert _answers(corefile, qtype, slot.fqdn(domain)) == [str(of_family(slot.ips, version))]
    assert "rcode NOERROR" not in corefile  # both families have records
    assert _answers(corefile, "AAAA", "quay.io") is None


def test_coredns_of_an_ipv6_only_cluster_answers_a_queries_empty():
    config = families_config(IPV6)
    plan = plan_addresses(config)
    corefile = files_of(config, plan.masters[0])[COREFILE].decode()
    domain = config.cluster_domain
    assert _answers(corefile, "AAAA", f"api.{domain}") == [str(plan.api_vip)]
    assert _answers(corefile, "A", f"api.{domain}") == "NOERROR"  # not the upstream's NXDOMAIN
    assert _answers(corefile, "A", f"x.apps.{domain}") == "NOERROR"
    assert "# IPv6-only names: an empty answer, not the upstream's NXDOMAIN that would hide the AAAA record." in corefile


@pytest.mark.parametrize("order", [*DUAL, "ipv6-only"])
def test_haproxy_listens_on_both_families_and_balances_over_the_primary_familys_addresses(order: str):
    config = families_config(*DUAL[order]) if order in DUAL else families_config(IPV6)
    plan = plan_addresses(config)
    files = files_of(config, plan.masters[0])
    cfg = files[HAPROXY_CFG].decode()
    assert "\n    bind :::9445 v4v6\n" in cfg  # the redirect sends each VIP's family to the local port
    servers = re.findall(r"^    server (\S+) (\S+)$", cfg, re.M)
    literal = (lambda ip: f"[{ip}]") if plan.network.version == 6 else str
    assert servers == [(slot.name, f"{literal(slot.ip)}:6443") for slot in plan.master_slots]
    env = dict(line.split("=", 1) for line in files[REDIRECT_CONFIG].decode().splitlines() if "=" in line)
    assert env["VIPS"] == '"' + " ".join(map(str, plan.api_vips)) + '"' and "VIP" not in env


@pytest.mark.parametrize("order", list(DUAL))
def test_keepalived_run_knows_each_familys_address_and_every_vip(order: str):
    config = families_config(*DUAL[order], workers=0)
    plan = plan_addresses(config)
    node = plan.masters[1]
    env = dict(line.split("=", 1) for line in files_of(config, node)[KEEPALIVED_RUN_CONFIG].decode().splitlines() if "=" in line)
    second = "IPV6"
    assert env["NODE_IP"] == str(node.ip)
    assert env["INTERFACES"] == f'"VRRP_INTERFACE={node.ips[0]} VRRP_INTERFACE_{second}={node.ips[1]}"'
    assert env["VIPS"] == '"' + " ".join(map(str, (*plan.api_vips, *plan.ingress_vips))) + '"'


@pytest.mark.parametrize("order", [*DUAL, "ipv6-only"])
def test_resolv_conf_names_the_nodes_primary_address(order: str):
    """CoreDNS listens on every address: resolv.conf names the primary one, as with one family."""
    config = families_config(*DUAL[order]) if order in DUAL else families_config(IPV6)
    for node in every_node_kind(config):
        files = files_of(config, node)
        assert f"-v ip='{node.ip}'" in files[PREPENDER].decode()
        assert f'grep -qx "nameserver {node.ip}" /etc/resolv.conf' in files[KUBELET_DROPIN].decode()


def test_dual_stack_user_data_fits_the_budget_up_to_400_worker_slots(record_property):
    """Every node slot is in CoreDNS's hosts twice: 400 reserved worker slots fit the project's
    budget (half of Nova's), 500 do not (docs/networking.md; the plan then stops, naming the node)."""
    for families, max_count in (((IPV4, IPV6), None), ((IPV4, IPV6), 400), ((IPV6,), 400)):
        config = families_config(*families, workers=2)
        if max_count:
            config = config.model_copy(update={"workers": config.workers.model_copy(update={"max_count": max_count})})
        plan = plan_addresses(config)
        for node in every_node_kind(config):
            size = len(user_data(config, plan, node).encode())
            record_property(f"user_data/dual/{len(plan.worker_slots)}-slots/{node.name}", size)
            assert size < USER_DATA_LIMIT, (node.name, size)


# --- the real tools ----------------------------------------------------------------------------

def _cases() -> list[tuple[str, ClusterConfig, Node]]:
    cases = []
    for order, families in (*DUAL.items(), ("ipv6-only", (IPV6,))):
        config = families_config(*families)
        kinds = every_node_kind(config)  # a master and a worker each; the bootstrap of one
        chosen = [kinds[1], kinds[-1]] + [kinds[0]] * (order == "ipv6-only")
        cases += [(f"{order}-{node.name}", config, node) for node in chosen]
    return cases


CASES = _cases()


def _attach(lab: netns.Lab, namespace: str, interface: str, plan, node: Node) -> None:
    """The node's NIC with its address of each family (IPv6 without duplicate address detection)."""
    lab.attach(namespace, interface, f"{node.ips[0]}/{plan.networks[0].prefixlen}")
    for address, network in zip(node.ips[1:], plan.networks[1:], strict=True):
        lab.run(namespace, ["ip", "addr", "add", f"{address}/{network.prefixlen}", "dev", interface, "nodad"], check=True)


@pytest.mark.parametrize(("config", "node"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_keepalived_accepts_the_config_keepalived_run_makes(tmp_path: Path, config: ClusterConfig, node: Node):
    need("keepalived", root=True)
    plan = plan_addresses(config)
    with netns.lab("k6") as lab:
        namespace = lab.namespace("node")
        _attach(lab, namespace, NICS[node.role], plan, node)
        runner = Runner(lab, namespace, files_of(config, node), tmp_path)
        runner.start()
        _wait_for(runner.alive, "keepalived to run")
        generated = runner.config().read_text()
        result = lab.run(namespace, ["keepalived", "-t", "-f", str(runner.config())])
    definitions = [f"$VRRP_INTERFACE={NICS[node.role]}"]
    if len(plan.networks) == 2:
        definitions.append(f"$VRRP_INTERFACE_IPV{plan.networks[1].version}={NICS[node.role]}")
    assert generated.startswith("\n".join(definitions) + "\n"), runner.text()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def _addresses(lab: netns.Lab, namespace: str) -> str:
    return lab.run(namespace, ["ip", "-o", "addr", "show"]).stdout


def test_keepalived_run_takes_both_families_vips_removes_stale_ones_and_follows_the_addresses(tmp_path: Path):
    """A dual-stack master alone: stale VIPs of both families removed at start, both API VIPs
    taken on the NIC (the IPv6 one deprecated), both followed to br-ex when OVN-Kubernetes moves
    the addresses (IPv6 with duplicate address detection: keepalived waits for it), none left
    after SIGTERM."""
    need("keepalived", "sh", root=True)
    config = families_config(IPV4, IPV6)
    plan = plan_addresses(config)
    node = plan.masters[0]
    v4, v6 = (f"{network.prefixlen}" for network in plan.networks)
    with netns.lab("k6r") as lab:
        namespace = lab.namespace("node")
        _attach(lab, namespace, "ens3", plan, node)
        for stale in (f"{plan.ingress_vips[0]}/32", f"{plan.ingress_vips[1]}/128"):
            lab.run(namespace, ["ip", "addr", "add", stale, "dev", "ens3", "nodad"], check=True)
        runner = Runner(lab, namespace, files_of(config, node), tmp_path)
        runner.start()
        for stale in (f"{plan.ingress_vips[0]}/32", f"{plan.ingress_vips[1]}/128"):
            _wait_for(lambda stale=stale: f"removed VIP {stale} from ens3" in runner.text(), f"the stale {stale} to go")
        _wait_for(lambda: f" ens3    inet {plan.api_vips[0]}/32" in _addresses(lab, namespace), "the IPv4 VIP on ens3")
        _wait_for(lambda: f" ens3    inet6 {plan.api_vips[1]}/128" in _addresses(lab, namespace), "the IPv6 VIP on ens3")
        line = next(line for line in _addresses(lab, namespace).splitlines() if f" {plan.api_vips[1]}/128" in line)
        assert "deprecated" in line and "preferred_lft 0sec" in line, line

        for command in (
            ["ip", "addr", "flush", "dev", "ens3"],
            ["ip", "link", "add", "br-ex", "type", "bridge"],
            ["ip", "link", "set", "ens3", "master", "br-ex"],
            ["ip", "link", "set", "br-ex", "up"],
            ["ip", "addr", "add", f"{node.ips[0]}/{v4}", "dev", "br-ex"],
            ["ip", "addr", "add", f"{node.ips[1]}/{v6}", "dev", "br-ex"],  # with duplicate address detection
        ):
            lab.run(namespace, command, check=True)
        _wait_for(lambda: "starting keepalived on br-ex, which holds 10.0.0.20" in runner.text(), "keepalived to follow")
        _wait_for(lambda: f" br-ex    inet6 {plan.api_vips[1]}/128" in _addresses(lab, namespace), "the IPv6 VIP on br-ex")
        _wait_for(lambda: f" br-ex    inet {plan.api_vips[0]}/32" in _addresses(lab, namespace), "the IPv4 VIP on br-ex")
        assert runner.config().read_text().startswith("$VRRP_INTERFACE=br-ex\n$VRRP_INTERFACE_IPV6=br-ex\n")
        assert "(api_ipv6) Entering MASTER STATE" in runner.text()

        assert runner.process is not None
        runner.process.terminate()
        runner.process.wait(timeout=10)
        left = _addresses(lab, namespace)
        assert str(plan.api_vips[0]) not in left and str(plan.api_vips[1]) not in left
        assert not runner.alive()
    assert runner.process.returncode == 0


def test_two_masters_elect_one_holder_of_the_ipv6_api_vip(tmp_path: Path):
    """Two dual-stack masters on one segment, nothing else: each family's API VIP has exactly one
    holder. keepalived sends unicast IPv6 adverts at hop limit 64 unless told (found in the lab):
    the peer's min_ttl 255 then drops them and both masters hold the IPv6 VIP."""
    need("keepalived", "sh", root=True)
    config = families_config(IPV4, IPV6)
    plan = plan_addresses(config)
    masters = plan.masters[:2]
    with netns.lab("k6e") as lab:
        namespaces, runners = [], []
        for master in masters:
            namespace = lab.namespace(master.name.rsplit("-", 1)[-1])
            first, *more = (f"{ip}/{network.prefixlen}" for ip, network in zip(master.ips, plan.networks, strict=True))
            lab.attach(namespace, "ens3", first, more=more)
            work = tmp_path / master.name
            work.mkdir()
            runners.append(Runner(lab, namespace, files_of(config, master), work))
            namespaces.append(namespace)
        for runner in runners:
            runner.start()

        def holders(vip: object) -> list[str]:
            return [ns for ns in namespaces if f" {vip}/" in _addresses(lab, ns)]

        _wait_for(lambda: all(holders(vip) for vip in plan.api_vips), "both API VIPs held")
        # Longer than a takeover (3 adverts and the skew): a second holder would have shown.
        deadline = time.monotonic() + 4.5
        while time.monotonic() < deadline:
            assert [len(holders(vip)) for vip in plan.api_vips] == [1, 1], [holders(vip) for vip in plan.api_vips]
            time.sleep(0.2)
    logs = "".join(runner.text() for runner in runners)
    assert "TTL/HL" not in logs, logs[-2000:]


@pytest.mark.parametrize("order", [*DUAL, "ipv6-only"])
def test_haproxy_accepts_the_config(tmp_path: Path, order: str):
    need("haproxy")
    config = families_config(*DUAL[order]) if order in DUAL else families_config(IPV6)
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_bytes(files_of(config, plan_addresses(config).masters[0])[HAPROXY_CFG])
    result = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_the_scripts_pass_shellcheck(tmp_path: Path):
    shellcheck_master_scripts(families_config(IPV4, IPV6), tmp_path)


# haproxy's frontend as rendered (`bind :::PORT v4v6`): one socket for both families, says "lb".
LB_STUB_BOTH = """
import socket, sys
server = socket.create_server(("::", int(sys.argv[1])), family=socket.AF_INET6, dualstack_ipv6=True)
while True:
    connection, _ = server.accept()
    connection.sendall(b"lb"); connection.close()
"""


def test_api_vip_redirect_sends_both_families_vips_to_haproxy(tmp_path: Path):
    """The dual-stack master's script and settings in a namespace: one inet table redirects each
    API VIP, IPv4 and IPv6, to the local haproxy port while haproxy is healthy, and goes."""
    need("nft", "curl", "sh", root=True)
    config = families_config(IPV4, IPV6)
    plan = plan_addresses(config)
    master = plan.masters[0]
    files = files_of(config, master)
    script, env = tmp_path / "api-vip-redirect", tmp_path / "api-vip-redirect.env"
    script.write_bytes(files[REDIRECT_SCRIPT])
    env.write_bytes(files[REDIRECT_CONFIG])
    settings = config.networking
    with netns.lab("nat6") as lab:
        node = lab.namespace("master-0")
        _attach(lab, node, "ens3", plan, master)

        def redirect(action: str) -> subprocess.CompletedProcess[str]:
            result = lab.run(node, ["sh", str(script), str(env), action])
            assert result.returncode == 0, result.stderr
            return result

        def connect(address: object, port: int) -> str:
            return lab.run(node, [sys.executable, "-c", CONNECT, str(address), str(port)]).stdout.strip()

        lab.start(node, [sys.executable, "-c", LB_STUB_BOTH, str(settings.haproxy_port)])
        _wait_for(lambda: connect("::1", settings.haproxy_port) == "lb", "the stand-in load balancer")
        redirect("once")  # haproxy unhealthy: nothing
        assert all(connect(vip, 6443) != "lb" for vip in plan.api_vips)
        lab.start(node, [sys.executable, "-c", HEALTH_STUB, str(settings.haproxy_health_port)])
        health_url = f"http://127.0.0.1:{settings.haproxy_health_port}/"
        _wait_for(lambda: lab.run(node, ["curl", "-fs", health_url]).returncode == 0, "the stand-in health endpoint")
        assert "redirecting port 6443 of 10.0.0.5 fd00:10::5 to haproxy" in redirect("once").stdout
        rules = lab.run(node, ["nft", "list", "ruleset"]).stdout
        assert f"table inet {REDIRECT_TABLE}" in rules
        assert rules.count(f"ip daddr {plan.api_vips[0]} tcp dport 6443 redirect to :{settings.haproxy_port}") == 2
        assert rules.count(f"ip6 daddr {plan.api_vips[1]} tcp dport 6443 redirect to :{settings.haproxy_port}") == 2
        assert [connect(vip, 6443) for vip in plan.api_vips] == ["lb", "lb"]
        assert redirect("once").stdout == ""
        redirect("remove")
        assert lab.run(node, ["nft", "list", "ruleset"]).stdout.strip() == ""
        assert all(connect(vip, 6443) != "lb" for vip in plan.api_vips)


def test_ignition_validate_accepts_every_kind_of_dual_stack_node(tmp_path: Path):
    ignition_validate_every_node_kind(families_config(IPV4, IPV6), tmp_path)
