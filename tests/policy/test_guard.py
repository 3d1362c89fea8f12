"""The pack's rules (policy/guard.py) on crafted resources and on the program's own security
groups, run as the pack runs them (ResourceValidationArgs, StackValidationArgs): what one rule
cannot show, several rules of a group added up; a protocol written `any`, `0` or not at all is
every protocol; SSH from another group's members. The pack on real previews:
tests/localcloud/test_policy.py."""

from __future__ import annotations

import sys

import pytest
import yaml

from cluster.config_schema import ClusterConfig
from tests.conftest import ROOT, deploy, stack_config

sys.path.insert(0, str(ROOT / "policy"))
import guard  # noqa: E402  (the pack's rules, as the pack imports them)
from pulumi_policy import PolicyResource, ResourceValidationArgs, StackValidationArgs  # noqa: E402

GROUPS = "ocp:openstack:SecurityGroups"
URN = "urn:pulumi:dev::ocp::{}::{}"


def _resource(kind: str, name: str, props: dict, parent: PolicyResource | None = None, depends: dict | None = None) -> PolicyResource:
    qualified = f"{parent.resource_type}${kind}" if parent else kind
    return PolicyResource(kind, props, URN.format(qualified, name), name, None, None, parent, [], depends or {})  # type: ignore[arg-type]


COMPONENT = _resource(GROUPS, "ocp4-security", {})
MASTER = _resource(guard.GROUP, "ocp4-security-master", {"name": "ocp4-x-master"}, COMPONENT)
WORKER = _resource(guard.GROUP, "ocp4-security-worker", {"name": "ocp4-x-worker"}, COMPONENT)
FOREIGN = _resource(guard.GROUP, "shared-jump-hosts", {"name": "jump"})


def rule(name: str, group: PolicyResource = MASTER, remote: PolicyResource | None = None, **props) -> PolicyResource:
    depends = {"securityGroupId": [group], **({"remoteGroupId": [remote]} if remote else {})}
    return _resource(guard.RULE, name, {"direction": "ingress", "ethertype": "IPv4", **props}, COMPONENT, depends)


def stack_violations(validate, resources: list[PolicyResource]) -> list[str]:
    found: list[str] = []
    validate(StackValidationArgs(resources), lambda message, urn=None: found.append(message))
    return found


def violations(validate, props: dict) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(guard.RULE, {"direction": "ingress", "ethertype": "IPv4", **props}, URN.format(guard.RULE, "r"), "r", None, None, None)  # type: ignore[arg-type]
    validate(args, lambda message, urn=None: found.append(message))
    return found


NODE_PORTS = {"portRangeMin": 30000, "portRangeMax": 32767}
# A /8 and a /9 of public space: each alone passes (a /8 is the widest), together they are the world.
SLASH_8, SLASH_9 = "11.0.0.0/8", "12.0.0.0/9"


def test_node_ports_from_a_slash_8_and_a_slash_9_are_the_world():
    parts = [
        rule("np-low", protocol="tcp", remoteIpPrefix=SLASH_8, **NODE_PORTS),
        rule("np-high", protocol="tcp", remoteIpPrefix=SLASH_9, **NODE_PORTS),
    ]
    # Each alone passes the one-rule check.
    assert [violations(guard.validate_world_open, r.props) for r in parts] == [[], []]
    assert stack_violations(guard.validate_world_open_together, [MASTER, *parts]) == [
        "np-high, np-low (security group ocp4-security-master) together open tcp 30000-32767 to the world "
        "(from 11.0.0.0/8, 12.0.0.0/9: 25,165,824 public IPv4 addresses, more than a /8 (16,777,216)): only TCP 6443, 80, "
        "443 and ICMP may be. Name the clients instead in ocp:openstack.apiAllowedCidrs, ingressAllowedCidrs, "
        "nodePortAllowedCidrs or sshAllowedCidr."
    ]


EVERY_UNICAST = ("0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3")


def test_every_unicast_address_in_three_rules_is_the_world():
    """The finding of issue 42: three rules that leave out only multicast and reserved space passed."""
    rules = [rule(f"np-{i}", protocol="tcp", remoteIpPrefix=cidr, **NODE_PORTS) for i, cidr in enumerate(EVERY_UNICAST)]
    # Each is refused alone, /1, /2 and /3 alike; the stack rule leaves them to that one.
    for each, cidr in zip(rules, EVERY_UNICAST):
        [refused] = violations(guard.validate_world_open, each.props)
        assert refused.startswith(f"r opens tcp 30000-32767 to the world (from {cidr}: "), refused
    assert stack_violations(guard.validate_world_open_together, [MASTER, *rules]) == []


