"""Every node's ignition: valid for the real ignition-validate, within budget, fetchable at first boot.

Standalone mode (platform: none) in most tests; integrated mode at the end."""

from __future__ import annotations

import base64
import json
import re

import pytest
from cryptography import x509

from ignition import assembly
from ignition.nodes import CLOUD_CA_FILE, NOVA_USER_DATA_BASE64, SHIM_LIMIT, TOKEN_BUDGET, USER_DATA_LIMIT
from tests.conftest import ignition_validate
from tools.mock_run import unwrap
from tools.plan import node_outputs


@pytest.fixture(scope="module")
def nodes(standalone_run):
    return {node.hostname: node for node in node_outputs(standalone_run)}


def test_every_node_config_passes_ignition_validate(nodes, tmp_path):
    checked = 0
    for name, node in nodes.items():
        if node.ignition is None:
            continue
        for label, text in (("user_data", node.user_data), ("full", json.dumps(node.ignition))):
            result = ignition_validate(text, tmp_path, f"{name}-{label}.ign")
            assert result.returncode == 0 and not result.stdout.strip(), (name, label, result.stdout, result.stderr)
            checked += 1
    assert checked == 12  # bootstrap, 3 masters, 2 workers; user_data and full config each


def test_user_data_budgets(nodes):
    for name, node in nodes.items():
        if name == "ocp4-bootstrap":  # the Glance shim: Nova's limit, with room for the token
            assert len(base64.b64encode(node.user_data.encode())) <= NOVA_USER_DATA_BASE64 - TOKEN_BUDGET, name
        else:
            assert len(node.user_data.encode()) <= USER_DATA_LIMIT, name


def test_bootstrap_shim_merges_the_served_config_from_glance_with_the_token(nodes, standalone_run):
    shim = json.loads(nodes["ocp4-bootstrap"].user_data)
    (merge,) = shim["ignition"]["config"]["merge"]
    # The image's data at the catalog's public image endpoint (the mock cloud's), with the token of
    # the bootstrap's own application credential (tests/components/test_bootstrap_credential.py).
    assert re.fullmatch(r"https://image\.cloud\.example:9292/v2/images/ocp4-bootstrap-config-image-[0-9a-f]{12}/file", merge["source"])
    assert merge["httpHeaders"] == [{"name": "X-Auth-Token", "value": "gAAAAA-mock-cloud-token-bootstrap"}]
    served = next(r for r in standalone_run.resources if r.type == "command:local:Command" and r.inputs.get("stdin"))
    assert merge["verification"]["hash"] == assembly.sha512_tag(unwrap(served.inputs["stdin"]))
    assert shim["ignition"]["timeouts"]["httpResponseHeaders"] >= 60
    # No clouds.yaml cacert here: the cloud's endpoints are signed by a public CA, nothing to add.
    assert "security" not in shim["ignition"] and "proxy" not in shim["ignition"]
    hostname = [f for f in shim["storage"]["files"] if f["path"] == "/etc/hostname"]
    assert assembly.file_contents(hostname[0]) == b"ocp4-bootstrap\n"


def _glance_shim(program_run) -> dict:
    server = next(r for r in program_run.resources if r.name == "ocp4-bootstrap-node")
    return json.loads(unwrap(server.inputs["userData"]))


