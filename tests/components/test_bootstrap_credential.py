"""The token in the bootstrap's Glance shim (ocp:bootstrap.credential) and the image endpoint it goes
to (ocp:bootstrap.allowHttpImageEndpoint), through the program under the mock cloud: what it
registers, what the shim carries, the messages. The real Keystone and Glance judge the credential
in tests/localcloud/test_openstack_lifecycle.py."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

import pytest

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
    assert inputs["unrestricted"] is False and "roles" not in inputs
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


def test_a_cloud_that_ignores_the_access_rule_is_warned():
    run, error = attempt(stack_config("dev"), _cloud({"bootstrapCredential": "ignored"}))
    assert error is None, error
    (warning,) = [w for w in run.warnings if w.startswith("ocp:bootstrap.credential:")]
    assert "let the bootstrap's application credential list images" in warning


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
