"""Tests for the fake `openshift-install` (tools/sample_installer), through its CLI and its API."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.installer import RELEASE_FILE, InstallerAssets
from tools import sample_installer

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV_CONFIG = (REPO_ROOT / "samples" / "install-config-dev.yaml").read_text()
OTHER_CONFIG = DEV_CONFIG.replace("name: ocp4", "name: lab").replace("osd2019.local", "example.org")
PULL_SECRET = '{"auths":{"fake.example.com":{"auth":"ZmFrZTpmYWtl","email":"fake@example.com"}}}'
CVO_OVERRIDES = "manifests/cvo-overrides.yaml"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return sample_installer.generate(DEV_CONFIG)


@pytest.fixture(scope="module")
def bootstrap(files: dict[str, bytes]) -> dict[str, Any]:
    return json.loads(files["bootstrap.ign"])


def _data(source: str) -> bytes:
    prefix = "data:text/plain;charset=utf-8;base64,"
    assert source.startswith(prefix)
    return base64.b64decode(source[len(prefix) :])


def _file_entry(bootstrap: dict[str, Any], path: str) -> dict[str, Any]:
    matches = [f for f in bootstrap["storage"]["files"] if f["path"] == path]
    assert len(matches) == 1, path
    return matches[0]


def _bootstrap_file(bootstrap: dict[str, Any], path: str) -> bytes:
    return _data(_file_entry(bootstrap, path)["contents"]["source"])


def _pem_der(pem: bytes) -> bytes:
    body = pem.split(b"-----BEGIN CERTIFICATE-----")[1].split(b"-----END CERTIFICATE-----")[0]
    return base64.b64decode(body)


def test_outputs_are_exactly_the_installer_files(files: dict[str, bytes]) -> None:
    assert set(files) == {
        "bootstrap.ign",
        "master.ign",
        "worker.ign",
        "metadata.json",
        "auth/kubeconfig",
        "auth/kubeadmin-password",
    }


def test_generate_is_deterministic(files: dict[str, bytes]) -> None:
    assert sample_installer.generate(DEV_CONFIG) == files


def test_different_configs_differ_in_infra_id_and_pki(files: dict[str, bytes]) -> None:
    other = sample_installer.generate(OTHER_CONFIG)
    ours, theirs = json.loads(files["metadata.json"]), json.loads(other["metadata.json"])
    assert ours["infraID"] != theirs["infraID"]
    assert ours["clusterID"] != theirs["clusterID"]
    ca = json.loads(files["master.ign"])["ignition"]["security"]["tls"]["certificateAuthorities"][0]
    other_ca = json.loads(other["master.ign"])["ignition"]["security"]["tls"]["certificateAuthorities"][0]
    assert ca != other_ca
    assert files["auth/kubeadmin-password"] != other["auth/kubeadmin-password"]
    # Even a one-byte change to the install-config reseeds everything.
    tweaked = sample_installer.generate(DEV_CONFIG + "\n")
    assert json.loads(tweaked["metadata.json"])["infraID"] != ours["infraID"]


def test_metadata_and_password_shapes(files: dict[str, bytes]) -> None:
    metadata = json.loads(files["metadata.json"])
    assert list(metadata) == ["clusterName", "clusterID", "infraID", "featureSet", "customFeatureSet"]
    assert (metadata["featureSet"], metadata["customFeatureSet"]) == ("", None)
    assert metadata["clusterName"] == "ocp4"
    assert re.fullmatch(r"ocp4-[a-z0-9]{5}", metadata["infraID"])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", metadata["clusterID"])
    assert re.fullmatch(rb"[A-Za-z0-9]{5}(-[A-Za-z0-9]{5}){3}", files["auth/kubeadmin-password"])


def test_infra_id_truncates_long_names() -> None:
    config = DEV_CONFIG.replace("name: ocp4", "name: a-very-long-cluster-name-for-testing")
    infra_id = json.loads(sample_installer.generate(config)["metadata.json"])["infraID"]
    assert re.fullmatch(r"a-very-long-cluster-n-[a-z0-9]{5}", infra_id)


def test_bootstrap_size_is_realistic(files: dict[str, bytes]) -> None:
    assert 200_000 <= len(files["bootstrap.ign"]) <= 400_000


@pytest.mark.parametrize("role", ["master", "worker"])
def test_pointer_config(files: dict[str, bytes], role: str) -> None:
    raw = files[f"{role}.ign"]
    assert b" " not in raw and not raw.endswith(b"\n")  # compact, like the installer writes it
    ignition = json.loads(raw)["ignition"]
    assert ignition["version"] == "3.2.0"
    assert ignition["config"]["merge"] == [{"source": f"https://api-int.ocp4.osd2019.local:22623/config/{role}"}]
    (ca,) = ignition["security"]["tls"]["certificateAuthorities"]
    assert _data(ca["source"]).startswith(b"-----BEGIN CERTIFICATE-----\n")


@pytest.mark.parametrize("name", ["bootstrap.ign", "master.ign", "worker.ign"])
def test_ignition_validate_accepts(files: dict[str, bytes], name: str, tmp_path: Path) -> None:
    validator = shutil.which("ignition-validate")
    if validator is None:
        pytest.skip("ignition-validate is not installed (Debian package 'ignition')")
    path = tmp_path / name
    path.write_bytes(files[name])
    result = subprocess.run([validator, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == "", "ignition-validate printed warnings"


def test_bootstrap_carries_pull_secret_ssh_keys_and_units(bootstrap: dict[str, Any]) -> None:
    assert bootstrap["ignition"] == {"version": "3.2.0"}
    assert _bootstrap_file(bootstrap, "/root/.docker/config.json") == PULL_SECRET.encode()
    (user,) = bootstrap["passwd"]["users"]
    assert user["name"] == "core"
    own, installers = user["sshAuthorizedKeys"]
    assert own == yaml.safe_load(DEV_CONFIG)["sshKey"]
    # The installer's own key to reach the bootstrap: a well-formed RSA key line.
    kind, blob = installers.removesuffix("\n").split(" ")
    assert kind == "ssh-rsa" and installers.endswith("\n")
    assert base64.b64decode(blob).startswith(b"\0\0\0\x07ssh-rsa\0\0\0\x03\x01\x00\x01\0\0\x01\x01\0")
    units = {u["name"]: u for u in bootstrap["systemd"]["units"]}
    enabled = {name for name, unit in units.items() if unit.get("enabled")}
    assert {"kubelet.service", "progress.service", "approve-csr.service"} <= enabled
    assert "bootkube.service" in units and "bootkube.service" not in enabled
    assert [d["name"] for d in units["zincati.service"]["dropins"]] == ["okd-machine-os-disabled.conf"]
    paths = [f["path"] for f in bootstrap["storage"]["files"]]
    assert len(paths) == len(set(paths))
    assert all("verification" not in f.get("contents", {}) for f in bootstrap["storage"]["files"])
    assert _file_entry(bootstrap, "/usr/local/bin/bootkube.sh")["mode"] == 0o555
    assert b"FAKE" in _bootstrap_file(bootstrap, "/usr/local/bin/bootkube.sh")
    assert _file_entry(bootstrap, "/opt/openshift/tls/root-ca.crt")["mode"] == 0o644
    assert "/opt/openshift/tls/root-ca.key" not in paths  # the MCS CA secret carries it
    motd = _file_entry(bootstrap, "/etc/motd")
    assert motd["overwrite"] is False and "contents" not in motd and _data(motd["append"][0]["source"])


def test_without_an_ssh_key_the_bootstrap_keeps_an_empty_entry_and_no_machine_configs() -> None:
    config = "\n".join(line for line in DEV_CONFIG.splitlines() if not line.startswith(("sshKey", "  lab@"))) + "\n"
    assert "sshKey" not in config
    files = sample_installer.generate(config)
    own, installers = json.loads(files["bootstrap.ign"])["passwd"]["users"][0]["sshAuthorizedKeys"]
    assert own == "" and installers.startswith("ssh-rsa ")
    assert not [name for name in sample_installer.manifests(config) if "machineconfig" in name]


def test_cluster_names_appear_where_the_installer_puts_them(files: dict[str, bytes], bootstrap: dict[str, Any]) -> None:
    admin = yaml.safe_load(files["auth/kubeconfig"])
    assert admin["clusters"][0]["cluster"]["server"] == "https://api.ocp4.osd2019.local:6443"
    assert admin["users"][0]["name"] == "admin"
    assert set(admin["users"][0]["user"]) == {"client-certificate-data", "client-key-data"}
    internal = yaml.safe_load(_bootstrap_file(bootstrap, "/opt/openshift/auth/kubeconfig"))
    assert internal["clusters"][0]["cluster"]["server"] == "https://api-int.ocp4.osd2019.local:6443"
    infra = yaml.safe_load(_bootstrap_file(bootstrap, "/opt/openshift/manifests/cluster-infrastructure-02-config.yml"))
    assert infra["status"]["infrastructureName"] == json.loads(files["metadata.json"])["infraID"]
    assert infra["status"]["apiServerInternalURI"] == "https://api-int.ocp4.osd2019.local:6443"


def test_machine_config_server_cert_names_only_api_int(bootstrap: dict[str, Any]) -> None:
    der = _pem_der(_bootstrap_file(bootstrap, "/opt/openshift/tls/machine-config-server.crt"))
    assert b"api-int.ocp4.osd2019.local" in der
    assert b"api.ocp4.osd2019.local" not in der
    assert b"FAKE" in der


def test_proxy_and_trust_bundle() -> None:
    config = yaml.safe_load(DEV_CONFIG)
    config["proxy"] = {"httpProxy": "http://proxy.example.com:3128", "noProxy": ".internal"}
    config["additionalTrustBundle"] = "-----BEGIN CERTIFICATE-----\nFAKE\n-----END CERTIFICATE-----\n"
    bootstrap = json.loads(sample_installer.generate(yaml.safe_dump(config))["bootstrap.ign"])
    proxy = yaml.safe_load(_bootstrap_file(bootstrap, "/opt/openshift/manifests/cluster-proxy-01-config.yaml"))
    assert proxy["spec"]["httpProxy"] == "http://proxy.example.com:3128"
    assert proxy["spec"]["trustedCA"]["name"] == "user-ca-bundle"
    assert ".internal" in proxy["status"]["noProxy"].split(",")
    anchor = _bootstrap_file(bootstrap, "/etc/pki/ca-trust/source/anchors/ca.crt")
    assert anchor.decode() == config["additionalTrustBundle"] + "\n"
    no_proxy = proxy["status"]["noProxy"]
    assert _bootstrap_file(bootstrap, "/etc/systemd/system.conf.d/10-default-env.conf").decode() == (
        f'[Manager]\nDefaultEnvironment=HTTP_PROXY="http://proxy.example.com:3128"\nDefaultEnvironment=NO_PROXY="{no_proxy}"\n'
    )
    assert _bootstrap_file(bootstrap, "/etc/profile.d/proxy.sh").decode() == (
        f'export HTTP_PROXY="http://proxy.example.com:3128"\nexport NO_PROXY="{no_proxy}"\n'
    )


def test_without_proxy_bundle_or_mirrors_their_files_are_empty(bootstrap: dict[str, Any]) -> None:
    assert _bootstrap_file(bootstrap, "/etc/pki/ca-trust/source/anchors/ca.crt") == b""
    assert _bootstrap_file(bootstrap, "/etc/profile.d/proxy.sh") == b""
    assert _bootstrap_file(bootstrap, "/etc/systemd/system.conf.d/10-default-env.conf") == b"[Manager]\n"
    assert _bootstrap_file(bootstrap, "/etc/containers/registries.conf") == b""


def test_mirrors_reach_registries_conf() -> None:
    config = yaml.safe_load(DEV_CONFIG)
    config["imageDigestSources"] = [{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.lab/ocp/release"]}]
    bootstrap = json.loads(sample_installer.generate(yaml.safe_dump(config))["bootstrap.ign"])
    conf = _bootstrap_file(bootstrap, "/etc/containers/registries.conf").decode()
    assert 'location = "quay.io/openshift-release-dev/ocp-release"' in conf and 'location = "mirror.lab/ocp/release"' in conf


def test_feature_set_reaches_metadata_and_the_feature_gate() -> None:
    config = DEV_CONFIG + "featureSet: TechPreviewNoUpgrade\n"
    metadata = json.loads(sample_installer.generate(config)["metadata.json"])
    assert metadata["featureSet"] == "TechPreviewNoUpgrade"
    gate = yaml.safe_load(sample_installer.manifests(config)["openshift/99_feature-gate.yaml"])
    assert (gate["kind"], gate["spec"]) == ("FeatureGate", {"featureSet": "TechPreviewNoUpgrade"})
    assert yaml.safe_load(sample_installer.manifests(DEV_CONFIG)["openshift/99_feature-gate.yaml"])["spec"] == {}


@pytest.mark.parametrize(
    "config",
    [
        "baseDomain: example.com\n",
        "metadata:\n  name: x\n",
        "- not a mapping\n",
        "metadata: {name: x}\nbaseDomain: example.com\npullSecret: 'not json'\n",
        "metadata: {name: x}\nbaseDomain: example.com\nnetworking: {machineNetwork: [{cidr: 10.0.0.0/99}]}\n",
        "metadata: {name: x}\nbaseDomain: example.com\nnetworking: {clusterNetwork: [{hostPrefix: 23}]}\n",
    ],
)
def test_invalid_install_config_raises_value_error(config: str) -> None:
    with pytest.raises(ValueError):
        sample_installer.generate(config)


def test_generate_is_fast() -> None:
    timings = []
    # CPU time, not wall time: what the fake costs each plan, whatever else the machine runs.
    for _ in range(5):
        start = time.process_time()
        sample_installer.generate(DEV_CONFIG)
        timings.append(time.process_time() - start)
    assert min(timings) < 0.05


def test_cli_consumes_install_config(tmp_path: Path) -> None:
    (tmp_path / "install-config.yaml").write_text(DEV_CONFIG)
    assert sample_installer.main(["create", "ignition-configs", "--dir", str(tmp_path)]) == 0
    assert not (tmp_path / "install-config.yaml").exists()
    assert json.loads((tmp_path / ".openshift_install_state.json").read_text()) == {"install-config": DEV_CONFIG}
    for name, content in sample_installer.generate(DEV_CONFIG).items():
        assert (tmp_path / name).read_bytes() == content


def test_cli_write_samples_keeps_install_config(tmp_path: Path) -> None:
    source = tmp_path / "ic.yaml"
    source.write_text(DEV_CONFIG)
    out = tmp_path / "out"
    assert sample_installer.main(["write-samples", "--out", str(out), "--install-config", str(source)]) == 0
    assert source.read_text() == DEV_CONFIG
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(
        [*sample_installer.OUTPUT_FILES, RELEASE_FILE]
    )
    assert json.loads((out / RELEASE_FILE).read_text()) == sample_installer.release_images()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["create"],
        ["create", "manifests"],
        ["destroy", "cluster"],
        ["write-samples", "--out", "x"],
    ],
)
def test_cli_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert sample_installer.main(argv) == 2
    assert capsys.readouterr().err


def test_cli_missing_or_invalid_install_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sample_installer.main(["create", "ignition-configs", "--dir", str(tmp_path)]) == 2
    assert "install-config" in capsys.readouterr().err
    (tmp_path / "install-config.yaml").write_text("baseDomain: example.com\n")
    assert sample_installer.main(["create", "ignition-configs", "--dir", str(tmp_path)]) == 2
    assert "metadata.name" in capsys.readouterr().err
    assert (tmp_path / "install-config.yaml").exists()  # not consumed on failure


def test_module_entry_point(tmp_path: Path) -> None:
    (tmp_path / "install-config.yaml").write_text(DEV_CONFIG)
    command = [sys.executable, "-m", "tools.sample_installer", "create", "ignition-configs", "--dir", str(tmp_path)]
    ok = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "bootstrap.ign").is_file()
    bad = subprocess.run(command[:3], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and bad.stderr


def test_committed_samples_are_current() -> None:
    sample_dir = REPO_ROOT / "samples" / "installer" / "ocp4"
    for name, content in sample_installer.generate(DEV_CONFIG).items():
        assert (sample_dir / name).read_bytes() == content, f"regenerate {name} with write-samples"
    release = json.loads((sample_dir / RELEASE_FILE).read_text())
    assert release == sample_installer.release_images(), f"regenerate {RELEASE_FILE} with write-samples"


def test_version_names_the_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert sample_installer.main(["version"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith(f"openshift-install {sample_installer.INSTALLER_VERSION} ")
    assert second == f"release image {sample_installer.release_images()['release']}"


OPENSTACK_CONFIG = DEV_CONFIG.replace(
    "platform:\n  none: {}\n",
    "platform:\n  openstack:\n    cloud: mycloud\n    apiVIPs: [10.0.0.5]\n    ingressVIPs: [10.0.0.7]\n    externalNetwork: external\n"
    "    defaultMachinePlatform:\n      type: m1.xlarge\n",
)
DEFAULT_POOL = "    defaultMachinePlatform:\n      type: m1.xlarge\n"
SAMPLES = REPO_ROOT / "samples" / "installer" / "ocp4"
# What the run script deletes in integrated mode (install_upi.md for OpenStack).
UPI_DELETED = (
    "openshift/99_openshift-cluster-api_master-machines-*.yaml",
    "openshift/99_openshift-cluster-api_worker-machineset-*.yaml",
    "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
)


def _bootstrap_manifests(files: dict[str, bytes], handed_over: bool = True) -> dict[str, bytes]:
    """The bootstrap config's /opt/openshift/{manifests,openshift}/*, by path relative to
    /opt/openshift; handed_over: without cvo-overrides.yaml, which `create ignition-configs` reworks."""
    found = {
        entry["path"].removeprefix("/opt/openshift/"): _data(entry["contents"]["source"])
        for entry in json.loads(files["bootstrap.ign"])["storage"]["files"]
        if entry["path"].startswith(("/opt/openshift/manifests/", "/opt/openshift/openshift/"))
    }
    if handed_over:
        found.pop(CVO_OVERRIDES)
    return found


def _without_cvo(manifests: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in manifests.items() if name != CVO_OVERRIDES}


def _overridden(files: dict[str, bytes]) -> list[tuple[str, str, str, str]]:
    """(group, kind, namespace, name) of the bootstrap's ClusterVersion overrides."""
    version = yaml.safe_load(_bootstrap_manifests(files, handed_over=False)[CVO_OVERRIDES])
    assert all(entry["unmanaged"] is True for entry in version["spec"]["overrides"])
    return [(e["group"], e["kind"], e["namespace"], e["name"]) for e in version["spec"]["overrides"]]