@pytest.mark.parametrize(
    ("prefix", "ethertype", "reported"),
    [
        ("0.0.0.0/1", "IPv4", True),
        ("0.0.0.0/0", "IPv4", True),
        ("10.0.0.0/8", "IPv4", False),
        ("172.16.0.0/12", "IPv4", False),
        ("192.168.0.0/16", "IPv4", False),
        ("100.64.0.0/10", "IPv4", False),
        ("11.0.0.0/9", "IPv4", False),
        ("::/0", "IPv6", True),
        ("2000::/3", "IPv6", True),
        ("2001:db8:1::/48", "IPv6", False),
        ("2a01:4f8:c0c::/48", "IPv6", False),
        ("fc00::/7", "IPv6", False),
        (None, "IPv6", True),  # no prefix, no group: anyone
        # Issue 49, item 6: IPv4's world behind a NAT64 translator, Teredo, 6to4 (each passed before).
        ("64:ff9b::/96", "IPv6", True),
        ("64:ff9b:1::/48", "IPv6", True),
        ("2001::/32", "IPv6", True),
        ("2002:b00::/24", "IPv6", True),
        ("64:ff9b::b00:0/104", "IPv6", False),  # 11.0.0.0/8 through the translator: a /8
    ],
)
def test_one_rule_is_the_world_by_measure(prefix, ethertype, reported):
    props = {"protocol": "udp", "ethertype": ethertype, **NODE_PORTS, **({"remoteIpPrefix": prefix} if prefix else {})}
    found = violations(guard.validate_world_open, props)
    assert bool(found) is reported, found
    # TCP 443 may be open that wide.
    assert violations(guard.validate_world_open, {**props, "protocol": "tcp", "portRangeMin": 443, "portRangeMax": 443}) == []


@pytest.mark.parametrize(
    ("rules", "reported"),
    [
        # A /8 and a /9 in two groups: neither group is open to the world.
        ([("a", MASTER, "tcp", 30000, 32767, SLASH_8), ("b", WORKER, "tcp", 30000, 32767, SLASH_9)], False),
        # Overlapping ranges: 50-100 is open to the world.
        ([("a", MASTER, "tcp", 1, 100, SLASH_8), ("b", MASTER, "udp", 50, 200, SLASH_9)], False),
        ([("a", MASTER, "tcp", 1, 100, SLASH_8), ("b", MASTER, "tcp", 50, 200, SLASH_9)], True),
        # A rule of every protocol (`any`) adds to a TCP rule.
        ([("a", MASTER, "tcp", 8000, 8000, SLASH_8), ("b", MASTER, "any", None, None, SLASH_9)], True),
        # Three /9s, 443 and 444: 444 is no world port.
        ([(f"q{i}", MASTER, "tcp", 443, 444, f"{11 + i}.0.0.0/9") for i in range(3)], True),
        # The API from a /8 and a /9 is allowed, as from 0.0.0.0/0.
        ([("a", MASTER, "tcp", 6443, 6443, SLASH_8), ("b", MASTER, "tcp", 6443, 6443, SLASH_9)], False),
        ([("a", MASTER, "icmp", None, None, SLASH_8), ("b", MASTER, "icmp", None, None, SLASH_9)], False),
        # Private space beside a /8 of public space: not the world; two /9s make a /8, not more.
        ([("a", MASTER, "tcp", 22, 22, "10.0.0.0/8"), ("b", MASTER, "tcp", 22, 22, SLASH_8)], False),
        ([("a", MASTER, "tcp", 22, 22, "12.0.0.0/9"), ("b", MASTER, "tcp", 22, 22, "12.128.0.0/9")], False),
        # IPv6: two /33s are a /32, a /32 and a /48 more.
        ([("a", MASTER, "tcp", 22, 22, "2a01::/33"), ("b", MASTER, "tcp", 22, 22, "2a01:0:8000::/33")], False),
        ([("a", MASTER, "tcp", 22, 22, "2a01::/32"), ("b", MASTER, "tcp", 22, 22, "2a02::/48")], True),
    ],
)
def test_rules_added_up_per_group(rules, reported):
    resources = [
        rule(
            name, group, protocol=protocol, remoteIpPrefix=source, ethertype="IPv6" if ":" in source else "IPv4",
            **({"portRangeMin": low, "portRangeMax": high} if low else {}),
        )
        for name, group, protocol, low, high, source in rules
    ]
    found = stack_violations(guard.validate_world_open_together, [MASTER, WORKER, *resources])
    assert bool(found) is reported, found


