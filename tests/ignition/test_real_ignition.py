"""The nodes' shim and pointers (ignition/nodes.py) through the real Ignition 2.14's fetch stage,
against a server on 127.0.0.1: what a booting node does first, and the failures a user meets."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from cluster.addresses import plan_addresses
from cluster.config import load_config
from harness import ignition
from ignition import assembly, nodes
from ignition.assembly import Additions, File
from tests.conftest import stack_config

pytestmark = pytest.mark.skipif(ignition.unavailable() is not None, reason=str(ignition.unavailable()))

TOKEN = "gAAAAA-the-token-nova-was-given"
IMAGE = "/v2/images/0c2e7d1c-7a51-4c84-9a4e-3f1a7f0c9d11/file"
MARKER = "/opt/openshift/served-by-glance"


@pytest.fixture(scope="module")
def dev():
    config = load_config(stack_config("dev"))
    return config, plan_addresses(config)


@pytest.fixture(scope="module")
def cloud_ca():
    return ignition.Authority.make("cloud-ca")


def served(contents: bytes = b"yes\n") -> str:
    config = assembly.with_additions({"ignition": {"version": assembly.SPEC_VERSION}}, Additions(files=(File(MARKER, contents, 0o600),)))
    return assembly.dumps(config)


def glance_shim(dev, server, ca, text: str, token: str = TOKEN) -> str:
    config, plan = dev
    return nodes.glance_shim(config, plan.bootstrap, "ocp4-x7k2q", text, server.url + IMAGE, token, ca.pem)


def test_the_glance_shim_merges_the_image_with_the_token_and_hash(dev, cloud_ca, tmp_path):
    with ignition.ConfigServer({IMAGE: served().encode()}, {"X-Auth-Token": TOKEN}, cloud_ca.issue(tmp_path)) as glance:
        result = ignition.run(glance_shim(dev, glance, cloud_ca, served()), tmp_path / "node")
    assert result.ok, result.log
    assert [headers["X-Auth-Token"] for _, headers in glance.requests] == [TOKEN]
    assert result.files[MARKER] == ignition.Written(0o600, b"yes\n", 0, 0)  # the served config's
    assert result.files["/etc/hostname"].contents == b"ocp4-x7k2q-bootstrap\n"  # the shim's own


def test_an_expired_token_is_refused_by_glance(dev, cloud_ca, tmp_path):
    with ignition.ConfigServer({IMAGE: served().encode()}, {"X-Auth-Token": "gAAAAA-a-newer-token"}, cloud_ca.issue(tmp_path)) as glance:
        result = ignition.run(glance_shim(dev, glance, cloud_ca, served()), tmp_path / "node")
    assert not result.ok and result.stage == "fetch" and MARKER not in result.files
    assert "INFO     : GET result: Unauthorized" in result.log.splitlines(), result.log
    assert result.failure() == "CRITICAL : Ignition failed: failed to fetch resource"


def test_a_config_whose_sha512_is_not_the_shims_is_refused(dev, cloud_ca, tmp_path):
    changed = served(b"no\n")  # the image holds another config than the one the shim was made for
    with ignition.ConfigServer({IMAGE: changed.encode()}, {"X-Auth-Token": TOKEN}, cloud_ca.issue(tmp_path)) as glance:
        result = ignition.run(glance_shim(dev, glance, cloud_ca, served()), tmp_path / "node")
    assert not result.ok and result.stage == "fetch" and MARKER not in result.files
    calculated, expected = (assembly.sha512_tag(text).removeprefix("sha512-") for text in (changed, served()))
    assert result.failure() == f"CRITICAL : Ignition failed: hash verification failed (calculated {calculated} but expected {expected})"


def test_glance_with_a_certificate_the_clouds_ca_did_not_sign_is_never_trusted(dev, cloud_ca, tmp_path):
    other = ignition.Authority.make("other-ca")
    with ignition.ConfigServer({IMAGE: served().encode()}, {"X-Auth-Token": TOKEN}, other.issue(tmp_path)) as glance:
        result = ignition.run(glance_shim(dev, glance, cloud_ca, served()), tmp_path / "node", timeout=4)
    # Ignition retries for ever, as the bootstrap would sit: never a request served, never a file.
    assert not result.ok and glance.requests == [] and MARKER not in result.files
    assert "x509: certificate signed by unknown authority" in result.log, result.log


def installer_pointer(url: str, ca: ignition.Authority, role: str) -> str:
    """A pointer as openshift-install writes master.ign and worker.ign: merge from the MCS, trust the root CA."""
    source = "data:text/plain;charset=utf-8;base64," + base64.b64encode(ca.pem.encode()).decode()
    return assembly.dumps(
        {
            "ignition": {
                "config": {"merge": [{"source": f"{url}/config/{role}"}]},
                "security": {"tls": {"certificateAuthorities": [{"source": source}]}},
                "version": "3.2.0",
            }
        }
    )


def machine_config(role: str) -> bytes:
    """What the MCS serves, in short: a config with the rendered machine config's file."""
    return assembly.dumps(
        assembly.with_additions({"ignition": {"version": "3.2.0"}}, Additions(files=(File("/etc/mcs-machine-config-content.json", role.encode()),)))
    ).encode()