def _dir_files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def _san(der: bytes, tag: int, value: bytes) -> bool:
    """Whether a certificate carries this subjectAltName entry (0x82 dNSName, 0x87 iPAddress)."""
    return bytes([tag, len(value)]) + value in der


def _mcs_cert(files: dict[str, bytes]) -> bytes:
    return _pem_der(_bootstrap_file(json.loads(files["bootstrap.ign"]), "/opt/openshift/tls/machine-config-server.crt"))


@pytest.fixture(scope="module")
def openstack_manifests() -> dict[str, bytes]:
    return sample_installer.manifests(OPENSTACK_CONFIG)


def test_platform_none_manifests_are_the_bootstrap_manifests_of_the_samples() -> None:
    found = sample_installer.manifests(DEV_CONFIG)
    samples = {"bootstrap.ign": (SAMPLES / "bootstrap.ign").read_bytes()}
    assert _without_cvo(found) == _bootstrap_manifests(samples)
    assert all(name.startswith(("manifests/", "openshift/")) for name in found)
    assert sample_installer.manifests(DEV_CONFIG) == found  # deterministic
    # The program reads the install-config back from the bootstrap config, pull secret emptied.
    carried = InstallerAssets.from_files(sample_installer.generate(DEV_CONFIG)).install_config
    expected = yaml.safe_load(DEV_CONFIG)
    assert carried["pullSecret"] == "" and carried["metadata"]["name"] == expected["metadata"]["name"]
    assert carried["networking"] == expected["networking"] and carried["sshKey"] == expected["sshKey"]


