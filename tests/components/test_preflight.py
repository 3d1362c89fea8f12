"""The preflight under mocks: the program reads a described cloud (tools/mock_cloud.py) with
invokes and stops, before any cloud resource registers, with one message per shortfall."""

from __future__ import annotations

import gc
import json

import pulumi
import pytest

from tests.conftest import deploy, preview, stack_config, with_section, with_helper
from tools.mock_cloud import described
from tools.mock_run import ProgramRun, deployed_from, run_program, unwrap

# What may register before the verdict: the providers and the installer's local command.
NOT_CLOUD = {"pulumi:providers:openstack", "pulumi:providers:command", "command:local:Command"}


def attempt(config: dict[str, str], cloud: dict | None = None, stack: str = "dev") -> tuple[ProgramRun, str | None]:
    recorded = ProgramRun()
    try:
        run_program(config, stack=stack, into=recorded, cloud=cloud)
    except pulumi.RunError as error:
        return recorded, str(error)
    return recorded, None


def cloud_types(run: ProgramRun) -> set[str]:
    return {r.type for r in run.resources if r.custom} - NOT_CLOUD


CASES = [
    (
        "master flavor too small",
        {"flavors": {"master": [4, 8192, 40]}},
        {},
        'ocp:masters.flavor: flavor "master" has 8 GiB RAM; the control plane needs at least 16 GiB',
    ),
    (
        "master flavor too few vCPUs",
        {"flavors": {"master": [2, 16384, 40]}},
        {},
        'ocp:masters.flavor: flavor "master" has 2 vCPUs; the control plane needs at least 4',
    ),
    (
        "bootstrap flavor (set apart) too small",
        {"flavors": {"boot": [4, 16384, 20]}},
        {"bootstrap": {"flavor": "boot"}},
        'ocp:bootstrap.flavor: flavor "boot" has a 20 GB disk; the bootstrap needs at least 25 GB',
    ),
    (
        "worker flavor too small",
        {"flavors": {"worker": [2, 4096, 40]}},
        {},
        'ocp:workers.flavor: flavor "worker" has 4 GiB RAM; a worker needs at least 8 GiB',
    ),
    ("missing flavor", {}, {"workers": {"flavor": "worker.huge"}}, 'ocp:workers.flavor: flavor "worker.huge" does not exist in cloud "openstack"'),
    ("missing helper flavor", {}, {"bootstrap.helper": {"flavor": "tiny"}}, 'ocp:bootstrap.helper.flavor: flavor "tiny" does not exist'),
    ("missing image", {}, {"masters": {"image": "rhcos-9"}}, 'ocp:masters.image: image "rhcos-9" does not exist in cloud "openstack"'),
    ("image not active", {"images": {"rhcos": False}}, {}, 'ocp:workers.image: image "rhcos" is not active'),
    ("missing helper image", {"images": {"centos-stream-9": None}}, {}, 'ocp:bootstrap.helper.image: image "centos-stream-9" does not exist'),
    ("missing external network", {"networks": {"ext": True}}, {"openstack": {"externalNetwork": "nowhere"}}, 'ocp:openstack.externalNetwork: network "nowhere" does not exist'),
    ("network not external", {}, {"openstack": {"externalNetwork": "lab-internal"}}, 'ocp:openstack.externalNetwork: network "lab-internal" is not external'),
    ("missing floating IP", {}, {"openstack": {"apiFloatingIp": "198.51.100.99"}}, "ocp:openstack.apiFloatingIp: floating IP 198.51.100.99 does not exist"),
    (
        "floating IP taken",
        {"floatingIps": {"198.51.100.8": "port-of-someone"}},
        {"openstack": {"ingressFloatingIp": "198.51.100.8"}},
        "ocp:openstack.ingressFloatingIp: floating IP 198.51.100.8 is associated with port port-of-someone",
    ),
    ("missing zone", {}, {"masters": {"availabilityZones": ["nova", "az9"]}}, 'ocp:masters.availabilityZones: zone "az9" does not exist in cloud "openstack" (compute zones: nova, az1, az2)'),
    (
        "missing volume zone",
        {},
        {"workers": {"rootVolume": {"size": 120, "type": "ssd", "availabilityZones": ["az1"]}}},
        'ocp:workers.rootVolume.availabilityZones: zone "az1" does not exist in cloud "openstack" (volume zones: nova, storage-1, storage-2; `openstack availability zone list --volume`)',
    ),
    ("missing volume type", {}, {"workers": {"rootVolume": {"size": 120, "type": "nvme"}}}, 'ocp:workers.rootVolume.type: volume type "nvme" does not exist in cloud "openstack" (types: __DEFAULT__, ssd, ssd-az1, ssd-az2)'),
    ("no tag extension", {"networkExtensions": ["external-net", "router"]}, {}, "ocp:openstack.mode: integrated, but Neutron in cloud \"openstack\" has no tag extension"),
    ("instances", {"quotas": {"instances": [8, 2]}}, {}, 'ocp:openstack.cloud: the stack adds 7 instances and the compute quota in cloud "openstack" has 6 left (2 of 8 in use)'),
    ("cores", {"quotas": {"cores": [24, 4]}}, {}, "the stack adds 21 vCPUs and the compute quota in cloud \"openstack\" has 20 left"),
    ("ram", {"quotas": {"ram": [65536, 0]}}, {}, "the stack adds 83968 MiB RAM and the compute quota"),
    # Nova refuses its limits to a member (the provider names the project): the quota set, without usage.
    ("instances, limits refused", {"quotas": {"instances": [6, 2]}, "computeLimitsForbidden": True}, {}, 'ocp:openstack.cloud: the stack needs 7 instances and the compute quota in cloud "openstack" allows 6'),
    ("server groups", {"quotas": {"serverGroups": [10, 9]}}, {}, "the stack adds 2 server groups and the compute quota in cloud \"openstack\" has 1 left"),
    # Nova's default server_group_members (10), per group; the installer checks it too.
    (
        "server group members, workers",
        {},
        {"workers": {"count": 11}},
        'ocp:workers.count: 11 workers in one server group, and the compute quota server_group_members in cloud "openstack" allows 10 per group (Nova would refuse worker 11 halfway through `pulumi up`): set ocp:workers.serverGroupSize: 10',
    ),
    ("server group members, masters", {"quotas": {"serverGroupMembers": 2}}, {}, "ocp:masters.count: 3 masters share one server group, and the compute quota server_group_members"),
    (
        "server group members, serverGroupSize",
        {"quotas": {"serverGroupMembers": 4}},
        {"workers": {"count": 5, "serverGroupSize": 5}},
        'ocp:workers.serverGroupSize: 5 workers per server group, and the compute quota server_group_members in cloud "openstack" allows 4 per group: set it to 4 or less',
    ),
    # Where the cloud reports its hosts (to an admin): hard anti-affinity past them.
    (
        "hard anti-affinity, masters",
        {"computeHosts": 2},
        {"masters": {"serverGroupPolicy": "anti-affinity"}},
        'ocp:masters.serverGroupPolicy: anti-affinity puts each of the 3 masters of a server group on a compute host of its own, and cloud "openstack" has 2 up',
    ),
    (
        "hard anti-affinity, workers",
        {"computeHosts": 3},
        {"workers": {"count": 4, "serverGroupPolicy": "anti-affinity"}},
        "Write soft-anti-affinity (the installer's default), or ocp:workers.serverGroupSize to at most that many",
    ),
    ("ports", {"quotas": {"ports": [12, 6]}}, {}, "the stack adds 11 ports and the network quota in cloud \"openstack\" has 6 left"),
    ("security groups", {"quotas": {"securityGroups": 4}}, {}, "the stack needs 5 security groups and the network quota in cloud \"openstack\" allows 4"),
    ("security group rules", {"quotas": {"securityGroupRules": 40}}, {}, "the stack needs 53 security group rules and the network quota"),
    ("floating IPs", {"quotas": {"floatingIps": 3}}, {}, "the stack needs 4 floating IPs and the network quota in cloud \"openstack\" allows 3"),
    ("volumes", {"quotas": {"volumes": 3}}, {"masters": {"rootVolume": {"size": 100, "type": "ssd"}}}, "the stack needs 4 volumes and the volume quota"),
    ("gigabytes", {"quotas": {"gigabytes": 300}}, {"masters": {"rootVolume": {"size": 100, "type": "ssd"}}}, "the stack needs 400 GB of volumes and the volume quota"),
]


