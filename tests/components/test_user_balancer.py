"""ocp:loadBalancer: UserManaged through the program under mocks: the install-config, no VIP
ports and no VIP in any node port's allowed address pairs, no VRRP rule, the outputs naming
what the user's balancer fronts, and a running cluster refusing the switch."""

from __future__ import annotations

import pytest

from cluster.config import load_config
from cluster.firewall import security_groups
from cluster.addresses import plan_addresses
from cluster.install_config import install_config
from cluster.installer import release_lookups
from tests.components.test_installer import install_config_of
from tests.components.test_openstack import CIDR, PORT, RULE, by_input_name, rules
from tests.conftest import PULL_SECRET, deploy, preview, run, stack_config, with_section
from tests.ignition.test_user_balancer import user_managed
from tests.test_day2 import _without_in_record
from tools.mock_run import deployed_from, run_program, unwrap

EXISTING = {"networkId": "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b", "subnetId": "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"}


@pytest.fixture(scope="module")
def standalone_lb():
    return run(user_managed(stack_config("standalone")), stack="standalone")


@pytest.fixture(scope="module")
def integrated_lb():
    return run(user_managed(with_section(stack_config("dev"), "openstack", existingNetwork=EXISTING)))


def test_integrated_mode_tells_the_installer_and_platform_none_has_no_such_key(integrated_lb, standalone_lb, dev_run):
    platform = install_config_of(integrated_lb)["platform"]["openstack"]
    assert platform["loadBalancer"] == {"type": "UserManaged"}
    assert (platform["apiVIPs"], platform["ingressVIPs"]) == (["10.0.0.5"], ["10.0.0.7"])
    assert "loadBalancer" not in install_config_of(dev_run)["platform"]["openstack"]
    assert install_config_of(standalone_lb)["platform"] == {"none": {}}


def test_the_install_config_model_writes_the_key_only_under_platform_openstack():
    integrated = load_config(user_managed(with_section(stack_config("dev"), "openstack", existingNetwork=EXISTING)))
    document = install_config(integrated, plan_addresses(integrated), PULL_SECRET)
    assert document["platform"]["openstack"]["loadBalancer"] == {"type": "UserManaged"}
    standalone = load_config(user_managed(stack_config("standalone")))
    assert install_config(standalone, plan_addresses(standalone), PULL_SECRET)["platform"] == {"none": {}}


@pytest.mark.parametrize("mode", ["standalone", "integrated"])
def test_no_vip_port_and_no_vip_on_any_node_port(mode, request):
    program_run = request.getfixturevalue(f"{mode}_lb")
    ports = by_input_name(program_run, PORT)
    assert not [r.name for r in program_run.resources if "-vips-" in r.name]  # no port, no floating IP
    node_ports = {name: port for name, port in ports.items() if name.startswith("ocp4-")}
    assert {"ocp4-bootstrap", "ocp4-master-0", "ocp4-master-2", "ocp4-worker-1"} <= set(node_ports)
    assert {name: port.get("allowedAddressPairs") for name, port in node_ports.items() if port.get("allowedAddressPairs")} == {}
    addresses = {ip["ipAddress"] for port in ports.values() for ip in port.get("fixedIps") or []}
    assert not addresses & {"10.0.0.5", "10.0.0.7"}  # the balancer's, on the machine network


def test_the_vip_component_stays_and_makes_nothing(standalone_lb):
    (component,) = [r for r in standalone_lb.resources if r.type == "ocp:openstack:VipPorts"]
    assert not [r for r in standalone_lb.resources if r.parent == component.urn]
    assert standalone_lb.outputs["apiFloatingIp"] is None and standalone_lb.outputs["ingressFloatingIp"] is None


def test_no_vrrp_rule_and_the_balancers_ports_open_from_the_machine_network(standalone_lb, standalone_run):
    for group in ("ocp4-security-master", "ocp4-security-worker"):
        managed, own = rules(standalone_run, group), rules(standalone_lb, group)
        assert managed - own == {("vrrp", None, None, CIDR)} and own <= managed
    master = rules(standalone_lb, "ocp4-security-master")
    assert {("tcp", port, port, CIDR) for port in (6443, 22623, 22624)} <= master
    assert rules(standalone_lb, "ocp4-security-ingress") == rules(standalone_run, "ocp4-security-ingress")
    assert {("tcp", port, port, CIDR) for port in (80, 443, 1936)} <= rules(standalone_lb, "ocp4-security-ingress")
    described = {
        r.inputs["description"] for r in standalone_lb.of_type(RULE) if r.inputs.get("portRangeMin") == 1936
    }
    assert described == {"router health (the load balancer checks)"}


def test_the_firewall_model_drops_only_vrrp():
    managed = load_config(stack_config("kvm"))
    own = load_config(user_managed(stack_config("kvm")))
    assert security_groups(own, plan_addresses(own)) == {}  # libvirt: no groups at all
    config = load_config(user_managed(stack_config("standalone")))
    groups = security_groups(config, plan_addresses(config))
    assert not [rule for rules_ in groups.values() for rule in rules_ if rule.protocol == "vrrp"]
    assert managed.user_managed_lb is False and own.user_managed_lb is True