def test_the_bootstrap_cvo_overrides_leave_every_handed_over_manifest_to_the_installer() -> None:
    files = sample_installer.generate(DEV_CONFIG)
    manifests = sample_installer.manifests(DEV_CONFIG)
    overridden = _overridden(files)
    # Every manifest but cvo-overrides itself and the machine assets' files (user data, MachineConfigs).
    expected_files = [
        name for name in sorted(manifests, key=lambda n: (not n.startswith("manifests/"), n))
        if name != CVO_OVERRIDES and "user-data-secret" not in name and "machineconfig" not in name
    ]

    def identity(name: str) -> tuple[str, str, str, str]:
        document = yaml.safe_load(manifests[name])
        meta = document["metadata"]
        return document["apiVersion"].rpartition("/")[0], document["kind"], meta.get("namespace", ""), meta["name"]

    assert overridden == [identity(name) for name in expected_files]
    assert ("", "Secret", "openshift-config", "pull-secret") in overridden
    assert ("config.openshift.io", "FeatureGate", "", "cluster") in overridden
    patch = _bootstrap_file(json.loads(files["bootstrap.ign"]), "/opt/openshift/original_cvo_overrides.patch")
    assert json.loads(patch) == {"spec": {"overrides": None}}


def test_the_users_own_cvo_overrides_are_kept_and_restorable() -> None:
    manifests = sample_installer.manifests(DEV_CONFIG)
    version = yaml.safe_load(manifests[CVO_OVERRIDES])
    own = {"group": "apps", "kind": "Deployment", "name": "x", "namespace": "y", "unmanaged": True}
    version["spec"]["overrides"] = [own]
    manifests[CVO_OVERRIDES] = yaml.safe_dump(version).encode()
    files = sample_installer.ignition_configs(DEV_CONFIG, manifests)
    assert _overridden(files)[-1] == ("apps", "Deployment", "y", "x")
    patch = _bootstrap_file(json.loads(files["bootstrap.ign"]), "/opt/openshift/original_cvo_overrides.patch")
    assert json.loads(patch) == {"spec": {"overrides": [own]}}