@pytest.mark.parametrize("role", ["master", "worker"])
def test_the_integrated_pointer_fetches_from_an_mcs_the_root_ca_signed(dev, role, tmp_path):
    config, plan = dev
    root_ca = ignition.Authority.make("root-ca")
    node = next(node for node in plan.nodes if node.role == role)
    with ignition.ConfigServer({f"/config/{role}": machine_config(role)}, certificate=root_ca.issue(tmp_path)) as mcs:
        user_data = nodes.integrated_pointer_user_data(config, node, "ocp4-x7k2q", installer_pointer(mcs.url, root_ca, role))
        result = ignition.run(user_data, tmp_path / "node")
    assert result.ok, result.log
    assert result.files["/etc/mcs-machine-config-content.json"].contents == role.encode()
    assert result.files["/etc/hostname"].contents == f"ocp4-x7k2q-{role}-0\n".encode()


def test_an_mcs_certificate_the_pointers_ca_did_not_sign_is_never_trusted(dev, tmp_path):
    config, plan = dev
    root_ca, other = ignition.Authority.make("root-ca"), ignition.Authority.make("not-the-clusters")
    worker = next(node for node in plan.nodes if node.role == "worker")
    with ignition.ConfigServer({"/config/worker": machine_config("worker")}, certificate=other.issue(tmp_path)) as mcs:
        user_data = nodes.integrated_pointer_user_data(config, worker, "ocp4-x7k2q", installer_pointer(mcs.url, root_ca, "worker"))
        result = ignition.run(user_data, tmp_path / "node", timeout=4)
    assert not result.ok and mcs.requests == [] and "/etc/mcs-machine-config-content.json" not in result.files
    assert "x509: certificate signed by unknown authority" in result.log, result.log



@pytest.mark.parametrize("source", ["glance", "helper"])
def test_the_programs_own_shim_and_served_bootstrap_config_pass_ignition(source, tmp_path):
    """The whole bootstrap config as the program serves it (about 300 KB: the installer's and this
    program's), fetched through the shim the program made for it, its sha512 checked by Ignition."""
    from tests.conftest import run, with_helper
    from tools.mock_run import unwrap
    from tools.plan import node_outputs

    config = stack_config("standalone")
    program_run = run(with_helper(config) if source == "helper" else config, stack="standalone")
    bootstrap = next(node for node in node_outputs(program_run) if node.hostname == "ocp4-bootstrap")
    text = next(unwrap(r.inputs["stdin"]) for r in program_run.resources if r.type == "command:local:Command" and r.inputs.get("stdin"))
    shim = json.loads(bootstrap.user_data)
    (merge,) = shim["ignition"]["config"]["merge"]
    headers = {header["name"]: header["value"] for header in merge.get("httpHeaders", [])}
    path = urllib.parse.urlsplit(merge["source"]).path
    with ignition.ConfigServer({path: text.encode()}, headers) as server:
        merge["source"] = server.url + path  # where the node would reach Glance or the helper
        result = ignition.run(shim, tmp_path / "node")
    assert result.ok, result.failure()
    assert assembly.sha512_tag(text) == merge["verification"]["hash"] and len(text) > 100_000
    for entry in bootstrap.ignition["storage"]["files"]:
        assert result.files[entry["path"]].mode == entry.get("mode", 0o644), entry["path"]
    assert result.files["/etc/hostname"].contents == b"ocp4-bootstrap\n"
    assert "bootkube.service" in result.units and "kubelet.service" in result.enabled and result.users["core"].startswith("core:x:")
