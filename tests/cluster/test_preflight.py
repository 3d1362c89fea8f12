"""cluster.preflight, pure: the stack's footprint and what a run adds, from facts given by hand."""

from __future__ import annotations

import ast
import dataclasses
import errno
import os
from pathlib import Path

import pytest

from cluster import libvirt_host
from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.preflight import (
    CloudFacts,
    Existing,
    Flavor,
    Image,
    Quota,
    footprint,
    libvirt_host_problems,
    libvirt_is_local,
    mirror_warnings,
    problems,
    wanted,
)
from cluster.cloud_facts import is_baremetal
from tests.conftest import stack_config, with_section, with_helper

FLAVORS = {"master": Flavor(4, 16384, 40), "worker": Flavor(2, 8192, 40), "m1.small": Flavor(1, 2048, 20)}


# The dev stack as it was before ocp:bootstrap.configSource: the helper serves the bootstrap.
HELPER_DEV = with_helper(stack_config("dev"))


def setup(config: dict[str, str]):
    c = load_config(config)
    return c, plan_addresses(c)


def facts(quotas: dict[str, Quota], existing: Existing | None = None) -> CloudFacts:
    return CloudFacts(
        cloud="openstack",
        flavors=FLAVORS,
        images={"rhcos": Image(True), "centos-stream-9": Image(True)},
        external_networks={"external": True},
        floating_ips={},
        compute_zones=("nova",),
        volume_zones=("nova",),
        volume_types=(),
        network_extensions=("standard-attr-tag",),
        quotas=quotas,
        existing=existing or Existing(),
    )


def test_the_dev_footprint_with_glance_has_no_helper():
    config, plan = setup(stack_config("dev"))
    helper_era = footprint(*setup(HELPER_DEV), FLAVORS)
    # No helper server, port, group (2 rules + Neutron's 2 egress) or floating IP.
    assert footprint(config, plan, FLAVORS) == {
        **helper_era, "instances": 6, "cores": helper_era["cores"] - 1, "ram": helper_era["ram"] - 2048, "ports": 10,
        "security_groups": 4, "security_group_rules": 49, "floating_ips": 3,
    }


def test_the_dev_footprint():
    config, plan = setup(HELPER_DEV)
    # 3 masters, 2 workers, the bootstrap and its helper; 5 groups (master, worker, ingress, helper, bootstrap).
    assert footprint(config, plan, FLAVORS) == {
        "instances": 7,
        "cores": 3 * 4 + 2 * 2 + 4 + 1,
        "ram": 3 * 16384 + 2 * 8192 + 16384 + 2048,
        "server_groups": 2,
        "ports": 7 + 2 + 2,  # a port per server, the VIP ports, the router interface and DHCP port
        "security_groups": 5,
        "security_group_rules": 53,  # 43 of cluster.firewall's, and Neutron's 2 egress rules per group
        "floating_ips": 4,  # API, Ingress, helper, bootstrap
        "networks": 1,  # the network, subnet and router the stack makes
        "subnets": 1,
        "routers": 1,
        "volumes": 0,
        "gigabytes": 0,
    }


def test_rules_count_neutrons_two_default_egress_rules_per_group():
    config, plan = setup(HELPER_DEV)
    torn_down = setup(with_section(HELPER_DEV, "bootstrap", enabled=False))
    # the helper's group (two rules) and the bootstrap's (SSH), each with the two egress rules Neutron adds
    assert footprint(config, plan, FLAVORS)["security_group_rules"] - footprint(*torn_down, FLAVORS)["security_group_rules"] == 7
    assert footprint(config, plan, FLAVORS)["floating_ips"] - footprint(*torn_down, FLAVORS)["floating_ips"] == 2


def test_root_volumes_count_per_server_the_bootstrap_with_the_masters():
    config, plan = setup(with_section(HELPER_DEV, "masters", rootVolume={"size": 100, "type": "ssd"}))
    counts = footprint(config, plan, FLAVORS)
    assert (counts["volumes"], counts["gigabytes"]) == (4, 400)


def test_extra_networks_add_a_port_per_node_then_and_on_day_2():
    network = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
    config, plan = setup(with_section(HELPER_DEV, "openstack", additionalNetworkIds=[network]))
    # 3 masters and 2 workers get one more port each; the bootstrap and the helper do not (issue 49: no extra network).
    assert footprint(config, plan, FLAVORS)["ports"] == 7 + 5 + 2 + 2
    # On day 2 those ports exist with the infra ID's tag, as the nodes' own: one more worker adds 2 ports.
    grown = setup(with_section(with_section(HELPER_DEV, "openstack", additionalNetworkIds=[network]), "workers", count=3))
    existing = Existing(masters=3, workers=2, bootstrap=True, helper=True, ports=9 + 5)
    assert problems(*grown, facts({"ports": Quota(100, 98)}, existing)) == []
    assert "the stack adds 2 ports" in problems(*grown, facts({"ports": Quota(100, 99)}, existing))[0]