def test_platform_none_two_steps_on_the_cli_give_the_committed_samples(tmp_path: Path) -> None:
    (tmp_path / "install-config.yaml").write_text(DEV_CONFIG)
    assert sample_installer.main(["create", "manifests", "--dir", str(tmp_path)]) == 0
    written = _dir_files(tmp_path)
    assert not (tmp_path / "install-config.yaml").exists()
    assert json.loads(written.pop(".openshift_install_state.json")) == {"install-config": DEV_CONFIG}
    assert written == sample_installer.manifests(DEV_CONFIG)
    assert sample_installer.main(["create", "ignition-configs", "--dir", str(tmp_path)]) == 0
    for name in sample_installer.OUTPUT_FILES:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name
    # Like the installer, the step consumed the manifests it read.
    assert not (tmp_path / "manifests").exists() and not (tmp_path / "openshift").exists()


def test_openstack_manifests_are_the_installers_files(openstack_manifests: dict[str, bytes]) -> None:
    expected = {
        *(f"openshift/99_openshift-cluster-api_master-machines-{i}.yaml" for i in range(3)),
        "openshift/99_openshift-cluster-api_worker-machineset-0.yaml",
        "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
        "openshift/99_cloud-creds-secret.yaml",
        "openshift/99_role-cloud-creds-secret-reader.yaml",
        "manifests/cloud-provider-config.yaml",
    }
    assert set(openstack_manifests) == set(sample_installer.manifests(DEV_CONFIG)) | expected
    machine = yaml.safe_load(openstack_manifests["openshift/99_openshift-cluster-api_master-machines-2.yaml"])
    infra_id = json.loads(sample_installer.generate(OPENSTACK_CONFIG)["metadata.json"])["infraID"]
    assert (machine["kind"], machine["metadata"]["name"]) == ("Machine", f"{infra_id}-master-2")
    provider = machine["spec"]["providerSpec"]["value"]
    assert provider["serverGroupName"] == provider["securityGroups"][0]["name"] == f"{infra_id}-master"
    assert provider["userDataSecret"] == {"name": "master-user-data"}
    machine_set = yaml.safe_load(openstack_manifests["openshift/99_openshift-cluster-api_worker-machineset-0.yaml"])
    assert machine_set["kind"] == "MachineSet" and machine_set["spec"]["replicas"] == 0
    cpms = yaml.safe_load(openstack_manifests["openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml"])
    assert cpms["kind"] == "ControlPlaneMachineSet" and cpms["spec"]["replicas"] == 3
    assert all(b"&id" not in data and b"*id" not in data for data in openstack_manifests.values())  # no YAML anchors


