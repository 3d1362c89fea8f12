"""The token in the bootstrap's Glance shim (ocp:bootstrap.credential) and the image endpoint it goes
to (ocp:bootstrap.allowHttpImageEndpoint), through the program under the mock cloud: what it
registers, what the shim carries, the messages. The real Keystone and Glance judge the credential
in tests/localcloud/test_openstack_lifecycle.py."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
from datetime import datetime, timezone

import pytest
import yaml

from cluster.bootstrap_credential import ALLOW_HTTP, TOKEN_COMMAND, token_check
from components.openstack.bootstrap_credential import TOKEN_SCRIPT
from tests.components.test_preflight import _cloud, attempt, cloud_types
from tests.conftest import deploy, preview, stack_config, with_section
from tools.mock_run import unwrap

CREDENTIAL = "openstack:identity/applicationCredential:ApplicationCredential"


def _shim_token(run) -> str:
    server = run.by_name("ocp4-bootstrap-node")
    (merge,) = json.loads(unwrap(server.inputs["userData"]))["ignition"]["config"]["merge"]
    (header,) = merge["httpHeaders"]
    return header["value"]


def _generated_at(run) -> float:
    stdout = unwrap(run.by_name("installer-run").outputs["stdout"])
    line = next(line for line in stdout.splitlines() if line.startswith("ocp-install-record.json "))
    return json.loads(base64.b64decode(line.split(" ", 1)[1]))["generatedAt"]


@pytest.mark.parametrize("stack", ["dev", "standalone"])
def test_the_bootstrap_gets_a_credential_that_reads_its_own_image_for_24_hours(stack):
    run, error = attempt(stack_config(stack), stack=stack)
    assert error is None, error
    (credential,) = [r for r in run.resources if r.type == CREDENTIAL]
    image = run.by_name("ocp4-bootstrap-config-image")
    inputs = unwrap(credential.inputs)
    assert inputs["accessRules"] == [{"service": "image", "method": "GET", "path": f"/v2/images/{image.id}/file"}]
    # It names its one role: without one, Keystone would give it every role of the token.
    assert inputs["unrestricted"] is False and inputs["roles"] == ["member"]
    made = datetime.fromtimestamp(_generated_at(run), timezone.utc)
    expires = datetime.fromisoformat(inputs["expiresAt"].replace("Z", "+00:00"))
    assert (expires - made).total_seconds() == 24 * 3600
    # The shim carries its token, not the provider's (the mock cloud's `token`).
    assert _shim_token(run) == "gAAAAA-mock-cloud-token-bootstrap"
    assert not any(w.startswith("ocp:bootstrap.credential") for w in run.warnings)


def test_the_next_up_keeps_the_credential_and_the_running_bootstrap():
    """The expiry comes from the installer's record, not from the clock: a later run gives the
    credential the very inputs it was made with."""
    state = deploy(stack_config("dev"))
    result = preview(state, stack_config("dev"), hours_later=2)
    assert result.error is None, result.error
    assert {name: c.action for name, c in result.changes.items() if c.action != "same"} == {}


def test_the_teardown_deletes_the_credential():
    state = deploy(stack_config("dev"))
    result = preview(state, with_section(stack_config("dev"), "bootstrap", enabled=False))
    assert result.error is None, result.error
    assert result.changes["ocp4-bootstrap-config-credential"].action == "delete"


def test_user_token_gives_the_providers_token_and_says_so_on_every_run():
    run, error = attempt(with_section(stack_config("dev"), "bootstrap", credential="userToken"))
    assert error is None, error
    assert not [r for r in run.resources if r.type == CREDENTIAL]
    assert _shim_token(run) == "gAAAAA-mock-cloud-token"
    (warning,) = [w for w in run.warnings if w.startswith("ocp:bootstrap.credential: userToken:")]
    assert "your own Keystone token" in warning and "Remove the key" in warning


@pytest.mark.parametrize(
    "cloud, message",
    [
        ("refused", "ocp:bootstrap.credential: the image service answered 401 when the bootstrap's application credential read its own image's file"),
        ("unsupported", "ocp:bootstrap.credential: Keystone answered 401 when asked for a token of the bootstrap's application credential"),
    ],
)
def test_a_cloud_that_cannot_stops_the_bootstrap_and_names_the_fallback(cloud, message):
    run, error = attempt(stack_config("dev"), _cloud({"bootstrapCredential": cloud}))
    assert error is not None and message in error, error
    assert "write ocp:bootstrap.credential: userToken" in error
    assert "ocp4-bootstrap-node" not in {r.name for r in run.resources}
    run, error = attempt(with_section(stack_config("dev"), "bootstrap", credential="userToken"), _cloud({"bootstrapCredential": cloud}))
    assert error is None, error


def test_a_cloud_that_ignores_the_access_rule_stops_the_bootstrap_and_names_user_token():
    run, error = attempt(stack_config("dev"), _cloud({"bootstrapCredential": "ignored"}))
    assert error is not None and (
        "ocp:bootstrap.credential: this cloud's image service answered 200 when the bootstrap's application credential "
        "listed images, which its access rule does not allow"
    ) in error, error
    assert "write ocp:bootstrap.credential: userToken" in error
    assert "ocp4-bootstrap-node" not in {r.name for r in run.resources}
    run, error = attempt(with_section(stack_config("dev"), "bootstrap", credential="userToken"), _cloud({"bootstrapCredential": "ignored"}))
    assert error is None, error


NO_MEMBER = "ocp:bootstrap.credential: your token has roles manager, reader in project project-lab, not `member`"


def test_a_token_without_member_is_refused_before_anything_is_made():
    cloud = _cloud({"roles": ["reader", "manager"]})
    run, error = attempt(stack_config("dev"), cloud)
    assert error is not None and NO_MEMBER in error, error
    assert "write ocp:bootstrap.credential: userToken" in error and cloud_types(run) == set()
    # Skipping the preflight, no credential is made without its role.
    run, error = attempt(with_section(stack_config("dev"), "openstack", skipPreflight=True), cloud)
    assert error is not None and NO_MEMBER in error, error
    assert not [r for r in run.resources if r.type == CREDENTIAL]
    assert attempt(with_section(stack_config("dev"), "bootstrap", credential="userToken"), cloud)[1] is None
    # The role as the token spells it (oslo.policy ignores case); an admin's token lists the member it implies.
    run, error = attempt(stack_config("dev"), _cloud({"roles": ["Member"]}))
    assert error is None and unwrap(run.of_type(CREDENTIAL)[0].inputs["roles"]) == ["Member"], error


HTTP = {"catalog": {"image": "http://image.cloud.example:9292"}}
REFUSAL = "ocp:bootstrap.allowHttpImageEndpoint: the service catalog's public image endpoint http://image.cloud.example:9292 is plain http"


@pytest.mark.parametrize("stack", ["dev", "standalone"])
def test_a_plain_http_image_endpoint_is_refused_before_anything_is_made(stack):
    config = with_section(stack_config(stack), "bootstrap", allowHttpImageEndpoint=None)
    run, error = attempt(config, _cloud(HTTP), stack=stack)
    assert error is not None and REFUSAL in error, error
    assert "write ocp:bootstrap.allowHttpImageEndpoint: true" in error and cloud_types(run) == set()
    # Skipping the preflight, the bootstrap still does not boot with it.
    run, error = attempt(with_section(config, "openstack", skipPreflight=True), _cloud(HTTP), stack=stack)
    assert error is not None and REFUSAL in error, error
    assert "ocp4-bootstrap-node" not in {r.name for r in run.resources}


def test_a_plain_http_image_endpoint_is_taken_where_the_stack_says_so():
    run, error = attempt(stack_config("dev"), _cloud(HTTP))  # the committed dev stack: a lab cloud
    assert error is None, error
    server = run.by_name("ocp4-bootstrap-node")
    (merge,) = json.loads(unwrap(server.inputs["userData"]))["ignition"]["config"]["merge"]
    assert merge["source"].startswith("http://image.cloud.example:9292/v2/images/")
    # The helper path sends nothing to the image endpoint.
    helper = with_section(stack_config("dev"), "bootstrap", allowHttpImageEndpoint=None, configSource="helper")
    assert REFUSAL not in (attempt(helper, _cloud(HTTP))[1] or "")


HTTP_IDENTITY = {"catalog": {"identity": "http://identity.cloud.example:5000/v3"}}
CATALOG_REFUSAL = (
    "ocp:bootstrap.allowHttpIdentityEndpoint: the service catalog's public identity endpoint "
    "http://identity.cloud.example:5000/v3 is plain http"
)


@pytest.mark.parametrize("stack", ["dev", "standalone"])
def test_a_plain_http_identity_endpoint_is_refused_before_the_credential_is_made(stack):
    config = with_section(stack_config(stack), "bootstrap", allowHttpIdentityEndpoint=None)
    run, error = attempt(config, _cloud(HTTP_IDENTITY), stack=stack)
    assert error is not None and CATALOG_REFUSAL in error, error
    assert "write ocp:bootstrap.allowHttpIdentityEndpoint: true" in error and cloud_types(run) == set()
    # Skipping the preflight, the credential (whose secret Keystone answers with) is not made either.
    run, error = attempt(with_section(config, "openstack", skipPreflight=True), _cloud(HTTP_IDENTITY), stack=stack)
    assert error is not None and CATALOG_REFUSAL in error, error
    assert not [r for r in run.resources if r.type == CREDENTIAL]
    assert "ocp4-bootstrap-node" not in {r.name for r in run.resources}


def test_a_plain_http_identity_endpoint_is_taken_where_the_stack_says_so_or_nothing_goes_there():
    run, error = attempt(stack_config("dev"), _cloud(HTTP_IDENTITY))  # the committed dev stack: a lab cloud
    assert error is None, error
    assert _shim_token(run) == "gAAAAA-mock-cloud-token-bootstrap"
    for section in ({"configSource": "helper"}, {"credential": "userToken"}):  # no credential made
        config = with_section(stack_config("dev"), "bootstrap", allowHttpIdentityEndpoint=None, **section)
        assert attempt(config, _cloud(HTTP_IDENTITY))[1] is None, section


AUTH_REFUSAL = (
    'ocp:bootstrap.allowHttpIdentityEndpoint: the clouds.yaml entry "openstack" ({}) has auth_url '
    "http://keystone.cloud.example:5000/v3, plain http: the provider logs in there with your credentials and gets back {}"
)


def test_a_plain_http_auth_url_is_refused_before_the_provider_logs_in(tmp_path, monkeypatch):
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {"openstack": {"auth": {"auth_url": "http://keystone.cloud.example:5000/v3"}}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    config = with_section(stack_config("dev"), "bootstrap", allowHttpIdentityEndpoint=None)
    run, error = attempt(config)
    assert error is not None and AUTH_REFUSAL.format(clouds, "the token the bootstrap's application credential is made with") in error, error
    assert run.resources == [], "it stops with the config, before the provider or any invoke"
    user_token = with_section(config, "bootstrap", credential="userToken")
    error = attempt(user_token)[1]
    assert error is not None and AUTH_REFUSAL.format(clouds, "the token the bootstrap carries") in error, error
    assert attempt(stack_config("dev"))[1] is None  # the committed dev stack says so
    clouds.write_text(yaml.safe_dump({"clouds": {"openstack": {"auth": {"auth_url": "https://keystone.cloud.example:5000/v3"}}}}))
    assert attempt(config)[1] is None


def test_the_token_check_sends_nothing_to_an_http_identity_endpoint_the_stack_did_not_allow():
    """The check itself, as the program runs it, against a listener that records any connection."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v3"
        environment = {
            "PATH": "/usr/bin:/bin", "OCP_PYTHON": sys.executable, "OCP_TOKEN_SCRIPT": str(TOKEN_SCRIPT), "OCP_KEYSTONE_URL": url,
            "OCP_CREDENTIAL_ID": "c0ffee", "OCP_CREDENTIAL_SECRET": "the-secret", "OCP_IMAGE_FILE_URL": "https://image.example/v2/images/1/file",
            "OCP_EXPIRES_AT": "2099-01-01T00:00:00Z", "OCP_CLOUD_CA": "", ALLOW_HTTP: "false",
        }
        done = subprocess.run(["/bin/sh", "-c", TOKEN_COMMAND], env=environment, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        with pytest.raises(TimeoutError):
            listener.accept()
        check = token_check(done.stdout, "")
        assert check.token == "" and check.error is not None and check.error.startswith(
            f"ocp:bootstrap.allowHttpIdentityEndpoint: the bootstrap's token check would have sent the application credential's secret to {url}"
        ), check
        # Allowed, it goes there (and the listener, no Keystone, never answers: the run says so).
        environment[ALLOW_HTTP] = "true"
        started = subprocess.Popen(["/bin/sh", "-c", TOKEN_COMMAND], env=environment, stdout=subprocess.PIPE, text=True)
        try:
            connection, _ = listener.accept()
            connection.close()
        finally:
            started.kill()
            started.wait()
