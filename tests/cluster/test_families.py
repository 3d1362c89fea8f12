"""Two address families (dual-stack) and IPv6 through the public surface: the stack's keys and their
messages, the install-config, the security groups and the resources of the program under mocks.
Single-family IPv4 stacks are held unchanged by the rest of the suite (tests/test_states.py)."""

from __future__ import annotations

import re

import json
import subprocess
from ipaddress import ip_network
from urllib.parse import urlsplit

import pytest
import yaml

from cluster.addresses import node_addresses, plan_addresses
from cluster.config import ConfigError, load_config
from cluster.firewall import exposure_table, security_groups
from cluster.identity import ClusterIdentity
from cluster.install_config import render_install_config
from ignition.nodes import bootstrap_helper_url
from tests.components.test_preflight import attempt
from tests.conftest import PULL_SECRET, deploy, preview, run_recording, stack_config
from tools.mock_cloud import described
from tools.mock_run import ProgramRun, unwrap

V4 = {"machine": "10.0.0.0/16", "cluster": {"cidr": "10.128.0.0/14", "hostPrefix": 23}, "service": "172.30.0.0/16"}
V6 = {"machine": "fd00:10::/64", "cluster": {"cidr": "fd01::/48", "hostPrefix": 64}, "service": "fd02::/112"}


def families(*chosen: dict, stack: str = "dev", given: bool = True, **keys) -> dict[str, str]:
    """The stack with these families, the first the primary, on a network of one subnet per family."""
    config = stack_config(stack)
    config["ocp:machineNetwork"] = json.dumps([family["machine"] for family in chosen])
    config["ocp:clusterNetwork"] = json.dumps([family["cluster"] for family in chosen])
    config["ocp:serviceNetwork"] = json.dumps([family["service"] for family in chosen])
    openstack = json.loads(config.get("ocp:openstack", "{}"))
    if given and stack != "kvm":
        subnets = [f"subnet-v{4 if family is V4 else 6}" for family in chosen]
        openstack["existingNetwork"] = {"networkId": "dualstack", "subnetId": subnets, "router": V4 is chosen[0]}
    if V4 not in chosen:
        for key in ("externalNetwork", "apiFloatingIp", "ingressFloatingIp", "sshAllowedCidr"):
            openstack.pop(key, None)
        bootstrap = json.loads(config["ocp:bootstrap"])
        config["ocp:bootstrap"] = json.dumps({**bootstrap, "helper": {"floatingIp": False}})
    if stack != "kvm":
        config["ocp:openstack"] = json.dumps(openstack)
    for key, value in keys.items():
        config[f"ocp:{key}"] = value if isinstance(value, str) else json.dumps(value)
    return config