@pytest.mark.parametrize("protocol", ["any", "0", "", None, "ANY", "ipip"])
def test_ssh_over_every_protocol_is_ssh(protocol):
    props = {"protocol": protocol, "portRangeMin": 22, "portRangeMax": 22, "remoteIpPrefix": "198.51.100.0/24"}
    [refused] = violations(guard.validate_ssh, props)
    assert refused.startswith("r admits SSH (every protocol) from 198.51.100.0/24: SSH may come only from 10.0.0.0/16")
    assert violations(guard.validate_world_open, {**props, "remoteIpPrefix": "0.0.0.0/0"}) != []


def test_a_known_protocol_other_than_tcp_is_no_ssh():
    assert violations(guard.validate_ssh, {"protocol": "udp", "portRangeMin": 22, "portRangeMax": 22, "remoteIpPrefix": "198.51.100.0/24"}) == []
    assert violations(guard.validate_ssh, {"protocol": "112", "remoteIpPrefix": "198.51.100.0/24"}) == []  # VRRP by number


def test_ssh_from_another_group_is_refused_from_the_clusters_node_groups_allowed():
    ssh = {"protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22, "remoteGroupId": "4f1c"}
    own = [rule("from-workers", MASTER, WORKER, **ssh), rule("from-masters", WORKER, MASTER, **ssh)]
    assert stack_violations(guard.validate_ssh_from_groups, [COMPONENT, MASTER, WORKER, *own]) == []
    foreign = rule("from-jump", MASTER, FOREIGN, **ssh)
    every = rule("all-from-jump", WORKER, FOREIGN, protocol="any", remoteGroupId="4f1c")
    by_id = rule("from-an-id", MASTER, None, **{**ssh, "remoteGroupId": "6d2e-not-in-this-stack"})
    assert stack_violations(guard.validate_ssh_from_groups, [COMPONENT, MASTER, WORKER, FOREIGN, foreign, every, by_id]) == [
        f"{name} admits SSH ({what}) from the members of security group {source}: SSH from a group may come only from the "
        "cluster's own node groups (ocp4-security-master, ocp4-security-worker); name the address in ocp:openstack.sshAllowedCidr instead."
        for name, what, source in (
            ("from-jump", "tcp 22", "shared-jump-hosts"),
            ("all-from-jump", "every protocol", "shared-jump-hosts"),
            ("from-an-id", "tcp 22", "6d2e-not-in-this-stack"),
        )
    ]
    # Other ports from another group are not SSH.
    https = rule("https-from-jump", MASTER, FOREIGN, protocol="tcp", portRangeMin=443, portRangeMax=443, remoteGroupId="4f1c")
    assert stack_violations(guard.validate_ssh_from_groups, [COMPONENT, MASTER, FOREIGN, https]) == []


def _stack_resources(name: str) -> list[PolicyResource]:
    """The stack's offline deployment as the engine hands it to a stack policy: each resource's
    parent from its URN's type chain, the rule's group by the ID it names."""
    resources = deploy(stack_config(name), name)
    by_id = {}
    made = []
    for item in resources:
        qualified = item["urn"].split("::")[2]
        parent = _resource(qualified.rsplit("$", 1)[0], "parent", {}) if "$" in qualified else None
        resource = PolicyResource(item["type"], item.get("outputs") or item.get("inputs") or {}, item["urn"], item["name"], None, None, parent, [], {})  # type: ignore[arg-type]
        by_id[item.get("id")] = resource
        made.append(resource)
    for resource in made:
        if resource.resource_type == guard.RULE:
            group = by_id.get(resource.props.get("securityGroupId"))
            resource.property_dependencies = {"securityGroupId": [group]} if group else {}
    return made


@pytest.mark.parametrize("name", ["dev", "standalone", "kvm"])
def test_the_programs_own_groups_pass_every_rule(name):
    resources = _stack_resources(name)
    if name != "kvm":
        assert sum(r.resource_type == guard.RULE for r in resources) >= 20
    for policy in guard.POLICIES:
        if isinstance(policy, guard.StackValidationPolicy):
            assert stack_violations(policy.validate, resources) == [], policy.name
        else:
            for resource in resources:
                found: list[str] = []
                args = ResourceValidationArgs(resource.resource_type, resource.props, resource.urn, resource.name, None, None, {"sshAllowedCidr": "192.168.122.0/24"})  # type: ignore[arg-type]
                policy.validate(args, lambda message, urn=None: found.append(message))
                assert found == [], (policy.name, resource.name)


@pytest.mark.parametrize("name", ["dev", "standalone"])
def test_the_programs_own_rules_pass_added_up_even_when_the_preview_cannot_say_their_group(name):
    """A new stack's preview: the groups' IDs are unknown, and an engine that sends no property
    dependencies leaves every rule in one bucket; the program's rules still add up to no world."""
    resources = _stack_resources(name)
    for resource in resources:
        if resource.resource_type == guard.RULE:
            resource.property_dependencies = {}
            resource.props = {key: value for key, value in resource.props.items() if key != "securityGroupId"}
    assert stack_violations(guard.validate_world_open_together, resources) == []


# Moved from tests/localcloud/test_policy.py, where the toolchain's absence skipped them.
def _resource_violations(validate, kind: str, name: str, props: dict, config: dict | None = None) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(kind, props, f"urn:pulumi:dev::ocp::{kind}::{name}", name, None, None, config)  # type: ignore[arg-type]
    validate(args, lambda message, urn=None: found.append(message))
    return found


def test_the_pack_knows_the_programs_default_machine_network():
    assert guard.MACHINE_NETWORK == str(ClusterConfig.model_fields["machine_networks"].default[0])


@pytest.mark.parametrize(
    ("props", "reported"),
    [
        ({"protocol": "tcp", "portRangeMin": 6443, "portRangeMax": 6443, "remoteIpPrefix": "0.0.0.0/0"}, False),
        ({"protocol": "icmp", "remoteIpPrefix": "0.0.0.0/0"}, False),
        ({"protocol": "tcp", "portRangeMin": 443, "portRangeMax": 443, "remoteIpPrefix": "::/0"}, False),
        ({"protocol": "tcp", "portRangeMin": 8443, "portRangeMax": 8443, "remoteIpPrefix": "::/0"}, True),
        ({"protocol": "tcp", "portRangeMin": 80, "portRangeMax": 443}, True),  # no prefix, no group: anyone
        ({"protocol": "6", "portRangeMin": 22, "portRangeMax": 22, "remoteIpPrefix": "0.0.0.0/0"}, True),
        ({"remoteIpPrefix": "0.0.0.0/0"}, True),  # every protocol
        ({"protocol": "tcp", "portRangeMin": 8443, "portRangeMax": 8443, "remoteGroupId": "g"}, False),
        ({"protocol": "tcp", "portRangeMin": 8443, "portRangeMax": 8443, "remoteIpPrefix": "10.0.0.0/16"}, False),
    ],
)
def test_world_open_rule_cases(props, reported):
    found = _resource_violations(guard.validate_world_open, guard.RULE, "rule", {"direction": "ingress", "ethertype": "IPv4", **props})
    assert bool(found) is reported, found


def test_ssh_rule_reads_the_stack_file_and_refuses_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rule = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}
    # No stack file and no policy config: SSH from the machine network only.
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteIpPrefix": "10.0.3.0/24"}) == []
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteIpPrefix": "192.168.122.0/24"}) == [
        "r admits SSH (tcp 22) from 192.168.122.0/24: SSH may come only from 10.0.0.0/16 (read from no Pulumi.dev.yaml here, no policy config)."
    ]
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteIpPrefix": "192.168.122.0/24"}) == []
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteIpPrefix": "192.168.0.0/16"}) != []
    # Every port, or a range holding 22, is SSH too; a group source is inside the cluster.
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {"direction": "ingress", "remoteIpPrefix": "198.51.100.0/24"}) != []
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "portRangeMin": 1, "portRangeMax": 1024, "remoteIpPrefix": "198.51.100.0/24"}) != []
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteGroupId": "g"}) == []