def test_the_glance_shim_trusts_each_certificate_of_the_clouds_yaml_cacert_in_both_modes(tmp_path, monkeypatch):
    import yaml

    from tests.certs import OTHER_CA, TEST_CA
    from tests.conftest import run, stack_config, with_section

    cacert = tmp_path / "cloud-ca.pem"
    cacert.write_text(TEST_CA + "\n" + OTHER_CA)  # a bundle of two, a blank line between
    (tmp_path / "clouds.yaml").write_text(yaml.safe_dump({"clouds": {"openstack": {"cacert": str(cacert)}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))
    wanted = [
        "data:text/plain;charset=utf-8;base64," + base64.b64encode(ca.strip().encode() + b"\n").decode() for ca in (TEST_CA, OTHER_CA)
    ]
    standalone = _glance_shim(run(stack_config("standalone"), stack="standalone"))
    assert [ca["source"] for ca in standalone["ignition"]["security"]["tls"]["certificateAuthorities"]] == wanted
    integrated = _glance_shim(run(with_section(stack_config("dev"), "openstack", caBundle=TEST_CA)))
    assert [ca["source"] for ca in integrated["ignition"]["security"]["tls"]["certificateAuthorities"]] == wanted


def test_the_glance_shim_goes_through_the_clusters_proxy(tmp_path):
    from tests.conftest import run, stack_config

    proxy = {"httpProxy": "http://proxy.lab:3128", "httpsProxy": "http://proxy.lab:3128", "noProxy": ["10.0.0.0/16", ".osd2019.local"]}
    shim = _glance_shim(run(stack_config("standalone", proxy=proxy), stack="standalone"))
    assert shim["ignition"]["proxy"] == proxy
    result = ignition_validate(json.dumps(shim), tmp_path, "proxied-shim.ign")
    # Valid; Ignition only warns that a plain-HTTP proxy carries HTTPS, as most proxies do.
    assert result.returncode == 0 and "error" not in result.stdout, result.stdout


def test_the_helper_shim_merges_the_served_config(tmp_path):
    from tests.conftest import run, stack_config, with_helper

    helper_run = run(with_helper(stack_config("standalone")), stack="standalone")
    node = next(node for node in node_outputs(helper_run) if node.hostname == "ocp4-bootstrap")
    assert len(node.user_data.encode()) <= SHIM_LIMIT
    shim = json.loads(node.user_data)
    (merge,) = shim["ignition"]["config"]["merge"]
    # The helper over TLS, under a path only the cluster's secret gives (tests/components/test_openstack.py).
    assert re.fullmatch(r"https://10\.0\.0\.11:8080/[0-9a-f]{32}/bootstrap\.ign", merge["source"])
    served = helper_run.by_name("ocp4-bootstrap-helper-ssh-upload")
    assert merge["verification"]["hash"] == assembly.sha512_tag(unwrap(served.inputs["stdin"]))
    # One CA, the helper's own, which certifies the helper's address (tests/components/test_bootstrap_helper.py
    # serves with it): not the cluster's root CA, nor any other.
    (authority,) = shim["ignition"]["security"]["tls"]["certificateAuthorities"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(authority["source"].split(",", 1)[1]))
    assert ca.subject.rfc4514_string() == f"CN={helper_run.outputs['infraId']}-bootstrap-helper-ca"
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    hostname = [f for f in shim["storage"]["files"] if f["path"] == "/etc/hostname"]
    assert assembly.file_contents(hostname[0]) == b"ocp4-bootstrap\n"
    result = ignition_validate(node.user_data, tmp_path, "helper-shim.ign")
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_bootstrap_full_config_is_the_installers_plus_ours(nodes):
    full = nodes["ocp4-bootstrap"].ignition
    paths = {f["path"] for f in full["storage"]["files"]}
    assert "/usr/local/bin/bootkube.sh" in paths and "/etc/hostname" in paths
    units = {u["name"] for u in full["systemd"]["units"]}
    assert "bootkube.service" in units
    scheduler = next(f for f in full["storage"]["files"] if f["path"].endswith("cluster-scheduler-02-config.yml"))
    assert b"mastersSchedulable: false" in assembly.file_contents(scheduler)


@pytest.mark.parametrize("stack", ["standalone", "dev", "kvm"])
def test_the_bootstrap_masks_the_installers_blanket_csr_approver(stack, standalone_run, dev_run, tmp_path):
    """The installer's approve-csr.service approves every pending CSR while bootkube runs: masked in
    every platform's bootstrap config (an entry of its name, `mask` and nothing else: Ignition links it to
    /dev/null), and the config still passes the real ignition-validate."""
    from tests.conftest import run, stack_config

    program = {"standalone": standalone_run, "dev": dev_run}.get(stack) or run(stack_config(stack), stack=stack)
    (bootstrap,) = [node for node in node_outputs(program) if node.hostname.endswith("-bootstrap")]
    units = [unit for unit in bootstrap.ignition["systemd"]["units"] if unit["name"] == "approve-csr.service"]
    assert units == [{"name": "approve-csr.service", "mask": True}]
    result = ignition_validate(json.dumps(bootstrap.ignition), tmp_path)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout
    # What the installer made is there (the unit and its script): only our entry masks it.
    assert "/usr/local/bin/approve-csr.sh" in {entry["path"] for entry in bootstrap.ignition["storage"]["files"]}


@pytest.mark.parametrize("name,role", [("ocp4-master-1", "master"), ("ocp4-worker-0", "worker")])
def test_masters_and_workers_fetch_their_config_by_vip(nodes, name, role):
    config = json.loads(nodes[name].user_data)
    # No cluster DNS at first boot: the VIP by IP, on the MCS's plain-HTTP port.
    assert config["ignition"]["config"]["merge"] == [{"source": f"http://10.0.0.5:22624/config/{role}"}]
    assert config["ignition"]["version"] == "3.2.0"
    hostname = next(f for f in config["storage"]["files"] if f["path"] == "/etc/hostname")
    assert assembly.file_contents(hostname) == f"{name}\n".encode()


def test_files_are_gzip_data_urls(nodes):
    for entry in json.loads(nodes["ocp4-master-0"].user_data)["storage"]["files"]:
        assert entry["contents"]["compression"] == "gzip"
        assert entry["contents"]["source"].startswith("data:;base64,")


def test_assembly_is_deterministic():
    additions = assembly.Additions(files=(assembly.File("/etc/a", b"x" * 1000),))
    first = assembly.dumps(assembly.with_additions({"ignition": {"version": "3.2.0"}}, additions))
    second = assembly.dumps(assembly.with_additions({"ignition": {"version": "3.2.0"}}, additions))
    assert first == second


def test_an_addition_replaces_a_file_of_the_same_path():
    base = assembly.with_additions({}, assembly.Additions(files=(assembly.File("/etc/a", b"old"),)))
    result = assembly.with_additions(base, assembly.Additions(files=(assembly.File("/etc/a", b"new"),)))
    assert [assembly.file_contents(f) for f in result["storage"]["files"]] == [b"new"]


def test_routers_are_placed_on_the_router_slots(nodes):
    import yaml

    full = nodes["ocp4-bootstrap"].ignition
    manifest = next(f for f in full["storage"]["files"] if f["path"].endswith("default-ingresscontroller.yaml"))
    document = yaml.safe_load(assembly.file_contents(manifest))
    assert (document["kind"], document["metadata"]["name"]) == ("IngressController", "default")
    expression = document["spec"]["nodePlacement"]["nodeSelector"]["matchExpressions"][0]
    assert expression == {
        "key": "kubernetes.io/hostname",
        "operator": "In",
        "values": ["ocp4-worker-0", "ocp4-worker-1", "ocp4-worker-2"],
    }


# --------------------------------------------------------------------------- integrated mode


@pytest.fixture(scope="module")
def integrated(dev_run):
    return {node.hostname: node for node in node_outputs(dev_run)}, dev_run.outputs["infraId"]


def test_integrated_nodes_are_named_by_the_infra_id_and_pass_ignition_validate(integrated, tmp_path):
    nodes, infra_id = integrated
    assert set(nodes) == {f"{infra_id}-{n}" for n in ("bootstrap", "master-0", "master-1", "master-2", "worker-0", "worker-1")}
    for name, node in nodes.items():
        if node.ignition is not None:
            result = ignition_validate(json.dumps(node.ignition), tmp_path, f"{name}.ign")
            assert result.returncode == 0 and not result.stdout.strip(), (name, result.stdout)
            hostname = next(f for f in node.ignition["storage"]["files"] if f["path"] == "/etc/hostname")
            assert assembly.file_contents(hostname) == f"{name}\n".encode()  # the cloud provider's node name


@pytest.mark.parametrize("role", ["master", "worker"])
def test_integrated_pointer_is_the_installers_unchanged_plus_the_hostname(integrated, role):
    nodes, infra_id = integrated
    config = json.loads(nodes[f"{infra_id}-{role}-0"].user_data)
    # HTTPS to the VIP: with platform openstack the MCS certificate carries it as an IP SAN.
    assert config["ignition"]["config"]["merge"] == [{"source": f"https://10.0.0.5:22623/config/{role}"}]
    assert config["ignition"]["security"]["tls"]["certificateAuthorities"]
    assert [f["path"] for f in config["storage"]["files"]] == ["/etc/hostname"]
    assert "systemd" not in config


def test_integrated_nodes_get_none_of_the_standalone_networking(integrated):
    nodes, _ = integrated
    for node in nodes.values():
        if node.ignition is None:
            continue
        paths = {f["path"] for f in node.ignition.get("storage", {}).get("files", [])}
        ours = {p for p in paths if p.startswith(("/etc/keepalived", "/etc/haproxy", "/etc/coredns", "/etc/NetworkManager"))}
        ours |= {p for p in paths if p.startswith("/etc/kubernetes/manifests/") and any(k in p for k in ("keepalived", "haproxy", "coredns"))}
        assert ours == set(), ours


def test_integrated_routers_are_placed_by_node_name(integrated):
    import yaml

    nodes, infra_id = integrated
    full = nodes[f"{infra_id}-bootstrap"].ignition
    manifest = next(f for f in full["storage"]["files"] if f["path"].endswith("default-ingresscontroller.yaml"))
    values = yaml.safe_load(assembly.file_contents(manifest))["spec"]["nodePlacement"]["nodeSelector"]["matchExpressions"][0]["values"]
    assert values == [f"{infra_id}-worker-{i}" for i in range(3)]


def test_integrated_bootstrap_shim_writes_the_servers_name(integrated):
    # The shim's own hostname, before it merges the served config: the server's name, as for every node.
    nodes, infra_id = integrated
    shim = json.loads(nodes[f"{infra_id}-bootstrap"].user_data)
    hostname = next(f for f in shim["storage"]["files"] if f["path"] == "/etc/hostname")
    assert assembly.file_contents(hostname) == f"{infra_id}-bootstrap\n".encode()


def _bootstrap_files(program_run) -> dict[str, bytes]:
    infra_id = program_run.outputs["infraId"]
    full = {node.hostname: node for node in node_outputs(program_run)}[f"{infra_id}-bootstrap"].ignition
    return {f["path"]: assembly.file_contents(f) for f in full["storage"]["files"]}


def test_the_cloud_ca_reaches_the_bootstrap_where_bootkube_hands_it_to_the_masters(tmp_path, monkeypatch, integrated):
    import yaml

    from tests.certs import OTHER_CA, TEST_CA
    from tests.conftest import run, stack_config, with_section

    nodes, infra_id = integrated
    full = nodes[f"{infra_id}-bootstrap"].ignition
    assert CLOUD_CA_FILE not in {f["path"] for f in full["storage"]["files"]}  # no cacert, no caBundle: no file
    cacert = tmp_path / "cloud-ca.pem"
    cacert.write_text(TEST_CA)
    (tmp_path / "clouds.yaml").write_text(yaml.safe_dump({"clouds": {"openstack": {"cacert": str(cacert), "auth": {"auth_url": "https://keystone.lab:5000/v3"}}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))
    assert _bootstrap_files(run(stack_config("dev")))[CLOUD_CA_FILE] == TEST_CA.encode()
    # ocp:openstack.caBundle too; when it is the very cacert file, written once.
    same = with_section(stack_config("dev"), "openstack", caBundle=TEST_CA)
    assert _bootstrap_files(run(same))[CLOUD_CA_FILE] == TEST_CA.encode()
    other = with_section(stack_config("dev"), "openstack", caBundle=OTHER_CA)
    assert _bootstrap_files(run(other))[CLOUD_CA_FILE] == (TEST_CA + OTHER_CA).encode()
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "none.yaml"))
    assert _bootstrap_files(run(other))[CLOUD_CA_FILE] == OTHER_CA.encode()