def test_openstack_infrastructure_scheduler_and_cloud_provider_config(openstack_manifests: dict[str, bytes]) -> None:
    infrastructure = yaml.safe_load(openstack_manifests["manifests/cluster-infrastructure-02-config.yml"])
    assert infrastructure["spec"]["cloudConfig"] == {"key": "config", "name": "cloud-provider-config"}
    assert infrastructure["spec"]["platformSpec"]["type"] == infrastructure["status"]["platform"] == "OpenStack"
    status = infrastructure["status"]["platformStatus"]["openstack"]
    assert (status["apiServerInternalIPs"], status["ingressIPs"]) == (["10.0.0.5"], ["10.0.0.7"])
    assert (status["apiServerInternalIP"], status["ingressIP"]) == ("10.0.0.5", "10.0.0.7")
    assert status["loadBalancer"] == {"type": "OpenShiftManagedDefault"}  # the MCO runs keepalived/haproxy/CoreDNS
    scheduler = yaml.safe_load(openstack_manifests["manifests/cluster-scheduler-02-config.yml"])
    assert scheduler["spec"]["mastersSchedulable"] is True  # compute replicas 0
    with_workers = OPENSTACK_CONFIG.replace("  name: worker\n  replicas: 0\n", "  name: worker\n  replicas: 2\n")
    assert with_workers != OPENSTACK_CONFIG
    scheduler = yaml.safe_load(sample_installer.manifests(with_workers)["manifests/cluster-scheduler-02-config.yml"])
    assert scheduler["spec"]["mastersSchedulable"] is False
    provider = yaml.safe_load(openstack_manifests["manifests/cloud-provider-config.yaml"])
    assert provider["metadata"] == {"creationTimestamp": None, "name": "cloud-provider-config", "namespace": "openshift-config"}
    config = provider["data"]["config"]
    assert "secret-name = openstack-credentials\nsecret-namespace = kube-system\n" in config
    assert re.search(r"\[LoadBalancer\]\nfloating-network-id = [0-9a-f-]{36}\n", config)