def test_what_exists_is_not_needed_again():
    config, plan = setup(with_section(HELPER_DEV, "workers", count=4))
    existing = Existing(masters=3, workers=2, bootstrap=True, helper=True, ports=9)
    tight = {"instances": Quota(20, 18), "ports": Quota(20, 18)}
    assert problems(config, plan, facts(tight, existing)) == []
    found = problems(config, plan, facts({"instances": Quota(19, 18)}, existing))
    assert found == [
        'ocp:openstack.cloud: the stack adds 2 instances and the compute quota in cloud "openstack" has 1 left '
        "(18 of 19 in use): raise it (`openstack quota set --instances 20 <project>`) or make the stack smaller"
    ]


def test_workers_spread_over_server_groups_of_the_members_quota():
    members = {"server_group_members": Quota(10)}
    config, plan = setup(with_section(HELPER_DEV, "workers", count=12, serverGroupSize=10))
    assert config.workers.server_group_members() == (10, 2)
    assert [config.workers.server_group(index) for index in (0, 9, 10, 11)] == ["", "", "-1", "-1"]
    assert problems(config, plan, facts(members)) == []
    # The masters' group and both workers' groups.
    assert footprint(config, plan, FLAVORS)["server_groups"] == 3
    # On day 2 a group shows by its members: the second one is not there yet.
    grown = Existing(masters=3, workers=10, bootstrap=True, helper=True, ports=16, worker_groups=(10,))
    assert footprint(config, plan, FLAVORS, grown)["server_groups"] == 2
    assert problems(config, plan, facts({**members, "server_groups": Quota(10, 9)}, grown)) == []
    assert "the stack adds 1 server groups" in problems(config, plan, facts({"server_groups": Quota(10, 10)}, grown))[0]


def test_a_running_worker_never_changes_server_group():
    config, plan = setup(with_section(HELPER_DEV, "workers", count=12, serverGroupSize=10))
    # Eight workers in one group: 10 per group keeps them all where they are.
    assert problems(config, plan, facts({}, Existing(masters=3, workers=8, worker_groups=(8, 0)))) == []
    moved = problems(*setup(with_section(HELPER_DEV, "workers", count=12, serverGroupSize=5)), facts({}, Existing(masters=3, workers=12, worker_groups=(10, 2))))
    assert moved == [
        "ocp:workers.serverGroupSize: the 12 running workers are in server groups of [10, 2] members; with 5 some "
        "would change group, and Nova cannot move a server: they would be replaced. To keep them where they are, "
        "write serverGroupSize: 10"
    ]
    unset = problems(*setup(with_section(HELPER_DEV, "workers", count=9)), facts({}, Existing(masters=3, workers=9, worker_groups=(9,))))
    assert unset == []
    assert "unset it or write 11 or more" in problems(config, plan, facts({}, Existing(masters=3, workers=11, worker_groups=(11,))))[0]


def test_limit_only_quotas_hold_the_whole_footprint_and_unlimited_is_no_limit():
    config, plan = setup(HELPER_DEV)
    existing = Existing(masters=3, workers=2, bootstrap=True, helper=True, ports=9)
    assert problems(config, plan, facts({"floating_ips": Quota(4), "instances": Quota(-1, 500)}, existing)) == []
    assert problems(config, plan, facts({"floating_ips": Quota(3)}, existing)) == [
        'ocp:openstack.cloud: the stack needs 4 floating IPs and the network quota in cloud "openstack" allows 3: '
        "raise it (`openstack quota set --floating-ips 4 <project>`) or make the stack smaller"
    ]


def test_only_what_the_stack_uses_is_looked_up():
    config, plan = setup(with_section(HELPER_DEV, "bootstrap", enabled=False))
    want = wanted(config, plan)
    assert want.flavors == ("master", "worker")
    assert want.images == ("rhcos",)
    assert (want.zones, want.volume_types, want.extensions) == (False, False, True)
    standalone, plan = setup(stack_config("standalone"))
    assert wanted(standalone, plan).extensions is False