def problems(config: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    return raised.value.problems


@pytest.mark.parametrize("order", [(V4, V6), (V6, V4), (V6,)], ids=["ipv4-first", "ipv6-first", "ipv6-only"])
def test_a_stack_of_each_shape_is_taken_and_plans_every_family(order):
    config = load_config(families(*order))
    assert config.families == tuple(6 if family is V6 else 4 for family in order)
    plan = plan_addresses(config)
    assert [str(network) for network in plan.networks] == [family["machine"] for family in order]


def test_a_list_of_one_is_the_single_value_as_before():
    one = load_config({**stack_config("dev"), "ocp:machineNetwork": '["10.0.0.0/16"]', "ocp:serviceNetwork": '["172.30.0.0/16"]'})
    assert one == load_config(stack_config("dev"))


@pytest.mark.parametrize(
    "keys, expected",
    [
        ({"serviceNetwork": "172.30.0.0/16"}, "ocp:serviceNetwork: 172.30.0.0/16 is IPv4 and ocp:machineNetwork (10.0.0.0/16, "
         "fd00:10::/64) is dual-stack: the installer needs the same families in every network list (\"dual-stack IPv4/IPv6 "
         "requires an IPv6 network in this list\"): write serviceNetwork: [172.30.0.0/16, fd02::/112]"),
        ({"clusterNetwork": {"cidr": "10.128.0.0/14", "hostPrefix": 23}}, "ocp:clusterNetwork: 10.128.0.0/14 is IPv4 and "
         "ocp:machineNetwork (10.0.0.0/16, fd00:10::/64) is dual-stack"),
        ({"serviceNetwork": ["fd02::/112", "172.30.0.0/16"]}, "ocp:serviceNetwork: lists IPv6 and IPv4 and ocp:machineNetwork "
         "IPv4 and IPv6: list every network's families in the same order (the first is the primary family of nodes, pods and "
         "services): write serviceNetwork: [172.30.0.0/16, fd02::/112]"),
        ({"serviceNetwork": ["172.30.0.0/16", "fd02::/64"]}, "ocp:serviceNetwork: fd02::/64 is wider than a /108, which "
         "Kubernetes refuses for IPv6 services"),
        ({"apiVip": "10.0.0.5"}, "ocp:apiVip: 10.0.0.5 is IPv4 and ocp:machineNetwork (10.0.0.0/16, fd00:10::/64) is IPv4 and "
         "IPv6: write one address per family of machineNetwork, in its order, e.g. apiVip: [10.0.0.5, fd00:10::5]"),
        ({"ingressVip": ["fd00:10::9", "10.0.0.9"]}, "ocp:ingressVip: fd00:10::9, 10.0.0.9 is IPv6 and IPv4"),
        ({"apiVip": ["10.0.0.5", "fd00:10::14"]}, "ocp:apiVip: fd00:10::14 is ocp4-master-0's reserved address"),
        ({"clusterNetwork": [V4["cluster"], {"cidr": "fd01::/48", "hostPrefix": 56}]}, "ocp:clusterNetwork[1]: hostPrefix 56 "
         "with IPv6 fd01::/48: the installer takes only 64 for IPv6 networks"),
        ({"machineNetwork": ["10.0.0.0/16", "10.1.0.0/16"]}, "ocp:machineNetwork: lists two IPv4 entries (10.0.0.0/16, "
         "10.1.0.0/16): a second entry is the other address family"),
        ({"machineNetwork": ["10.0.0.0/16", "fd00:10::/48"]}, "ocp:machineNetwork[1]: fd00:10::/48 is not a /64"),
    ],
)
def test_each_family_problem_is_one_message_naming_its_key(keys, expected):
    found = problems(families(V4, V6, **keys))
    assert [problem for problem in found if problem.startswith(expected)], found


def test_a_network_the_program_makes_is_refused_with_the_installers_reason():
    found = problems(families(V4, V6, given=False))
    assert found == [
        "ocp:machineNetwork: 10.0.0.0/16, fd00:10::/64 is dual-stack, which needs a network you bring: the installer installs "
        "dual-stack and IPv6 on OpenStack only on a network made beforehand (one IPv4 and one IPv6 subnet, the IPv6 one on a "
        "router for its advertisements), and this program makes IPv4 subnets only. Make it and name it in "
        "ocp:openstack.existingNetwork (networkId, and subnetId with one subnet per family, in machineNetwork's order)"
    ]


def test_one_subnet_for_two_families_is_refused():
    config = families(V4, V6)
    openstack = json.loads(config["ocp:openstack"])
    openstack["existingNetwork"]["subnetId"] = "subnet-v4"
    found = problems({**config, "ocp:openstack": json.dumps(openstack)})
    assert found == [
        "ocp:openstack.existingNetwork.subnetId: names 1 subnet(s) and ocp:machineNetwork (10.0.0.0/16, fd00:10::/64) 2 "
        "families: name one subnet per family, in machineNetwork's order, e.g. subnetId: [subnet-v4, subnet-v6]"
    ]


def test_ipv6_alone_takes_no_external_network_nor_floating_ips():
    config = families(V6)
    openstack = {**json.loads(config["ocp:openstack"]), "externalNetwork": "external", "apiFloatingIp": "create"}
    found = problems({**config, "ocp:openstack": json.dumps(openstack)})
    assert found[0].startswith(
        "ocp:openstack.externalNetwork: an IPv6-only cluster takes no external network (the installer: \"Cannot set external "
        "network on Single Stack IPv6 cluster\")"
    ), found
    assert found[1].startswith("ocp:openstack.apiFloatingIp: floating IPs are IPv4, and an IPv6-only cluster has no IPv4 address"), found


def test_standalone_takes_dual_stack_with_ipv4_first_only():
    assert load_config(families(V4, V6, stack="standalone")).families == (4, 6)
    found = problems(families(V6, V4, stack="standalone"))
    assert found == [
        "ocp:machineNetwork: fd00:10::/64, 10.0.0.0/16 lists IPv6 first, and standalone mode installs with platform: none, "
        "where the installer takes dual-stack only with IPv4 as the primary family (\"IPv4 addresses must be listed before "
        "IPv6 addresses\"; it allows IPv6 first on platform: openstack): list IPv4 first in machineNetwork, clusterNetwork, "
        "serviceNetwork and the VIPs, or use mode: integrated"
    ]


def test_standalone_dual_stack_reserves_at_most_400_worker_slots():
    """Two families double every node's CoreDNS hosts lines: 500 slots would make a master's
    user_data too big for Nova, so the key says so before anything is planned."""
    workers = {**json.loads(stack_config("standalone")["ocp:workers"]), "maxCount": 500}
    found = problems(families(V4, V6, stack="standalone", workers=workers))
    assert found == [
        "ocp:workers.maxCount: 500 reserved worker slots with two address families: every node's CoreDNS lists each "
        "slot in both families, and past 400 a master's user_data outgrows what Nova takes: write maxCount: 400 or less"
    ]
    assert load_config(families(V4, V6, stack="standalone", workers={**workers, "maxCount": 400})).workers.max_count == 400
    # Integrated nodes carry a pointer only: the MCO serves their networking.
    assert load_config(families(V4, V6, workers={**json.loads(stack_config("dev")["ocp:workers"]), "maxCount": 500})).workers.max_count == 500


def test_libvirt_refuses_ipv6_naming_the_machine_network():
    found = problems(families(V4, V6, stack="kvm"))
    assert found == [
        "ocp:machineNetwork: 10.0.0.0/16, fd00:10::/64 has an IPv6 network, and libvirt stacks are IPv4 only: the program's "
        "libvirt network gives each node its planned address by a DHCP reservation for its MAC, which libvirt's DHCPv6 cannot "
        "make (it matches a client's DUID, which is not known before the node boots). Write one IPv4 network, e.g. "
        "machineNetwork: 10.0.0.0/16, or install on OpenStack with a network you bring"
    ]


def test_sources_of_a_family_no_node_has_are_refused():
    config = stack_config("dev")
    openstack = {**json.loads(config["ocp:openstack"]), "apiAllowedCidrs": ["203.0.113.0/24", "2001:db8::/32"]}
    assert problems({**config, "ocp:openstack": json.dumps(openstack)}) == [
        "ocp:openstack.apiAllowedCidrs: 2001:db8::/32 is IPv6, and no node has an address of that family (ocp:machineNetwork "
        "10.0.0.0/16): remove it"
    ]


def test_the_install_config_lists_every_family_and_both_subnets():
    config = load_config(families(V4, V6))
    document = yaml.safe_load(render_install_config(config, plan_addresses(config), PULL_SECRET))
    assert document["networking"]["machineNetwork"] == [{"cidr": "10.0.0.0/16"}, {"cidr": "fd00:10::/64"}]
    assert document["networking"]["clusterNetwork"] == [V4["cluster"], V6["cluster"]]
    assert document["networking"]["serviceNetwork"] == ["172.30.0.0/16", "fd02::/112"]
    openstack = document["platform"]["openstack"]
    assert openstack["apiVIPs"] == ["10.0.0.5", "fd00:10::5"] and openstack["ingressVIPs"] == ["10.0.0.7", "fd00:10::7"]
    assert openstack["controlPlanePort"] == {
        "network": {"name": "dualstack"}, "fixedIPs": [{"subnet": {"name": "subnet-v4"}}, {"subnet": {"name": "subnet-v6"}}]
    }


def test_every_rule_of_the_machine_network_has_its_ipv6_twin_and_the_world_is_both_families():
    config = load_config(families(V4, V6))
    groups = security_groups(config, plan_addresses(config))
    for group, rules in groups.items():
        for rule in (rule for rule in rules if str(rule.source) == "10.0.0.0/16"):
            same = (rule.protocol, rule.port_min, rule.port_max, rule.description)
            twin = [r for r in rules if (r.protocol, r.port_min, r.port_max, r.description) == same and str(r.source) == "fd00:10::/64"]
            assert len(twin) == 1 and twin[0].ethertype == "IPv6", (group, rule)
    exposed = {(row.group, row.rule, row.source) for row in exposure_table(config, plan_addresses(config))}
    assert {("master", "ipv6-icmp", "::/0"), ("master", "tcp 6443", "::/0"), ("ingress", "tcp 80", "::/0"), ("ingress", "tcp 443", "::/0")} <= exposed
    # Nothing else reaches beyond the machine networks over IPv6.
    assert {row for row in exposed if ":" in row[2]} == {
        ("master", "ipv6-icmp", "::/0"), ("worker", "ipv6-icmp", "::/0"), ("master", "tcp 6443", "::/0"),
        ("ingress", "tcp 80", "::/0"), ("ingress", "tcp 443", "::/0"),
    }, exposed
    # Resource names carry no colon (URNs use them).
    assert all(":" not in rule.key for rules in groups.values() for rule in rules)


def test_the_program_under_mocks_gives_every_port_both_families():
    program, error = run_recording(families(V4, V6))
    assert error is None, error
    ports = {resource.name: resource.inputs for resource in program.resources if resource.type == "openstack:networking/port:Port"}
    fixed = {name: [ip["ipAddress"] for ip in inputs["fixedIps"]] for name, inputs in ports.items() if inputs.get("fixedIps")}
    assert fixed["ocp4-vips-api-port"] == ["10.0.0.5", "fd00:10::5"] and fixed["ocp4-vips-ingress-port"] == ["10.0.0.7", "fd00:10::7"]
    master = next(inputs for name, inputs in ports.items() if name.endswith("master-0-port"))
    assert [ip["ipAddress"] for ip in master["fixedIps"]] == ["10.0.0.20", "fd00:10::14"]
    assert [pair["ipAddress"] for pair in master["allowedAddressPairs"]] == ["10.0.0.5", "fd00:10::5", "10.0.0.7", "fd00:10::7"]
    rules = [resource.inputs for resource in program.resources if resource.type == "openstack:networking/secGroupRule:SecGroupRule"]
    assert all(rule["ethertype"] == f"IPv{ip_network(rule['remoteIpPrefix']).version}" for rule in rules)
    assert program.outputs["apiVips"] == ["10.0.0.5", "fd00:10::5"] and program.outputs["ingressVips"] == ["10.0.0.7", "fd00:10::7"]
    # Every address of each node, as its ports hold them: what a dual-stack kubelet's serving request names (cluster/csr.py).
    def slot(name: str) -> str:
        return re.search(r"(bootstrap|(master|worker)-\d+)(-node)?(-port)?$", name)[1]

    assert {slot(name): addresses for name, addresses in program.outputs["nodes"].items()} == {slot(name): ips for name, ips in fixed.items() if "-vips-" not in name}
    assert program.outputs["nodes"][f"{program.outputs['infraId']}-master-0"] == ["10.0.0.20", "fd00:10::14"]
    interfaces = [resource.name for resource in program.resources if resource.type == "openstack:networking/routerInterface:RouterInterface"]
    assert len(interfaces) == 2, interfaces


def test_a_running_clusters_families_never_change():
    """An IPv4 cluster on a given network, then the same stack made dual-stack: refused before anything changes,
    naming the keys that would re-address it (upstream converts no running cluster on OpenStack)."""
    single = families(V4)
    openstack = json.loads(single["ocp:openstack"])
    openstack["existingNetwork"]["subnetId"] = "subnet-v4"
    single["ocp:openstack"] = json.dumps(openstack)
    result = preview(deploy(single), families(V4, V6))
    assert result.error is not None and "ocp:machineNetwork" in result.error and "address families never change" in result.error, result.error
    assert not result.changes, result.changes


@pytest.mark.parametrize("order", [(V4, V6), (V6,), (V6, V4)], ids=["ipv4-first", "ipv6-only", "ipv6-first"])
def test_the_real_installer_takes_what_standalone_takes_and_refuses_what_it_refuses(order, tmp_path):
    """platform: none needs no cloud: the toolchain's openshift-install validates the install-config this program
    writes. IPv6 first is refused there, as the config rule says, with the same reason."""
    from tools import real_installer

    binary = real_installer.binary()
    if binary is None:
        pytest.skip("openshift-install is not built: run `bash .ci/toolchain`")
    config = load_config(families(*(order if order != (V6, V4) else (V4, V6)), stack="standalone"))
    document = yaml.safe_load(render_install_config(config, plan_addresses(config), PULL_SECRET))
    if order == (V6, V4):  # what the rule refuses, written by hand
        for key in ("machineNetwork", "clusterNetwork", "serviceNetwork"):
            document["networking"][key].reverse()
    (tmp_path / "install-config.yaml").write_text(yaml.safe_dump(document))
    made = subprocess.run([binary, "create", "manifests", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    if order == (V6, V4):
        assert made.returncode != 0 and "IPv4 addresses must be listed before IPv6 addresses" in made.stderr, made.stderr[-2000:]
    else:
        assert made.returncode == 0, made.stderr[-2000:]
        network = yaml.safe_load((tmp_path / "manifests" / "cluster-network-02-config.yml").read_text())["spec"]
        assert network["serviceNetwork"] == [family["service"] for family in order], network


def test_the_guard_rails_pass_a_dual_stack_stack_and_measure_an_ipv6_world():
    from tools import guard_rails

    config = families(V4, V6)
    program, error = run_recording(config)
    assert error is None, error
    assert guard_rails.violations(program, load_config(config)) == []
    openstack = {**json.loads(config["ocp:openstack"]), "nodePortAllowedCidrs": ["2000::/3"]}
    found = problems({**config, "ocp:openstack": json.dumps(openstack)})
    assert found == [
        "ocp:openstack.nodePortAllowedCidrs: [2000::/3] admits 3,702,258,688 public IPv4 addresses (IPv4 clients through 2000::/3: "
        "Teredo, 6to4), more than a /8 (16,777,216) and 536,801,278 /32s of public IPv6 space, more than one /32 to TCP "
        "30000-32767 and UDP 30000-32767: only TCP 6443, 80, 443 and ICMP may be open that wide (the policy pack refuses it "
        "too). Name your clients' networks, e.g. nodePortAllowedCidrs: [203.0.113.0/24], or leave nodePortAllowedCidrs out "
        "(the machine network only)"
    ]


def test_the_plans_picture_of_an_ipv6_only_stack_draws_its_vips():
    """dot reads `a:b` in an edge as node a's port b: the VIP boxes named by IPv6 address broke the picture."""
    from tools import topology

    program, error = run_recording(families(V6))
    assert error is None, error
    svg = topology.render(program.state(), program.outputs, "stack ipv6").decode()
    assert "fd00:10::5" in svg and "fd00:10::7" in svg


def test_ipv6_only_nodes_fetch_their_config_from_a_url_that_parses():
    """An IPv6 address in a URL needs brackets: without them the port reads as part of the address."""
    config = families(V6, stack="standalone")
    program, error = run_recording(config, stack="standalone")
    assert error is None, error
    servers = {resource.name: resource.inputs["userData"] for resource in program.resources if resource.type == "openstack:compute/instance:Instance"}
    pointers = {name: json.loads(unwrap(data)) for name, data in servers.items() if "bootstrap" not in name}
    assert len(pointers) == 5, sorted(servers)
    for name, pointer in pointers.items():
        source = urlsplit(pointer["ignition"]["config"]["merge"][0]["source"])
        assert (source.hostname, source.port) == ("fd00:10::5", 22624), (name, source)
    plan = plan_addresses(load_config(config))
    helper = urlsplit(bootstrap_helper_url(plan, 8080, ClusterIdentity("ocp4-x7k2p", b"cluster secret")))
    assert (helper.hostname, helper.port) == (str(plan.helper_ip), 8080)


@pytest.mark.parametrize(
    ("cidr", "refused"),
    [("2000::/8", "2000::/8 admits SSH to the bootstrap (and its helper) from "), ("2001::/32", "(IPv4 clients through 2001::/32: Teredo)"),
     ("2a01:4f8::/32", None), ("2a01:4f8:c0c::/48", None)],
)
def test_ssh_allowed_cidr_is_measured_in_ipv6_as_the_other_keys_are(cidr, refused):
    """Issue 49, item 6: a /8 of IPv6 passed by its prefix length (only the pack refused it); measured,
    it is 16 million /32s. One /32 of global unicast passes, as for the other keys; Teredo is the world."""
    config = families(V4, V6)
    openstack = {**json.loads(config["ocp:openstack"]), "sshAllowedCidr": cidr}
    config["ocp:openstack"] = json.dumps(openstack)
    if refused is None:
        assert load_config(config).openstack.ssh_allowed_cidr == ip_network(cidr)
    else:
        [problem] = [p for p in problems(config) if "sshAllowedCidr" in p]
        assert problem.startswith(f"ocp:openstack.sshAllowedCidr: {cidr} admits SSH") and refused in problem


# Issue 50, item 8: an IPv6 subnet where Neutron derives each port's address from its MAC (slaac, dhcpv6-stateless).
DUAL_NET, SUBNET_V4, SUBNET_V6 = (f"{n}2222222-3333-4444-8555-666666666666" for n in "abc")


def given_cloud(mode: str) -> dict:
    """The sample cloud with network "dualstack": an IPv4 subnet and an IPv6 one of this address mode."""
    return described(
        neutronNetworks=[{"id": DUAL_NET, "name": "dualstack", "mtu": 1450, "subnets": [SUBNET_V4, SUBNET_V6]}],
        subnets=[
            {"id": SUBNET_V4, "name": "subnet-v4", "network": DUAL_NET, "cidr": "10.0.0.0/16", "pools": [["10.0.3.0", "10.0.3.255"]]},
            {"id": SUBNET_V6, "name": "subnet-v6", "network": DUAL_NET, "cidr": "fd00:10::/64", "ipv6AddressMode": mode},
        ],
    )


def ports_of(program: ProgramRun) -> dict[str, dict]:
    return {resource.name: resource.inputs for resource in program.resources if resource.type == "openstack:networking/port:Port"}


@pytest.mark.parametrize("mode", ["slaac", "dhcpv6-stateless"])
def test_on_a_derived_ipv6_subnet_no_port_asks_an_ipv6_address_and_the_outputs_read_the_ports(mode):
    """Neutron refuses a port an address asked for there and gives each its MAC's: every port (nodes, VIPs) names
    the IPv6 subnet alone; the VIPs stay the planned ones, carried as address pairs by the nodes that may hold them
    (Neutron takes any address as a pair, and derives no address like fd00:10::5); the node addresses the outputs
    give the CSR approver read each node's IPv6 address from its port. The IPv4 side is as planned."""
    program, error = attempt(families(V4, V6), given_cloud(mode))
    assert error is None, error
    ports = ports_of(program)
    master = next(inputs for name, inputs in ports.items() if name.endswith("master-0-port"))
    assert master["fixedIps"] == [{"subnetId": SUBNET_V4, "ipAddress": "10.0.0.20"}, {"subnetId": SUBNET_V6}], master["fixedIps"]
    bootstrap = next(inputs for name, inputs in ports.items() if name.endswith("bootstrap-node-port"))
    assert bootstrap["fixedIps"] == [{"subnetId": SUBNET_V4, "ipAddress": "10.0.0.10"}, {"subnetId": SUBNET_V6}]
    assert ports["ocp4-vips-api-port"]["fixedIps"] == [{"subnetId": SUBNET_V4, "ipAddress": "10.0.0.5"}, {"subnetId": SUBNET_V6}]
    assert ports["ocp4-vips-ingress-port"]["fixedIps"] == [{"subnetId": SUBNET_V4, "ipAddress": "10.0.0.7"}, {"subnetId": SUBNET_V6}]
    assert [pair["ipAddress"] for pair in master["allowedAddressPairs"]] == ["10.0.0.5", "fd00:10::5", "10.0.0.7", "fd00:10::7"]
    # Under mocks no port exists: the IPv6 addresses are unknown (None) until Neutron assigns them.
    nodes = program.outputs["nodes"]
    assert nodes and all(found[1] is None and found[0].startswith("10.0.0.") for found in nodes.values()), nodes
    assert nodes[f"{program.outputs['infraId']}-master-0"] == ["10.0.0.20", None]
    assert program.outputs["apiVips"] == ["10.0.0.5", "fd00:10::5"]
    # dhcpv6-stateful: the planned addresses, asked for and given, as before.
    program, error = attempt(families(V4, V6), given_cloud("dhcpv6-stateful"))
    assert error is None, error
    master = next(inputs for name, inputs in ports_of(program).items() if name.endswith("master-0-port"))
    assert master["fixedIps"] == [{"subnetId": SUBNET_V4, "ipAddress": "10.0.0.20"}, {"subnetId": SUBNET_V6, "ipAddress": "fd00:10::14"}]
    assert program.outputs["nodes"][f"{program.outputs['infraId']}-master-0"] == ["10.0.0.20", "fd00:10::14"]


def test_node_addresses_take_each_derived_familys_address_from_the_port():
    """What Neutron shows of a port (its fixed IPs, in any order): the address inside each derived family's network."""
    plan = plan_addresses(load_config(families(V4, V6)))
    master = plan.masters[0]
    shown = ["fd00:10::f816:3eff:fe12:3456", "10.0.0.20"]
    assert node_addresses(plan, master, {1}, shown) == ["10.0.0.20", "fd00:10::f816:3eff:fe12:3456"]
    assert node_addresses(plan, master, {1}, None) == ["10.0.0.20", None]
    assert node_addresses(plan, master, (), shown) == ["10.0.0.20", "fd00:10::14"]


@pytest.mark.parametrize("mode", ["slaac", "dhcpv6-stateless"])
def test_standalone_on_a_derived_ipv6_subnet_is_refused_before_anything_is_made(mode):
    program, error = attempt(families(V4, V6, stack="standalone"), given_cloud(mode), stack="standalone")
    assert error is not None and error.startswith("the cloud cannot hold this stack"), error
    assert f'ocp:openstack.existingNetwork.subnetId[1]: IPv6 subnet "subnet-v6" has address mode {mode}, where Neutron' in error
    assert "install in integrated mode (ocp:openstack.mode: integrated)" in error
    assert not [resource for resource in program.resources if resource.type.startswith("openstack:") and resource.custom and "providers" not in resource.type]


# Issue 50, finding 9: an IPv6-only cluster pulls its release through a mirror.
def test_an_ipv6_only_stack_without_mirrors_is_warned():
    run, error = attempt(families(V6, stack="standalone"), stack="standalone")
    assert error is None, error
    assert [w.split(": ")[0] for w in run.warnings if "no mirror is named" in w] == ["ocp:imageDigestSources"], run.warnings
    mirrored = families(V6, stack="standalone", imageDigestSources=[{"source": "quay.io/openshift-release-dev", "mirrors": ["mirror6.lab:5000/ocp"]}])
    run, error = attempt(mirrored, stack="standalone")
    assert error is None and not [w for w in run.warnings if "no mirror is named" in w]
