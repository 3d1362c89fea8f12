"""etcd on a local disk (ocp:masters.etcdDisk, ignition/etcd_disk.py): the masters' MachineConfig reaches the
bootstrap's manifests in both modes (standalone through the real installer), its Ignition config passes
`ignition-validate` and its units `systemd-analyze verify`; the masters boot from their root volume with a
blank local disk as the CPMS's Local block device is made; the bootstrap and the workers get none.

What reads them we cannot run here: the MCO renders the MachineConfig into the masters' config (it takes
Ignition spec 3.2.0 in a MachineConfig on 4.14+, as ignition/chrony.py's do); Nova's libvirt driver formats
a server's first ephemeral disk and labels it `ephemeral0` (what openshift-docs' guide,
modules/installation-osp-local-disk-deployment.adoc, mounts from); cluster-api-provider-openstack v0.11
(pkg/cloud/services/compute/instance.go) makes a Local additional block device as source blank, destination
local, boot index -1, deleted on termination, its size in GiB."""

from __future__ import annotations

import json
import shutil
import subprocess

import pulumi
import pytest
import yaml

from cluster.dataurl import file_contents
from ignition import etcd_disk
from tests.components.test_preflight import NOT_CLOUD
from tests.conftest import ignition_validate, stack_config, with_section
from tools import mock_cloud, real_installer, toolchain
from tools.mock_run import ProgramRun, run_program, unwrap
from tools.plan import node_outputs

FLAVOR = "master.etcd"


def cloud_with_an_etcd_flavor() -> dict:
    """samples/cloud/dev.yaml with a diskless flavor of 15 GiB ephemeral disk, as the guide's `openstack flavor create`."""
    description = mock_cloud.load()
    description["flavors"][FLAVOR] = [4, 16384, 0, 15]
    return description


def with_etcd_disk(config: dict[str, str], **disk) -> dict[str, str]:
    return with_section(config, "masters", flavor=FLAVOR, rootVolume={"size": 100, "type": "ssd"}, etcdDisk=disk)


@pytest.fixture(scope="module")
def dev_etcd():
    return run_program(with_etcd_disk(stack_config("dev")), cloud=cloud_with_an_etcd_flavor())


def _added_manifests(program_run) -> dict[str, bytes]:
    bootstrap = next(node for node in node_outputs(program_run) if node.hostname.endswith("-bootstrap"))
    prefix = "/opt/openshift/openshift/"
    return {entry["path"].removeprefix(prefix): file_contents(entry) for entry in bootstrap.ignition["storage"]["files"] if entry["path"].startswith(prefix)}


@pytest.mark.parametrize("stack", ["dev", "standalone"])
def test_the_bootstrap_applies_the_masters_etcd_machine_config(stack, dev_etcd):
    if stack == "standalone" and real_installer.binary() is None:
        pytest.skip(toolchain.missing("openshift-install"))
    program_run = dev_etcd if stack == "dev" else run_program(with_etcd_disk(stack_config(stack)), stack=stack, cloud=cloud_with_an_etcd_flavor())
    added = _added_manifests(program_run)
    document = yaml.safe_load(added[etcd_disk.MANIFEST])
    assert document == etcd_disk.machine_config()
    assert (document["kind"], document["metadata"]["name"]) == ("MachineConfig", "98-var-lib-etcd")
    assert document["metadata"]["labels"] == {"machineconfiguration.openshift.io/role": "master"}
    units = {unit["name"]: unit for unit in document["spec"]["config"]["systemd"]["units"]}
    assert sorted(units) == ["create-local-etcd.service", "relabel-var-lib-etcd.service", "var-lib-etcd.mount"]
    assert all(unit["enabled"] for unit in units.values())
    mount = units["var-lib-etcd.mount"]["contents"]
    assert "What=/dev/disk/by-label/local-etcd\n" in mount and "Where=/var/lib/etcd\n" in mount and "Type=xfs\n" in mount
    create = units["create-local-etcd.service"]["contents"]
    assert "/usr/sbin/mkfs.xfs -f -L local-etcd /dev/disk/by-label/ephemeral0" in create
    assert "ConditionPathIsSymbolicLink=!/dev/disk/by-label/local-etcd" in create  # never formats an existing etcd disk


