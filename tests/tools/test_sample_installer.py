"""Tests for the fake `openshift-install create ignition-configs` in tools/sample_installer.py."""

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

from tools import sample_installer

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV_CONFIG = (REPO_ROOT / "samples" / "install-config-dev.yaml").read_text()
OTHER_CONFIG = DEV_CONFIG.replace("name: ocp4", "name: lab").replace("osd2019.local", "example.org")
PULL_SECRET = '{"auths":{"fake.example.com":{"auth":"ZmFrZTpmYWtl","email":"fake@example.com"}}}'


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


def _bootstrap_file(bootstrap: dict[str, Any], path: str) -> bytes:
    matches = [f for f in bootstrap["storage"]["files"] if f["path"] == path]
    assert len(matches) == 1, path
    return _data(matches[0]["contents"]["source"])


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
    assert list(metadata) == ["clusterName", "clusterID", "infraID"]
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


def test_bootstrap_carries_pull_secret_ssh_key_and_units(bootstrap: dict[str, Any]) -> None:
    assert _bootstrap_file(bootstrap, "/root/.docker/config.json") == PULL_SECRET.encode()
    (user,) = bootstrap["passwd"]["users"]
    assert user["name"] == "core"
    assert user["sshAuthorizedKeys"][0].startswith("ssh-ed25519 ")
    enabled = {u["name"] for u in bootstrap["systemd"]["units"] if u.get("enabled")}
    assert {"kubelet.service", "progress.service", "approve-csr.service"} <= enabled
    assert "bootkube.service" in {u["name"] for u in bootstrap["systemd"]["units"]}
    paths = [f["path"] for f in bootstrap["storage"]["files"]]
    assert len(paths) == len(set(paths))
    assert sum(p.startswith("/opt/openshift/tls/") for p in paths) >= 24
    assert sum(p.startswith("/opt/openshift/manifests/") for p in paths) >= 24


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
    assert anchor.decode() == config["additionalTrustBundle"]


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
    for _ in range(5):
        start = time.perf_counter()
        sample_installer.generate(DEV_CONFIG)
        timings.append(time.perf_counter() - start)
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
        sample_installer.OUTPUT_FILES
    )


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


OPENSTACK_CONFIG = DEV_CONFIG.replace(
    "platform:\n  none: {}\n",
    "platform:\n  openstack:\n    cloud: openstack\n    apiVIPs: [10.0.0.5]\n    ingressVIPs: [10.0.0.7]\n    externalNetwork: external\n",
)


def bootstrap_paths(files: dict[str, bytes]) -> set[str]:
    return {entry["path"] for entry in json.loads(files["bootstrap.ign"])["storage"]["files"]}


def test_openstack_manifests_carry_the_machines_a_upi_install_deletes():
    assert OPENSTACK_CONFIG != DEV_CONFIG
    found = sample_installer.manifests(OPENSTACK_CONFIG)
    assert {f"openshift/99_openshift-cluster-api_master-machines-{i}.yaml" for i in range(3)} <= set(found)
    assert {"openshift/99_openshift-cluster-api_worker-machineset-0.yaml", "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
            "openshift/99_cloud-creds-secret.yaml", "manifests/cloud-provider-config.yaml"} <= set(found)
    infrastructure = yaml.safe_load(found["manifests/cluster-infrastructure-02-config.yml"])
    assert infrastructure["status"]["platformStatus"]["openstack"]["apiServerInternalIPs"] == ["10.0.0.5"]
    assert sample_installer.generate(OPENSTACK_CONFIG) == sample_installer.ignition_configs(OPENSTACK_CONFIG, found)


def test_openstack_cli_manifests_then_deletions_then_ignition_configs(tmp_path: Path) -> None:
    (tmp_path / "install-config.yaml").write_text(OPENSTACK_CONFIG)
    assert sample_installer.main(["create", "manifests", "--dir", str(tmp_path)]) == 0
    assert not (tmp_path / "install-config.yaml").exists()
    for path in (tmp_path / "openshift").glob("99_openshift-cluster-api_master-machines-*.yaml"):
        path.unlink()
    assert sample_installer.main(["create", "ignition-configs", "--dir", str(tmp_path)]) == 0
    files = {name: (tmp_path / name).read_bytes() for name in sample_installer.OUTPUT_FILES}
    paths = bootstrap_paths(files)
    assert not any("master-machines" in p for p in paths)
    assert "/opt/openshift/openshift/99_openshift-cluster-api_worker-machineset-0.yaml" in paths
    assert "/opt/openshift/openshift/99_cloud-creds-secret.yaml" in paths  # the bootstrap config holds the credentials
    pointer = json.loads(files["master.ign"])
    assert pointer["ignition"]["config"]["merge"] == [{"source": "https://10.0.0.5:22623/config/master"}]
    metadata = json.loads(files["metadata.json"])
    assert metadata["openstack"]["identifier"] == {"openshiftClusterID": metadata["infraID"]}


def test_openstack_rejects_the_deprecated_singular_vips():
    with pytest.raises(ValueError, match="deprecated"):
        sample_installer.generate(OPENSTACK_CONFIG.replace("apiVIPs: [10.0.0.5]", "apiVIP: 10.0.0.5"))


def test_openstack_mcs_certificate_names_the_api_vip():
    files = sample_installer.generate(OPENSTACK_CONFIG)
    entry = next(e for e in json.loads(files["bootstrap.ign"])["storage"]["files"] if e["path"] == "/opt/openshift/tls/machine-config-server.crt")
    import base64

    pem = base64.b64decode(entry["contents"]["source"].split(",", 1)[1]).decode()
    der = base64.b64decode("".join(line for line in pem.splitlines() if not line.startswith("-----")))
    assert bytes([0x87, 4, 10, 0, 0, 5]) in der  # an iPAddress SAN: 10.0.0.5


def test_platform_none_output_is_unchanged_by_the_split():
    assert sample_installer.generate(DEV_CONFIG) == sample_installer.ignition_configs(DEV_CONFIG, sample_installer.manifests(DEV_CONFIG))


def test_the_sample_install_config_is_what_the_program_renders():
    from cluster.addresses import plan_addresses
    from cluster.config import load_config
    from cluster.installer import render_install_config
    from tests.conftest import stack_config
    from tools.plan import SAMPLE_PULL_SECRET

    config = load_config({**stack_config("standalone"), "ocp:pullSecret": SAMPLE_PULL_SECRET})
    rendered = render_install_config(config, plan_addresses(config), SAMPLE_PULL_SECRET)
    assert "\n".join(line for line in DEV_CONFIG.splitlines() if not line.startswith("#")) + "\n" == rendered
