"""ocp:loadBalancer: UserManaged: VIPs on the balancer's own routed network, and one address for the API and Ingress,
as the installer takes them (issue 50, finding 9): pkg/types/validation/installconfig.go validateAPIAndIngressVIPs
(v1.4.19-ec5, and master) skips "VIP for API must not be one of the Ingress VIPs" and "IP expected to be in one of the
machine networks" for loadBalancer.type UserManaged. Through the public surface: the stack's keys and messages, the
address plan and the subnet's DHCP pools, the program under mocks (install-config, ports, outputs, the nodes' DNS and
pointers), and the real openshift-install taking what the program takes."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import ConfigError, load_config
from cluster.installer import render_install_config
from ignition.networking import COREFILE, node_additions
from tests.components.test_installer import install_config_of
from tests.components.test_openstack import PORT, by_input_name
from tests.conftest import PULL_SECRET, run, stack_config, with_section
from tests.ignition.test_networking import IDENTITY, resolve
from tests.ignition.test_user_balancer import user_managed
from tools import real_installer
from tools.mock_run import unwrap
from tools.plan import node_outputs

GIVEN = {"networkId": "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b", "subnetId": "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"}
# The balancer's own routed network, apart from ocp:machineNetwork 10.0.0.0/16; one address for both.
FRONTEND = "172.16.50.10"


def routed(config: dict[str, str], api: str = FRONTEND, ingress: str = FRONTEND) -> dict[str, str]:
    return {**user_managed(config), "ocp:apiVip": api, "ocp:ingressVip": ingress}


def integrated(**vips: str) -> dict[str, str]:
    return routed(with_section(stack_config("dev"), "openstack", existingNetwork=GIVEN), **vips)


def problems(config: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    return raised.value.problems


def test_keepalived_vips_stay_in_the_machine_network_and_apart():
    """Without a balancer of the user's the nodes hold the VIPs: the rules stay, each message saying the way out."""
    assert problems({**stack_config("standalone"), "ocp:apiVip": FRONTEND}) == [
        f"ocp:apiVip: {FRONTEND} is not a host address in ocp:machineNetwork 10.0.0.0/16 (the nodes' keepalived holds it "
        "there; only a balancer of your own, ocp:loadBalancer: UserManaged, may listen elsewhere)"
    ]
    assert problems({**stack_config("standalone"), "ocp:apiVip": "10.0.0.9", "ocp:ingressVip": "10.0.0.9"}) == [
        "ocp:ingressVip: 10.0.0.9 is also the API VIP: the two VIPs must differ (keepalived holds each on its own nodes; "
        "one address for both only with a balancer of your own, ocp:loadBalancer: UserManaged)"
    ]


@pytest.mark.parametrize("stack", ["standalone", "kvm", "dev"])
def test_a_balancer_of_your_own_may_listen_on_its_own_network_with_one_address(stack):
    config = load_config(integrated() if stack == "dev" else routed(stack_config(stack)))
    plan = plan_addresses(config)
    assert (str(plan.api_vip), str(plan.ingress_vip)) == (FRONTEND, FRONTEND)
    # Nothing is cut out of the machine network's DHCP pool for it: the pool runs from after the workers to the end.
    network = plan.network
    assert [(str(a), str(b)) for a, b in plan.allocation_pools] == [(str(network.network_address + 30 + config.workers.max_count), str(network.broadcast_address - 1))]


def test_a_vip_inside_the_machine_network_still_may_not_be_a_nodes():
    assert problems(routed(stack_config("standalone"), api="10.0.0.20")) == [
        "ocp:apiVip: 10.0.0.20 is ocp4-master-0's reserved address: pick a free address such as 10.0.0.5 or one at the top of the network"
    ]


def test_the_install_config_names_the_balancers_address_for_both():
    platform = yaml.safe_load(render_install_config(load_config(integrated()), plan_addresses(load_config(integrated())), PULL_SECRET))["platform"]
    assert (platform["openstack"]["apiVIPs"], platform["openstack"]["ingressVIPs"]) == ([FRONTEND], [FRONTEND])
    assert platform["openstack"]["loadBalancer"] == {"type": "UserManaged"}


@pytest.fixture(scope="module")
def standalone_routed():
    return run(routed(stack_config("standalone")), stack="standalone")


def test_the_program_makes_no_vip_port_and_pairs_nothing_with_it(standalone_routed):
    """No port holds the address and none needs it in its allowed address pairs (MAPO, too, leaves the VIPs out of
    its ports' pairs with UserManaged: machine-api-provider-openstack pkg/machine/actuator.go ignoreAddressPairs)."""
    ports = by_input_name(standalone_routed, PORT)
    assert not [r.name for r in standalone_routed.resources if "-vips-" in r.name]
    assert {name: port.get("allowedAddressPairs") for name, port in ports.items() if port.get("allowedAddressPairs")} == {}
    (subnet,) = [r for r in standalone_routed.resources if r.type == "openstack:networking/subnet:Subnet"]
    assert unwrap(subnet.inputs["allocationPools"]) == [{"start": "10.0.0.130", "end": "10.0.255.254"}]