def test_the_pure_core_imports_no_pulumi():
    tree = ast.parse((Path(__file__).resolve().parents[2] / "cluster" / "preflight.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not [name for name in imported if name.startswith("pulumi")]


# --------------------------------------------------------------------------- libvirt: KVM on this machine

MISSING = Path("/nonexistent/kvm")


def kvm(**libvirt):
    return load_config(with_section(stack_config("kvm"), "libvirt", **libvirt))


@pytest.mark.parametrize(
    "uri,local",
    [
        ("qemu:///system", True),
        ("qemu:///session", True),
        ("qemu:///system?socket=/run/libvirt/virtqemud-sock", True),
        ("qemu+unix:///system", True),
        ("qemu+ssh://root@kvm-host/system", False),
        ("qemu+tcp://kvm-host/system", False),
        ("qemu://kvm-host/system", False),
    ],
)
def test_which_uris_name_this_machine(uri, local):
    assert libvirt_is_local(uri) is local


def test_a_local_kvm_stack_needs_a_kvm_device_it_can_open(tmp_path):
    device = tmp_path / "kvm"
    device.write_text("")
    assert libvirt_host_problems(kvm(), device) == []
    (problem,) = libvirt_host_problems(kvm(), MISSING)
    assert problem.startswith("ocp:libvirt.domainType: kvm (the default), but there is no /nonexistent/kvm on this machine")
    assert "set ocp:libvirt.domainType: qemu (software emulation, far slower" in problem and "enable KVM" in problem
    (problem,) = libvirt_host_problems(kvm(uri="qemu:///session?socket=/run/user/1000/libvirt/virtqemud-sock"), tmp_path)
    assert f"but {tmp_path} cannot be opened read-write (Is a directory)" in problem
    assert "ocp:libvirt.uri qemu:///session?socket=" in problem


def test_no_kvm_check_for_qemu_a_remote_host_or_openstack():
    assert libvirt_host_problems(kvm(domainType="qemu"), MISSING) == []
    assert libvirt_host_problems(kvm(uri="qemu+ssh://root@kvm-host/system"), MISSING) == []
    assert libvirt_host_problems(load_config(HELPER_DEV), MISSING) == []


def test_a_device_this_user_may_not_open_is_no_proof_for_the_system_instance(monkeypatch):
    """qemu:///system runs QEMU as libvirt's own user (in the kvm group): only the session's QEMU runs as us."""
    real_open = os.open

    def refused(path, *args, **kwargs):
        if Path(path) == MISSING:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(libvirt_host.os, "open", refused)
    monkeypatch.setattr(libvirt_host.os, "geteuid", lambda: 1000)
    assert libvirt_host_problems(kvm(), MISSING) == []
    (problem,) = libvirt_host_problems(kvm(uri="qemu:///session"), MISSING)
    assert "/nonexistent/kvm cannot be opened read-write (Permission denied)" in problem
    monkeypatch.setattr(libvirt_host.os, "geteuid", lambda: 0)  # root refused: nobody may open it (a container's device rules)
    assert len(libvirt_host_problems(kvm(), MISSING)) == 1


def test_a_bare_metal_flavor_is_held_to_no_minimum_as_the_installer_holds_it():
    """Issue 50, finding 5: the installer reads the flavor's extra spec baremetal (validation/cloudinfo.go getFlavor)
    and then skips its size minimums (machinepool.go validateFlavor: Ironic flavors' sizes are often placeholders)."""
    config, plan = setup(stack_config("dev"))
    placeholder = {**FLAVORS, "worker": Flavor(1, 512, 0)}
    base = facts({})
    found = problems(config, plan, dataclasses.replace(base, flavors=placeholder))
    assert [p.split(": ")[0] for p in found] == ["ocp:workers.flavor"] * 3
    assert problems(config, plan, dataclasses.replace(base, flavors={**placeholder, "worker": Flavor(1, 512, 0, baremetal=True)})) == []
    # Any role: the masters' (and the bootstrap's, the same flavor) too.
    metal = {**FLAVORS, "master": Flavor(1, 512, 0, baremetal=True)}
    assert problems(config, plan, dataclasses.replace(base, flavors=metal)) == []
    # The extra spec as Nova gives it: the string "true", as the installer compares it.
    assert (is_baremetal({"baremetal": "true"}), is_baremetal({"baremetal": "True"}), is_baremetal({}), is_baremetal(None)) == (True, False, False, False)


def test_an_ipv6_only_stack_without_mirrors_is_warned_naming_the_key():
    """Upstream's single-stack IPv6 guide (installer docs/user/openstack/deploy_single_stack_ipv6_cluster.md):
    "A local image registry needs to be pre-configured to mirror the images over IPv6"."""
    from tests.cluster.test_families import V4, V6, families

    for mode in ("integrated", "standalone"):
        stack = "dev" if mode == "integrated" else "standalone"
        alone = load_config(families(V6, stack=stack))
        warned = mirror_warnings(alone)
        assert len(warned) == 1 and warned[0].startswith("ocp:imageDigestSources: the machine network is IPv6 only and no mirror is named")
        assert ("`oc adm release info` reads the release through them" in warned[0]) is (mode == "standalone")
        mirrored = families(V6, stack=stack, imageDigestSources=[{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror6.lab:5000/ocp"]}])
        assert mirror_warnings(load_config(mirrored)) == []
        assert mirror_warnings(load_config(families(V4, V6, stack=stack))) == []