def _edited(changes: dict) -> dict[str, str]:
    # The cases count the helper's server, port, group and floating IP (bootstrap.configSource: helper).
    config = with_helper(stack_config("dev"))
    for key, fields in changes.items():
        if key == "bootstrap.helper":
            config = with_section(config, "bootstrap", helper={"flavor": "m1.small", "image": "centos-stream-9", **fields})
        else:
            config = with_section(config, key, **fields)
    return config


def _cloud(changes: dict) -> dict:
    # None removes an entry of a mapping
    merged = described(**changes)
    for key, value in changes.items():
        if isinstance(value, dict):
            merged[key] = {name: item for name, item in merged[key].items() if item is not None}
    return merged


@pytest.mark.parametrize("cloud, config, message", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_each_shortfall_is_one_message_and_nothing_is_made(cloud, config, message):
    run, error = attempt(_edited(config), _cloud(cloud))
    assert error is not None and message in error, error
    assert error.startswith("the cloud cannot hold this stack")
    assert cloud_types(run) == set()


def test_the_committed_stacks_pass_against_the_mock_cloud(dev_run, standalone_run):
    for run in (dev_run, standalone_run):
        assert "openstack:compute/instance:Instance" in cloud_types(run)
        assert not any("skipPreflight" in warning for warning in run.warnings)


def test_hard_anti_affinity_within_the_hosts_or_where_none_are_reported_passes():
    config = _edited({"masters": {"serverGroupPolicy": "anti-affinity"}})
    for cloud in (_cloud({"computeHosts": 3}), _cloud({})):  # a member's view reports none
        run, error = attempt(config, cloud)
        assert error is None, error
        assert "openstack:compute/instance:Instance" in cloud_types(run)


def test_every_problem_at_once():
    cloud = _cloud({"flavors": {"worker": [1, 4096, 40]}, "images": {"centos-stream-9": None}, "quotas": {"floatingIps": 1}})
    _, error = attempt(_edited({"masters": {"availabilityZones": ["az9"]}}), cloud)
    assert error is not None
    lines = error.splitlines()
    assert lines[0] == "the cloud cannot hold this stack (5 problems):"
    assert [line.strip().split(": ")[0:2] for line in lines[1:]] == [
        ["ocp:workers.flavor", 'flavor "worker" has 1 vCPUs; a worker needs at least 2'],
        ["ocp:workers.flavor", 'flavor "worker" has 4 GiB RAM; a worker needs at least 8 GiB'],
        ["ocp:bootstrap.helper.image", 'image "centos-stream-9" does not exist in cloud "openstack"'],
        ["ocp:masters.availabilityZones", 'zone "az9" does not exist in cloud "openstack" (compute zones'],
        ["ocp:openstack.cloud", 'the stack needs 4 floating IPs and the network quota in cloud "openstack" allows 1'],
    ]


def test_glance_needs_a_public_image_endpoint_in_the_providers_region():
    # The catalog's image endpoint is in another region than the provider's: the bootstrap could not fetch.
    elsewhere = _cloud({"catalog": {"image": {"RegionTwo": "https://image.two.example:9292"}}})
    run, error = attempt(stack_config("dev"), elsewhere)
    assert error is not None and cloud_types(run) == set()
    assert (
        'ocp:bootstrap.configSource: glance, but the service catalog in cloud "openstack" has no public image endpoint in '
        'region "RegionOne", where the bootstrap would fetch its config: write configSource: helper'
    ) in error
    _, error = attempt(stack_config("standalone"), _cloud({"catalog": {"image": None}}), stack="standalone")
    assert error is not None and 'has no public image endpoint in region "RegionOne"' in error
    # The helper serves it on the machine network instead; a torn-down bootstrap fetches nothing.
    assert attempt(with_helper(stack_config("dev")), elsewhere)[1] is None
    torn_down = with_section(stack_config("dev"), "bootstrap", enabled=False)
    run_program(torn_down, engine=deployed_from(deploy(stack_config("dev"))), cloud=elsewhere)


def test_the_shim_fetches_from_the_providers_region():
    two = _cloud({"catalog": {"image": {"RegionTwo": "https://image.two.example:9292", "RegionOne": "https://image.one.example/image/"}}})
    run, error = attempt(stack_config("dev"), two)
    assert error is None, error
    source = json.loads(unwrap(run.by_name("ocp4-bootstrap-node").inputs["userData"]))["ignition"]["config"]["merge"][0]["source"]
    image = run.by_name("ocp4-bootstrap-config-image")
    assert source == f"https://image.one.example/image/v2/images/{image.id}/file"


def test_without_the_preflight_a_catalog_without_an_image_endpoint_still_stops_the_bootstrap():
    config = with_section(stack_config("dev"), "openstack", skipPreflight=True)
    run, error = attempt(config, _cloud({"catalog": {"image": None}}))
    assert error is not None and "ocp:bootstrap.configSource: glance, but the service catalog has no public image endpoint" in error
    assert "ocp4-bootstrap-node" not in {r.name for r in run.resources}


def test_standalone_mode_needs_no_tag_extension():
    cloud = _cloud({"networkExtensions": []})
    run, error = attempt(stack_config("standalone"), cloud, stack="standalone")
    assert error is None
    _, error = attempt(stack_config("dev"), cloud)
    assert error is not None and "no tag extension" in error


def test_a_probe_that_does_not_run_is_reported_in_integrated_mode(monkeypatch):
    # The mock cloud runs no other command: as if the program's Python could not run the probe.
    from tools import mock_cloud

    monkeypatch.setattr(mock_cloud, "PROBE_COMMAND", "something else")
    run, error = attempt(stack_config("dev"))
    assert error is not None and cloud_types(run) == set()
    assert "ocp:openstack.mode: integrated, and reading Neutron's extensions in cloud \"openstack\" failed (" in error
    assert "the mock cloud does not run" in error, error
    assert "`OS_CLOUD=openstack venv/bin/python -m cluster.cloud_probe`" in error and "pip install -r requirements.txt" in error
    assert "openstack CLI" not in error


def test_the_probes_own_failure_is_the_reason_given(monkeypatch):
    from cluster import cloud_probe
    from tools import mock_cloud

    why = "Keystone at http://keystone.example:5000/v3 refused its credentials (401): check the entry's auth in clouds.yaml"
    monkeypatch.setattr(mock_cloud, "probe_answer", lambda *asked, **more: cloud_probe.failed(why))
    _, error = attempt(stack_config("dev"))
    assert error is not None and f'reading Neutron\'s extensions in cloud "openstack" failed ({why}): ' in error, error
    # Standalone mode wants neither fact: the probe does not run there.
    assert attempt(stack_config("standalone"), stack="standalone")[1] is None


def test_skip_preflight_skips_loudly():
    config = with_section(stack_config("dev"), "openstack", skipPreflight=True)
    run, error = attempt(config, _cloud({"flavors": {"master": [1, 1024, 1]}, "quotas": {"instances": [1, 1]}}))
    assert error is None
    assert any(w.startswith("ocp:openstack.skipPreflight is true: flavors, images") for w in run.warnings), run.warnings
    assert "openstack:compute/instance:Instance" in cloud_types(run)


# Day 2: the stack's own servers, ports and groups count as in use; only growth needs room.
def _tight(instances: int) -> dict:
    # 2 used by others + 6 of the dev stack + `instances` free
    return _cloud({"quotas": {"instances": [8 + instances, 2], "ports": [6 + 8 + instances, 6]}})


def test_a_later_run_counts_only_what_it_adds():
    state = deploy(stack_config("dev"))
    same = preview(state, stack_config("dev"))
    assert same.error is None
    # Against a cloud with no room left, the same stack still passes: it adds nothing.
    engine = deployed_from(state)
    recorded = ProgramRun()
    run_program(stack_config("dev"), into=recorded, engine=engine, cloud=_tight(0))
    assert not [c for c in engine.all_changes() if c.action != "same"]


@pytest.mark.parametrize("room, workers, refused", [(1, 3, False), (1, 4, True), (2, 4, False)])
def test_scaling_workers_needs_room_for_the_new_ones_only(room, workers, refused):
    state = deploy(stack_config("dev"))
    config = with_section(stack_config("dev"), "workers", count=workers)
    engine = deployed_from(state)
    recorded = ProgramRun()
    try:
        run_program(config, into=recorded, engine=engine, cloud=_tight(room))
        error = None
    except pulumi.RunError as failure:
        error = str(failure)
    if refused:
        assert error is not None and f"the stack adds {workers - 2} instances" in error, error
        assert f"has {room} left" in error
        assert cloud_types(recorded) == set()
    else:
        assert error is None, error
        created = {c.name for c in engine.all_changes() if c.action == "create"}
        assert created == {f"ocp4-workers-worker-{i}{suffix}" for i in range(2, workers) for suffix in ("", "-port", "-drain")} | {
            f"ocp4-worker-pointers-worker-{i}" for i in range(2, workers)
        }


def test_bootstrap_teardown_needs_no_room():
    state = deploy(stack_config("dev"))
    config = with_section(stack_config("dev"), "bootstrap", enabled=False)
    run_program(config, engine=deployed_from(state), cloud=_tight(0))


def test_a_given_floating_ip_on_the_stacks_own_port_is_in_place():
    config = with_section(stack_config("dev"), "openstack", ingressFloatingIp="198.51.100.7")
    state = deploy(config)
    again = preview(state, config)
    assert again.error is None, again.error


def test_a_missing_network_or_image_is_reported_once(caplog):
    # The lookups the resources need wait for the preflight: no second, raw failure of them.
    config = _edited({"openstack": {"externalNetwork": "nowhere"}, "masters": {"image": "rhcos-9", "rootVolume": {"size": 100, "type": "ssd"}}})
    run, error = attempt(config, _cloud({}))
    assert error is not None and error.count("does not exist") == 2
    attempt(config, _cloud({}))  # a fresh run lets the first one's event loop and futures go
    gc.collect()
    assert [record.getMessage() for record in caplog.records if "never retrieved" in record.getMessage()] == []


# --------------------------------------------------------------------------- networks and images (issue 41)

NODES, STORAGE, VLAN, SMALL = (f"{n}1111111-2222-4333-8444-555555555555" for n in "abcd")
NODES_V4, STORAGE_V4, SMALL_V4, SHARED_V4 = (f"{n}1111111-2222-4333-8444-666666666666" for n in "abcd")
SHARED = "91111111-2222-4333-8444-555555555555"
DESCRIBED_NETWORKS = {
    "neutronNetworks": [
        {"id": NODES, "name": "nodes", "mtu": 1450, "subnets": [NODES_V4]},
        {"id": STORAGE, "name": "storage", "mtu": 9000, "subnets": [STORAGE_V4]},
        {"id": VLAN, "name": "vlan", "portSecurity": False, "mtu": 1500, "project": "project-admin"},
        {"id": SMALL, "name": "small", "mtu": 1300, "subnets": [SMALL_V4]},
        {"id": SHARED, "name": "shared", "mtu": 1500, "subnets": [SHARED_V4], "project": "project-admin"},
        {"id": "e1111111-2222-4333-8444-555555555555", "name": "twin", "mtu": 1500},
        {"id": "f1111111-2222-4333-8444-555555555555", "name": "twin", "mtu": 1500},
    ],
    "subnets": [
        {"id": NODES_V4, "name": "nodes-v4", "network": NODES, "cidr": "10.0.0.0/16"},
        {"id": STORAGE_V4, "name": "storage-v4", "network": STORAGE, "cidr": "10.9.0.0/24"},
        {"id": SMALL_V4, "name": "small-v4", "network": SMALL, "cidr": "10.0.0.0/16"},
        {"id": SHARED_V4, "name": "shared-v4", "network": SHARED, "cidr": "10.0.0.0/16"},
    ],
}
GIVEN = {"existingNetwork": {"networkId": "nodes", "subnetId": "nodes-v4"}}

NETWORK_CASES = [
    (
        "port security off",
        {"openstack": {"additionalNetworks": [{"network": "vlan"}]}},
        'ocp:openstack.additionalNetworks[0].network: network "vlan" has port security off, and the entry has portSecurity true '
        "(the default), so its ports carry security groups: Neutron would refuse the node's security groups on its ports "
        "(PortSecurityAndIPRequiredForSecurityGroups): write portSecurity: false for it (its ports carry no groups, and go to the workers only)",
    ),
    (
        "two of one name",
        {"openstack": {"additionalNetworks": [{"network": "twin", "portSecurity": False}]}},
        'ocp:openstack.additionalNetworks[0].network: 2 networks are named "twin" in cloud "openstack" (e1111111-2222-4333-8444-555555555555, '
        "f1111111-2222-4333-8444-555555555555): write the ID of the one meant",
    ),
    ("missing network", {"openstack": {"additionalNetworks": [{"network": "nowhere"}]}}, 'network "nowhere" does not exist in cloud "openstack"'),
    (
        "subnet of another network",
        {"openstack": {"existingNetwork": {"networkId": "nodes", "subnetId": "storage-v4"}}},
        f'ocp:openstack.existingNetwork.subnetId: subnet "storage-v4" ({STORAGE_V4}) is on network {STORAGE}, not on network "nodes" ({NODES})',
    ),
    ("machine network", {"openstack": GIVEN, "": {"machineNetwork": "10.1.0.0/16"}}, 'ocp:machineNetwork: 10.1.0.0/16 is not the CIDR of subnet "nodes-v4" (10.0.0.0/16)'),
    (
        "another project's network",
        {"openstack": {"existingNetwork": {"networkId": "shared", "subnetId": "shared-v4"}}},
        'ocp:openstack.existingNetwork.networkId: network "shared" belongs to project project-admin, not to this stack\'s (project-lab)',
    ),
    (
        "MTU",
        {"openstack": {"existingNetwork": {"networkId": "small", "subnetId": "small-v4"}}},
        'ocp:openstack.existingNetwork.networkId: network "small" has MTU 1300, and OVN-Kubernetes needs at least 1380',
    ),
]


def _with_networks(changes: dict) -> dict[str, str]:
    config = _edited({key: value for key, value in changes.items() if key})
    for key, value in changes.get("", {}).items():
        config = {**config, f"ocp:{key}": value}
    return config


@pytest.mark.parametrize("config, message", [case[1:] for case in NETWORK_CASES], ids=[case[0] for case in NETWORK_CASES])
def test_each_network_problem_is_one_message_and_nothing_is_made(config, message):
    run, error = attempt(_with_networks(config), _cloud(DESCRIBED_NETWORKS))
    assert error is not None and message in error, error
    assert error.count("\n  ") == 1, error
    assert cloud_types(run) == set()


def test_networks_that_fit_pass_and_undescribed_ones_are_taken_as_fitting(monkeypatch):
    from components.openstack import preflight

    checks = []
    real = preflight.check
    monkeypatch.setattr(preflight, "check", lambda *args: checks.append(real(*args)) or checks[-1])
    extra = [{"network": "storage"}, {"network": "vlan", "portSecurity": False, "pools": ["workers"]}]
    for stack, openstack in (("dev", {"additionalNetworks": extra}), ("standalone", {**GIVEN, "additionalNetworks": extra})):
        run, error = attempt(with_section(stack_config(stack), "openstack", **openstack), _cloud(DESCRIBED_NETWORKS), stack=stack)
        assert error is None, error
        assert "openstack:compute/instance:Instance" in cloud_types(run)
    # What the preflight read, handed on by the name written.
    networks, subnets = checks[-1].networks, checks[-1].subnets
    assert {ref: (n.id, n.port_security) for ref, n in networks.items()} == {"nodes": (NODES, True), "storage": (STORAGE, True), "vlan": (VLAN, False)}
    assert {ref: s.id for ref, s in subnets.items()} == {"nodes-v4": NODES_V4}
    # The sample cloud describes no networks in detail: any a stack names is there and fits.
    undescribed = with_section(stack_config("standalone"), "openstack", existingNetwork={"networkId": "n", "subnetId": "s"}, additionalNetworks=[{"network": "x"}])
    assert attempt(undescribed, stack="standalone")[1] is None


def test_ports_on_a_network_without_subnet_or_port_security_take_it_as_it_is():
    """No address asked for (Nova boots on an address-less port only when it was made so), and port security
    not turned off again on a network that has it off itself: only its owner may say so (403 to a member)."""
    extra = [{"network": "vlan", "portSecurity": False, "pools": ["workers"]}, {"network": "storage", "portSecurity": False}]
    run, error = attempt(with_section(stack_config("dev"), "openstack", additionalNetworks=extra), _cloud(DESCRIBED_NETWORKS))
    assert error is None, error
    ports = {r.name: unwrap(r.inputs) for r in run.of_type("openstack:networking/port:Port")}
    vlan, storage = ports["ocp4-workers-worker-0-port-1"], ports["ocp4-workers-worker-0-port-2"]
    assert vlan["networkId"] == VLAN and vlan["noFixedIp"] is True and "portSecurityEnabled" not in vlan and vlan["noSecurityGroups"] is True
    assert storage["networkId"] == STORAGE and "noFixedIp" not in storage and storage["portSecurityEnabled"] is False
    # Without port security the masters stay off both (issue 49, item 1): only the workers' ports are there.
    assert not {"ocp4-control-plane-master-0-port-1", "ocp4-control-plane-master-0-port-2"} & set(ports)


def test_a_network_without_a_subnet_whose_ports_carry_groups_is_warned_of():
    twin = "e1111111-2222-4333-8444-555555555555"
    config = with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": twin, "pools": ["workers"]}])
    run, error = attempt(config, _cloud(DESCRIBED_NETWORKS))
    assert error is None, error
    assert [w for w in run.warnings if "has no subnet" in w] == [
        'ocp:openstack.additionalNetworks[0].network: network "twin" has no subnet, and the entry has portSecurity true (the '
        "default), so its ports carry security groups: Neutron makes such a port with no address, and the groups' rules, which "
        "admit traffic by address, drop whatever else the network carries: write portSecurity: false for it (its ports carry "
        "no groups, and go to the workers only), unless that is meant"
    ]


def test_a_network_without_a_subnet_on_every_node_stops_the_program_before_anything():
    """Issue 49, item 1: additionalNetworkIds puts it on the masters, where nothing would hold a port to an address."""
    config = with_section(stack_config("dev"), "openstack", additionalNetworkIds=["e1111111-2222-4333-8444-555555555555"])
    run, error = attempt(config, _cloud(DESCRIBED_NETWORKS))
    assert error is not None and cloud_types(run) == set()
    assert (
        'ocp:openstack.additionalNetworkIds[0]: network "twin" has no subnet, and additionalNetworkIds puts it on every node: '
        "nothing holds a port there to an address"
    ) in str(error)
    assert str(error).endswith("list it under ocp:openstack.additionalNetworks with pools: [workers]")


def test_a_probe_that_does_not_run_leaves_standalone_networks_unread(monkeypatch):
    from tools import mock_cloud

    monkeypatch.setattr(mock_cloud, "PROBE_COMMAND", "something else")
    config = with_section(stack_config("standalone"), "openstack", additionalNetworks=[{"network": "storage"}])
    run, error = attempt(config, _cloud(DESCRIBED_NETWORKS), stack="standalone")
    assert error is not None and cloud_types(run) == set()
    assert 'ocp:openstack.additionalNetworks[0].network: reading the networks in cloud "openstack" failed (' in error


def test_routers_networks_and_subnets_count_against_their_quotas():
    _, error = attempt(_edited({}), _cloud({"quotas": {"routers": 0, "networks": 0, "subnets": 1}}))
    assert error is not None and error.startswith("the cloud cannot hold this stack (2 problems):")
    assert 'the stack needs 1 routers and the network quota in cloud "openstack" allows 0: raise it (`openstack quota set --routers 1 <project>`)' in error
    assert "the stack needs 1 networks" in error
    # existingNetwork: no network, subnet or router made (router: true makes one).
    given = with_section(stack_config("standalone"), "openstack", existingNetwork={"networkId": "n", "subnetId": "s"})
    assert attempt(given, _cloud({"quotas": {"routers": 0, "networks": 0, "subnets": 0}}), stack="standalone")[1] is None
    routed = with_section(given, "openstack", existingNetwork={"networkId": "n", "subnetId": "s", "router": True})
    _, error = attempt(routed, _cloud({"quotas": {"routers": 0, "networks": 0, "subnets": 0}}), stack="standalone")
    assert error is not None and "the stack needs 1 routers" in error and "networks" not in error


TWIN_IMAGES = {"images": {"rhcos": [
    {"id": "image-rhcos-old", "created": "2026-10-01T00:00:00Z"},
    {"id": "image-rhcos-new", "created": "2026-11-01T00:00:00Z"},
    {"id": "image-rhcos-queued", "active": False, "created": "2026-11-20T00:00:00Z"},
]}}


def test_of_two_images_of_one_name_the_newest_active_is_said_and_handed_on(monkeypatch):
    """Standalone mode: no Machine API reads the name (platform none), so the servers boot the newest, by ID."""
    from components.openstack import preflight

    checks = []
    real = preflight.check
    monkeypatch.setattr(preflight, "check", lambda *args: checks.append(real(*args)) or checks[-1])
    run, error = attempt(stack_config("standalone"), _cloud(TWIN_IMAGES), stack="standalone")
    assert error is None, error
    assert [w for w in run.warnings if "active images" in w] == [
        'ocp:masters.image: 2 active images are named "rhcos" in cloud "openstack": the servers boot the newest, image-rhcos-new '
        "(not image-rhcos-old). Delete or rename the others (`openstack image set --name <new name> <ID>`) to make it the only one"
    ]
    assert [dict(check.images) for check in checks] == [{"rhcos": "image-rhcos-new"}]
    # One image of a name: no warning; its ID handed on all the same.
    checks.clear()
    run, _ = attempt(stack_config("dev"))
    assert not [w for w in run.warnings if "active images" in w] and checks[0].images == {"rhcos": "image-rhcos"}
    # skipPreflight: nothing read, the components look the image up by the same rule.
    checks.clear()
    attempt(with_section(stack_config("dev"), "openstack", skipPreflight=True))
    assert checks[0].images == {}


# Issue 50, finding 4: the installer and the Machine API count every image Glance lists under a name.
PUBLIC_TWIN = {"images": {"rhcos": [
    {"id": "image-rhcos", "created": "2026-11-01T00:00:00Z"},
    {"id": "image-rhcos-admins", "visibility": "public", "project": "project-admin", "created": "2026-10-01T00:00:00Z"},
]}}


def test_integrated_mode_refuses_a_name_glance_lists_several_images_under_before_anything():
    """The project's one active rhcos and an admin's public one: the provider's lookup (which the servers' IDs come
    from) and the old preflight saw both, but only warned; a queued copy it did not see at all (TWIN_IMAGES)."""
    run, error = attempt(stack_config("dev"), _cloud(PUBLIC_TWIN))
    assert error is not None and cloud_types(run) == set()
    assert (
        'ocp:masters.image, ocp:workers.image: 2 images are named "rhcos" in cloud "openstack" as Glance lists them to this project '
        "(every status, public and shared ones too: image-rhcos (active), image-rhcos-admins (active, public, project project-admin's))"
    ) in error
    run, error = attempt(stack_config("dev"), _cloud(TWIN_IMAGES))
    assert error is not None and "image-rhcos-queued (queued)" in error and cloud_types(run) == set()
    # Workers on an image of their own: only that key.
    _, error = attempt(with_section(stack_config("dev"), "workers", image="rhcos-4.17"), _cloud(PUBLIC_TWIN))
    assert error is not None and 'ocp:masters.image: 2 images are named "rhcos"' in error and "ocp:workers.image" not in error


def test_a_running_integrated_cluster_is_warned_that_its_machinesets_fail_on_the_name():
    state = deploy(stack_config("dev"))
    recorded = ProgramRun()
    run_program(stack_config("dev"), into=recorded, engine=deployed_from(state), cloud=_cloud(PUBLIC_TWIN))
    warned = [w for w in recorded.warnings if "images are named" in w]
    assert len(warned) == 1 and warned[0].startswith('ocp:masters.image, ocp:workers.image: 2 images are named "rhcos"'), recorded.warnings
    assert "so scaling up a MachineSet (this stack's example ones name it) fails; the servers this program makes boot the newest active one, image-rhcos" in warned[0]


# Issue 50, finding 5: an Ironic flavor's placeholder sizes, lifted by its extra spec as the installer lifts them.
def test_a_bare_metal_flavor_is_held_to_no_minimum():
    placeholder = {"flavors": {"worker": [1, 512, 0]}}
    _, error = attempt(stack_config("dev"), _cloud(placeholder))
    assert error is not None and 'ocp:workers.flavor: flavor "worker" has 1 vCPUs; a worker needs at least 2' in error
    run, error = attempt(stack_config("dev"), _cloud({**placeholder, "flavorExtraSpecs": {"worker": {"baremetal": "true"}}}))
    assert error is None, error
    assert "openstack:compute/instance:Instance" in cloud_types(run)


# Issue 50, finding 7: floating IPs on a network given without a router of the stack's.
def test_floating_ips_on_a_given_network_without_a_router_to_the_external_network_stop_the_program():
    routed = lambda routers: {**DESCRIBED_NETWORKS, "subnets": [{**each, "routers": routers} if each["id"] == NODES_V4 else each for each in DESCRIBED_NETWORKS["subnets"]]}  # noqa: E731
    config = with_section(stack_config("dev"), "openstack", **GIVEN)
    run, error = attempt(config, _cloud(routed({})))
    assert error is not None and cloud_types(run) == set()
    assert (
        'ocp:openstack.apiFloatingIp, ocp:openstack.ingressFloatingIp: floating IPs on externalNetwork "external" reach a port on '
        'subnet "nodes-v4" only through a router with an interface on that subnet and its gateway on "external", and the subnet has none'
    ) in error
    # A router there whose gateway is on it (the mock cloud's external network's ID: network-external): made.
    run, error = attempt(config, _cloud(routed({"r-1": "network-external"})))
    assert error is None, error
    assert "openstack:networking/floatingIp:FloatingIp" in cloud_types(run)
    # None planned: the bootstrap's, unset, is off on such a network (no floating IP, no SSH source needed).
    bare = with_section(config, "openstack", apiFloatingIp="none", ingressFloatingIp="none", sshAllowedCidr=None)
    run, error = attempt(bare, _cloud(routed({})))
    assert error is None, error
    assert "openstack:networking/floatingIp:FloatingIp" not in cloud_types(run)