def test_openstack_fake_clouds_yaml_reaches_the_bootstrap_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real clouds.yaml where the installer would look: the fake must never read it.
    (tmp_path / ".config" / "openstack").mkdir(parents=True)
    (tmp_path / ".config" / "openstack" / "clouds.yaml").write_text("clouds:\n  mycloud:\n    auth:\n      password: REAL-SECRET\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OS_CLOUD", "mycloud")
    monkeypatch.chdir(tmp_path)
    files = sample_installer.generate(OPENSTACK_CONFIG)
    secret = yaml.safe_load(_bootstrap_manifests(files)["openshift/99_cloud-creds-secret.yaml"])
    assert (secret["kind"], secret["metadata"]["name"], secret["metadata"]["namespace"]) == ("Secret", "openstack-credentials", "kube-system")
    clouds_text = base64.b64decode(secret["data"]["clouds.yaml"]).decode()
    assert clouds_text.startswith("# FAKE ") and '"mycloud"' in clouds_text.splitlines()[0]
    (entry,) = yaml.safe_load(clouds_text)["clouds"].values()
    assert entry["auth"]["auth_url"].startswith("https://keystone.fake.invalid")
    assert b"REAL-SECRET" not in files["bootstrap.ign"]


def test_openstack_cli_deleted_and_edited_manifests_reach_the_bootstrap_config_as_left(tmp_path: Path) -> None:
    (tmp_path / "install-config.yaml").write_text(OPENSTACK_CONFIG)
    assert sample_installer.main(["create", "manifests", "--dir", str(tmp_path)]) == 0
    assert not (tmp_path / "install-config.yaml").exists()
    assert _dir_files(tmp_path).keys() - {".openshift_install_state.json"} == sample_installer.manifests(OPENSTACK_CONFIG).keys()
    deleted = [p for pattern in UPI_DELETED for p in tmp_path.glob(pattern)]
    assert len(deleted) == 5
    for path in deleted:
        path.unlink()
    scheduler = tmp_path / "manifests" / "cluster-scheduler-02-config.yml"
    edited = scheduler.read_bytes().replace(b"mastersSchedulable: true", b"mastersSchedulable: false")
    assert edited != scheduler.read_bytes()
    scheduler.write_bytes(edited)
    (tmp_path / "openshift" / "99_extra.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "openshift" / "notes.txt").write_text("the installer ignores this\n")
    left = {name: data for name, data in _dir_files(tmp_path).items() if name.endswith((".yaml", ".yml"))}

    assert sample_installer.main(["create", "ignition-configs", "--dir", str(tmp_path)]) == 0
    files = {name: (tmp_path / name).read_bytes() for name in sample_installer.OUTPUT_FILES}
    assert _bootstrap_manifests(files) == _without_cvo(left)
    assert files == sample_installer.ignition_configs(OPENSTACK_CONFIG, left)
    overridden = _overridden(files)
    assert ("", "ConfigMap", "", "") in overridden  # the added 99_extra.yaml, as the installer lists it
    assert ("", "Secret", "kube-system", "openstack-credentials") in overridden
    assert not [entry for entry in overridden if entry[1] in ("Machine", "MachineSet", "ControlPlaneMachineSet")]
    assert not (tmp_path / "manifests").exists() and sorted(p.name for p in (tmp_path / "openshift").iterdir()) == ["notes.txt"]


def test_openstack_pointers_fetch_from_the_api_vip_and_the_mcs_certificate_names_it() -> None:
    files = sample_installer.generate(OPENSTACK_CONFIG)
    manifests = _bootstrap_manifests(files)
    for role in ("master", "worker"):
        pointer = json.loads(files[f"{role}.ign"])
        assert pointer["ignition"]["config"]["merge"] == [{"source": f"https://10.0.0.5:22623/config/{role}"}]
        secret = yaml.safe_load(manifests[f"openshift/99_openshift-cluster-api_{role}-user-data-secret.yaml"])
        assert base64.b64decode(secret["data"]["userData"]) == files[f"{role}.ign"]  # what MachineSets boot with
    der = _mcs_cert(files)
    assert _san(der, 0x87, bytes([10, 0, 0, 5])) and _san(der, 0x82, b"10.0.0.5")
    assert _san(der, 0x82, b"api-int.ocp4.osd2019.local")
    assert not _san(_mcs_cert(sample_installer.generate(DEV_CONFIG)), 0x87, bytes([10, 0, 0, 5]))


def test_openstack_ipv6_vip_is_bracketed_in_the_pointer() -> None:
    config = OPENSTACK_CONFIG.replace("apiVIPs: [10.0.0.5]", "apiVIPs: ['fd00::5']")
    files = sample_installer.generate(config)
    assert json.loads(files["master.ign"])["ignition"]["config"]["merge"] == [{"source": "https://[fd00::5]:22623/config/master"}]
    assert _san(_mcs_cert(files), 0x87, bytes.fromhex("fd000000000000000000000000000005"))


def test_openstack_metadata_and_default_cloud() -> None:
    metadata = json.loads(sample_installer.generate(OPENSTACK_CONFIG)["metadata.json"])
    assert list(metadata) == ["clusterName", "clusterID", "infraID", "openstack", "featureSet", "customFeatureSet"]
    assert metadata["openstack"] == {"cloud": "mycloud", "identifier": {"openshiftClusterID": metadata["infraID"]}}
    without_cloud = OPENSTACK_CONFIG.replace("    cloud: mycloud\n", "")
    assert json.loads(sample_installer.generate(without_cloud)["metadata.json"])["openstack"]["cloud"] == "openstack"


def test_openstack_api_is_two_steps_and_deterministic(openstack_manifests: dict[str, bytes]) -> None:
    assert sample_installer.manifests(OPENSTACK_CONFIG) == openstack_manifests
    files = sample_installer.generate(OPENSTACK_CONFIG)
    assert files == sample_installer.ignition_configs(OPENSTACK_CONFIG, openstack_manifests)
    assert files == sample_installer.generate(OPENSTACK_CONFIG)
    kept = {k: v for k, v in openstack_manifests.items() if "master-machines" not in k}
    assert _bootstrap_manifests(sample_installer.ignition_configs(OPENSTACK_CONFIG, kept)) == _without_cvo(kept)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("apiVIPs: [10.0.0.5]", "apiVIP: 10.0.0.5", "apiVIP is deprecated"),
        ("ingressVIPs: [10.0.0.7]", "ingressVIP: 10.0.0.7", "ingressVIP is deprecated"),
        ("apiVIPs: [10.0.0.5]", "apiVIPs: [10.0.0.5]\n    apiVIP: 10.0.0.5", "apiVIP is deprecated"),
        ("apiVIPs: [10.0.0.5]", "", "apiVIPs is required"),
        ("apiVIPs: [10.0.0.5]", "apiVIPs: [10.0.0.7]", "must differ"),
        ("apiVIPs: [10.0.0.5]", "apiVIPs: [10.0.0.500]", "apiVIPs"),
        # Every pool needs a flavor, the 0-replica compute pool too.
        (DEFAULT_POOL, "", "controlPlane.platform.openstack.type: Required value: Flavor name must be provided"),
        (DEFAULT_POOL, DEFAULT_POOL + "      rootVolume:\n        size: 100\n", "Volume type must be specified to use root volumes"),
    ],
)
def test_openstack_invalid_vips(old: str, new: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = OPENSTACK_CONFIG.replace(old, new)
    assert config != OPENSTACK_CONFIG
    with pytest.raises(ValueError, match=message):
        sample_installer.manifests(config)
    (tmp_path / "install-config.yaml").write_text(config)
    assert sample_installer.main(["create", "manifests", "--dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert (tmp_path / "install-config.yaml").exists()


def test_the_sample_install_config_is_what_the_program_renders():
    from cluster.addresses import plan_addresses
    from cluster.config import load_config
    from cluster.installer import render_install_config
    from tests.conftest import stack_config
    from tools.plan import SAMPLE_PULL_SECRET

    config = load_config({**stack_config("standalone"), "ocp:pullSecret": SAMPLE_PULL_SECRET})
    rendered = render_install_config(config, plan_addresses(config), SAMPLE_PULL_SECRET)
    assert "\n".join(line for line in DEV_CONFIG.splitlines() if not line.startswith("#")) + "\n" == rendered