def test_ssh_rule_reads_a_dual_stack_machine_network_from_the_stack_file_and_the_policy_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rule = {"direction": "ingress", "ethertype": "IPv6", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}
    dual = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    dual["config"]["ocp:machineNetwork"] = ["10.0.0.0/16", "fd00:10::/64"]
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(dual))
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteIpPrefix": "fd00:10::/64"}) == []
    assert _resource_violations(guard.validate_ssh, guard.RULE, "r", {**rule, "remoteIpPrefix": "fd00:11::/64"}) != []
    # The policy config (tools/guard_rails.py writes it so): the families comma-separated.
    assert guard.ssh_sources("urn:pulumi:dev::ocp::t::n", {"machineNetwork": "10.0.0.0/16,fd00:10::/64", "sshAllowedCidr": "10.0.0.0/16"})[0] == [
        "10.0.0.0/16", "fd00:10::/64", "10.0.0.0/16"
    ]


def test_libvirt_stack_passes_untouched():
    """Every resource of the kvm stack's offline deployment through every rule: no violation, no error."""
    resources = deploy(stack_config("kvm"), "kvm")
    assert any(r["type"].startswith("libvirt:") for r in resources)
    for resource in resources:
        for policy in guard.POLICIES:
            if isinstance(policy, guard.ResourceValidationPolicy):
                name = resource.get("name", resource["type"])
                assert _resource_violations(policy.validate, resource["type"], name, resource.get("inputs", {})) == [], resource["type"]
    judged = [PolicyResource(r["type"], r.get("inputs", {}), r["urn"], r["name"], None, None, None, [], {}) for r in resources]  # type: ignore[arg-type]
    for policy in guard.POLICIES:
        if isinstance(policy, guard.StackValidationPolicy):
            found: list[str] = []
            policy.validate(StackValidationArgs(judged), lambda message, urn=None: found.append(message))
            assert found == [], policy.name