def test_outputs_say_what_the_balancer_fronts(standalone_lb, dev_run):
    outputs = standalone_lb.outputs
    assert (outputs["apiVip"], outputs["ingressVip"]) == ("10.0.0.5", "10.0.0.7")
    assert outputs["etcHosts"].startswith("10.0.0.5 api.ocp4.osd2019.local api-int.ocp4.osd2019.local\n")
    pools = outputs["loadBalancerPools"]
    control_plane = {"ocp4-bootstrap": "10.0.0.10", **{f"ocp4-master-{i}": f"10.0.0.{20 + i}" for i in range(3)}}
    assert pools["api"] == {
        "frontend": "10.0.0.5:6443",
        "check": "HTTPS GET /readyz on 6443",
        "members": {name: f"{ip}:6443" for name, ip in control_plane.items()},
        "internal": False,
    }
    assert pools["machine-config"]["frontend"] == "10.0.0.5:22623"
    assert pools["machine-config"]["check"] == "HTTPS GET /healthz on 22623"
    assert pools["machine-config-http"]["members"] == {name: f"{ip}:22624" for name, ip in control_plane.items()}
    workers = {name: ip for name, (ip,) in outputs["nodes"].items() if "worker" in name}
    assert len(workers) == 2
    for name, port in (("ingress-http", 80), ("ingress-https", 443)):
        assert pools[name] == {
            "frontend": f"10.0.0.7:{port}",
            "check": "HTTP GET /healthz/ready on 1936",
            "members": {worker: f"{ip}:{port}" for worker, ip in workers.items()},
            "internal": False,
        }
    assert "loadBalancerPools" not in dev_run.outputs


@pytest.mark.parametrize("mode", ["standalone_lb", "integrated_lb"])
def test_the_machine_config_servers_frontends_are_marked_internal_with_why(mode, request):
    """22623 and 22624 share the API VIP with 6443, which faces the users: the output says they must not."""
    pools = request.getfixturevalue(mode).outputs["loadBalancerPools"]
    internal = {name for name, pool in pools.items() if pool["internal"]}
    assert internal == ({"machine-config", "machine-config-http"} if mode == "standalone_lb" else {"machine-config"})
    for name in internal:
        assert pools[name]["why"] == (
            "the machine config server serves the nodes' configs, secrets included, to whoever asks: "
            "listen on the machine network only, never beyond it (unlike 6443 on the same VIP)"
        )
    assert all("why" not in pool for name, pool in pools.items() if name not in internal)


def test_integrated_mode_fronts_no_plain_http_mcs_and_names_members_as_upi_does(integrated_lb):
    integrated = integrated_lb.outputs["loadBalancerPools"]
    assert set(integrated) == {"api", "machine-config", "ingress-http", "ingress-https"}
    assert f"{integrated_lb.outputs['infraId']}-bootstrap" in integrated["api"]["members"]


def test_the_bootstrap_leaves_the_pools_when_it_is_removed():
    installed = user_managed(stack_config("standalone"))
    torn_down = with_section(installed, "bootstrap", enabled=False)
    program_run = run_program(torn_down, stack="standalone", engine=deployed_from(deploy(installed, "standalone")))
    pools = program_run.outputs["loadBalancerPools"]
    for name in ("api", "machine-config", "machine-config-http"):
        assert sorted(pools[name]["members"]) == ["ocp4-master-0", "ocp4-master-1", "ocp4-master-2"]


def test_a_compact_cluster_routes_ingress_to_the_masters():
    program_run = run(with_section(user_managed(stack_config("kvm")), "workers", count=0), stack="kvm")
    assert sorted(program_run.outputs["loadBalancerPools"]["ingress-https"]["members"]) == [f"kvm4-master-{i}" for i in range(3)]


def test_a_running_cluster_refuses_the_switch_either_way():
    managed = stack_config("kvm")
    own = user_managed(managed)
    refused = preview(deploy(managed, "kvm"), own, "kvm")
    assert refused.error is not None and 'ocp:loadBalancer: was "OpenShiftManagedDefault" at install, now "UserManaged"' in refused.error
    back = preview(deploy(own, "kvm"), managed, "kvm")
    assert back.error is not None and 'ocp:loadBalancer: was "UserManaged" at install, now "OpenShiftManagedDefault"' in back.error


def test_a_cluster_installed_before_the_key_existed_had_keepalived_and_is_refused_too():
    managed = stack_config("kvm")
    older = _without_in_record(deploy(managed, "kvm"), "loadBalancer")
    assert preview(older, managed, "kvm").error is None
    refused = preview(older, user_managed(managed), "kvm")
    assert refused.error is not None and "ocp:loadBalancer:" in refused.error


def test_only_the_coredns_image_is_read_from_the_release(standalone_lb):
    """The nodes run CoreDNS alone: naming its image is enough for a run without `oc`."""
    from tests.components.test_installer import installer_command

    assert unwrap(installer_command(standalone_lb).inputs["environment"])["RELEASE_COMPONENTS"] == "coredns"
    named = with_section(user_managed(stack_config("standalone")), "networking", images={"coredns": "registry.lab/coredns@sha256:" + "c" * 64})
    assert release_lookups(load_config(named)) == ()