def test_the_outputs_and_the_nodes_name_the_balancers_address(standalone_routed):
    outputs = standalone_routed.outputs
    assert (outputs["apiVip"], outputs["ingressVip"]) == (FRONTEND, FRONTEND)
    assert outputs["etcHosts"].startswith(f"{FRONTEND} api.ocp4.osd2019.local api-int.ocp4.osd2019.local\n")
    pools = outputs["loadBalancerPools"]
    assert {name: pool["frontend"] for name, pool in pools.items()} == {
        "api": f"{FRONTEND}:6443", "machine-config": f"{FRONTEND}:22623", "machine-config-http": f"{FRONTEND}:22624",
        "ingress-http": f"{FRONTEND}:80", "ingress-https": f"{FRONTEND}:443",
    }
    config = load_config(routed(stack_config("standalone")))
    plan = plan_addresses(config)
    corefile = next(item.contents.decode() for item in node_additions(config, plan, plan.masters[0], IDENTITY).files if item.path == COREFILE)
    assert resolve(corefile, "api-int.ocp4.osd2019.local.") == FRONTEND
    assert resolve(corefile, "console-openshift-console.apps.ocp4.osd2019.local.") == FRONTEND
    worker = next(node for node in node_outputs(standalone_routed) if "worker" in node.hostname)
    assert json.loads(worker.user_data)["ignition"]["config"]["merge"] == [{"source": f"http://{FRONTEND}:22624/config/worker"}]


def test_integrated_mode_writes_them_for_the_installer():
    program_run = run(integrated())
    platform = install_config_of(program_run)["platform"]["openstack"]
    assert (platform["apiVIPs"], platform["ingressVIPs"], platform["loadBalancer"]) == ([FRONTEND], [FRONTEND], {"type": "UserManaged"})


# ---------------------------------------------------------------- the real installer

@pytest.fixture(scope="module")
def installer():
    binary = real_installer.binary()
    if binary is None:
        pytest.skip("openshift-install is not built: run `bash .ci/toolchain`")
    return binary


def test_the_real_installer_takes_them_on_platform_openstack(installer, tmp_path):
    """`create install-config` loads the file and runs the installer's whole install-config validation
    (ValidateInstallConfig, where the VIP rules are); its checks against a cloud are switched off
    (OPENSHIFT_INSTALL_SKIP_PREFLIGHT_VALIDATIONS: they read flavors, networks and the subnet's pools, of which only
    the pools concern VIPs, and an address outside the subnet is in none). Without UserManaged the same addresses are
    refused with the installer's reasons, as the program refuses them."""
    environment = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OPENSHIFT_INSTALL_SKIP_PREFLIGHT_VALIDATIONS": "1", "OS_CLOUD": "openstack"}
    config = load_config(integrated())
    document = yaml.safe_load(render_install_config(config, plan_addresses(config), PULL_SECRET))
    for name, loaded in (("own", document), ("keepalived", {**document, "platform": {"openstack": {
        key: value for key, value in document["platform"]["openstack"].items() if key != "loadBalancer"
    }}})):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "install-config.yaml").write_text(yaml.safe_dump(loaded))
        made = subprocess.run([installer, "create", "install-config", "--dir", str(directory)], env=environment, capture_output=True, text=True, timeout=300)
        if name == "own":
            assert made.returncode == 0, made.stderr[-2000:]
            written = yaml.safe_load((directory / "install-config.yaml").read_text())["platform"]["openstack"]
            assert (written["apiVIPs"], written["ingressVIPs"]) == ([FRONTEND], [FRONTEND])
        else:
            assert made.returncode != 0
            assert f'platform.openstack.apiVIPs: Invalid value: "{FRONTEND}": VIP for API must not be one of the Ingress VIPs' in made.stderr
            assert f'platform.openstack.ingressVIPs: Invalid value: "{FRONTEND}": IP expected to be in one of the machine networks: 10.0.0.0/16' in made.stderr


def test_the_real_installer_makes_the_standalone_stacks_manifests(installer, tmp_path):
    """platform: none carries no VIP: the installer makes the manifests of what standalone mode takes."""
    config = load_config(routed(stack_config("standalone")))
    (tmp_path / "install-config.yaml").write_text(render_install_config(config, plan_addresses(config), PULL_SECRET))
    made = subprocess.run([installer, "create", "manifests", "--dir", str(tmp_path)], env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    assert (tmp_path / "manifests" / "cluster-infrastructure-02-config.yml").exists()


def test_the_plans_picture_draws_one_address_for_both_once(standalone_routed):
    from tests.tools.test_topology import boxes
    from tools import topology

    svg = topology.render(standalone_routed.state(), standalone_routed.outputs, "stack standalone")
    if svg is None:
        pytest.skip(topology.HOW)
    assert [lines for title, lines in boxes(svg).items() if title.startswith("vip ")] == [["API and Ingress VIP", FRONTEND]]