# Issue 49, item 1: no unfiltered path to the control plane, and every unfiltered port listed.
VLAN_ID = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"


def _port_violations(validate, name: str, props: dict, config: dict | None = None) -> list[str]:
    return _resource_violations(validate, "openstack:networking/port:Port", name, {"networkId": VLAN_ID, **props}, config)


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("ocp4-control-plane-master-0-port-1", "is a master's port without port security"),
        ("ocp4-bootstrap-node-port-1", "is the bootstrap's port without port security"),
        ("ocp4-workers-worker-1-port-1", None),
        ("ocp4-control-plane-master-0-port", None),  # a node's own port on the machine network: the program's groups
    ],
)
def test_a_control_plane_port_without_port_security_is_refused(name, refused, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no stack file here: nothing said
    found = _port_violations(guard.validate_unfiltered_control_plane, name, {"portSecurityEnabled": False, "noSecurityGroups": True})
    if refused is None:
        assert found == []
    else:
        [message] = found
        assert message.startswith(f"{name} {refused}: every port of it, the machine config server (22623, 22624) and etcd included, from anything on {VLAN_ID}")


def test_a_masters_unfiltered_port_passes_where_the_stack_says_so_and_the_bootstraps_never(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = {"config": {"ocp:openstack": {"additionalNetworks": [{"network": "lab-vlan", "portSecurity": False, "unfilteredMasterPorts": True}]}}}
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(said))
    props = {"portSecurityEnabled": False, "noSecurityGroups": True}
    assert _port_violations(guard.validate_unfiltered_control_plane, "ocp4-control-plane-master-2-port-1", props) == []
    assert _port_violations(guard.validate_unfiltered_control_plane, "ocp4-bootstrap-node-port-1", props) != []
    # A policy config pins it apart from the stack file.
    assert _port_violations(guard.validate_unfiltered_control_plane, "ocp4-control-plane-master-2-port-1", props, {"unfilteredMasterPorts": False}) != []


def test_every_unfiltered_port_is_listed():
    listed = _port_violations(guard.report_unfiltered_ports, "ocp4-workers-worker-0-port-2", {"portSecurityEnabled": False, "noSecurityGroups": True})
    assert listed == [f"ocp4-workers-worker-0-port-2 has no port security: every port of its node, from anything on {VLAN_ID}."]
    inherited = _port_violations(guard.report_unfiltered_ports, "ocp4-workers-worker-0-port-2", {"noSecurityGroups": True})
    assert inherited == [
        "ocp4-workers-worker-0-port-2 carries no security group (on a network with port security off, nothing filters it): "
        f"every port of its node, from anything on {VLAN_ID}."
    ]
    assert _port_violations(guard.report_unfiltered_ports, "ocp4-workers-worker-0-port-2", {"securityGroupIds": ["g"]}) == []
    unfiltered = [policy for policy in guard.POLICIES if policy.name == "unfiltered-ports"]
    assert [policy.enforcement_level for policy in unfiltered] == [guard.EnforcementLevel.ADVISORY]