def test_without_the_key_no_machine_config_and_no_local_disk():
    program_run = run_program(stack_config("dev"))
    assert etcd_disk.MANIFEST not in _added_manifests(program_run)
    for server in program_run.of_type("openstack:compute/instance:Instance"):
        assert not [d for d in unwrap(server.inputs).get("blockDevices") or () if d.get("destinationType") == "local"], server.name


def test_the_machine_configs_ignition_is_valid(tmp_path):
    config = etcd_disk.machine_config()["spec"]["config"]
    result = ignition_validate(json.dumps(config), tmp_path)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr


def test_systemd_takes_the_units(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian package 'systemd')")
    missing = [tool for tool in ("/usr/sbin/mkfs.xfs", "/usr/sbin/restorecon") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian packages xfsprogs, policycoreutils; .ci/run installs them)")
    paths = []
    for name, contents in etcd_disk.UNITS.items():
        (tmp_path / name).write_text(contents)
        paths.append(str(tmp_path / name))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", *paths], capture_output=True, text=True, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert not [line for line in said.splitlines() if any(name in line for name in etcd_disk.UNITS)], said


def test_the_masters_boot_from_their_volume_with_a_local_disk_for_etcd(dev_etcd):
    servers = {server.name: unwrap(server.inputs) for server in dev_etcd.of_type("openstack:compute/instance:Instance")}
    masters = {name: inputs for name, inputs in servers.items() if "-control-plane-" in name}
    assert len(masters) == 3
    for name, inputs in masters.items():
        root, local = inputs["blockDevices"]
        assert (root["sourceType"], root["destinationType"], root["bootIndex"], root["volumeSize"]) == ("image", "volume", 0, 100), name
        assert local == {"sourceType": "blank", "destinationType": "local", "volumeSize": 10, "bootIndex": -1, "deleteOnTermination": True}, name
        assert inputs["flavorName"] == FLAVOR
    others = {name: inputs for name, inputs in servers.items() if name not in masters}
    assert any(name.endswith("-bootstrap-node") for name in others)
    for name, inputs in others.items():  # the bootstrap (on the masters' root volume) and the workers
        assert not [d for d in inputs.get("blockDevices") or () if d.get("destinationType") == "local"], name


def test_a_larger_disk_takes_its_size_within_the_flavors_ephemeral_disk():
    program_run = run_program(with_etcd_disk(stack_config("dev"), size=12), cloud=cloud_with_an_etcd_flavor())
    (master, *_) = [unwrap(s.inputs) for s in program_run.of_type("openstack:compute/instance:Instance") if "-control-plane-" in s.name]
    assert master["blockDevices"][1]["volumeSize"] == 12


@pytest.mark.parametrize(("flavor", "size", "has"), [(FLAVOR, 20, "an ephemeral disk of 15 GiB"), ("master", 10, "no ephemeral disk")])
def test_the_preflight_refuses_a_flavor_without_room_for_it(flavor, size, has):
    """Nova's flavor (OS-FLV-EXT-DATA:ephemeral, read by cluster/cloud_probe.py) must hold the disk: refused before
    any cloud resource, naming the key."""
    config = with_section(with_etcd_disk(stack_config("dev"), size=size), "masters", flavor=flavor)
    recorded = ProgramRun()
    with pytest.raises(pulumi.RunError) as raised:
        run_program(config, cloud=cloud_with_an_etcd_flavor(), into=recorded)
    message = str(raised.value)
    assert f'ocp:masters.etcdDisk.size: {size} GiB, but flavor "{flavor}" (ocp:masters.flavor) has {has}' in message, message
    assert f"openstack flavor create --ephemeral {size}" in message
    assert {r.type for r in recorded.resources if r.custom} - NOT_CLOUD == set()


def test_a_cloud_description_carries_a_flavors_ephemeral_disk_as_a_fourth_number(tmp_path):
    """What tools.describe_cloud writes of such a flavor loads (tests/localcloud/test_preflight_networks.py describes
    one of the local cloud's); five numbers do not."""
    description = cloud_with_an_etcd_flavor()
    path = tmp_path / "cloud.yaml"
    path.write_text(yaml.safe_dump(description))
    assert mock_cloud.read(path)["flavors"][FLAVOR] == [4, 16384, 0, 15]
    description["flavors"][FLAVOR] = [4, 16384, 0, 15, 1]
    path.write_text(yaml.safe_dump(description))
    with pytest.raises(mock_cloud.DescriptionError, match=f"flavors.{FLAVOR}: Tuple should have at most 4 items"):
        mock_cloud.read(path)
