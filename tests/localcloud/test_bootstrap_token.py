"""The bootstrap's token check (components/openstack/bootstrap_token.py, run as the program runs it)
against the local cloud's real Keystone and Glance, with an application credential made as the
program makes it (cluster/bootstrap_credential.py): the token reads its image's file and nothing
else, and once the credential is deleted Keystone gives none and refuses the old one. The cloud's
identity endpoint is plain http, in its catalog and in its clouds.yaml: the check sends the secret
there only where the stack allows it, and takes the same Keystone behind https (harness/localcloud/
tls_front.py) without. Then the real engine's preview of the dev stack, which refuses either http
endpoint before anything is made. The whole stack's credential is judged in test_openstack_lifecycle.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import yaml

from cluster.bootstrap_credential import ALLOW_HTTP, TOKEN_COMMAND, access_rule_path, expires_at, token_check
from components.openstack.bootstrap_credential import TOKEN_SCRIPT
from harness.localcloud.tls_front import keystone_over_tls
from tests.localcloud.conftest import sdk, status_with_token
from tests.localcloud.engine import needs, structured
from tests.localcloud.openstack_stack import PLUGINS, openstack_stack

MADE = """
image = tenant.image.create_image(name="bootstrap-token-test-ignition", container_format="bare", disk_format="raw",
    data=b'{"ignition":{"version":"3.2.0"}}', visibility="private")
path = path_of.replace("IMAGE", image.id)
answer = tenant.identity.post(f"/users/{tenant.current_user_id}/application_credentials", json={"application_credential": {
    "name": "bootstrap-token-test", "unrestricted": False, "expires_at": expiry,
    "access_rules": [{"service": "image", "method": "GET", "path": path}]}})
credential = answer.json()["application_credential"]
result = {"image": image.id, "id": credential["id"], "secret": credential["secret"],
    "keystone": tenant.endpoint_for("identity", interface="public"), "glance": tenant.image.get_endpoint(),
    "compute": tenant.compute.get_endpoint(), "other": tenant.image.find_image("rhcos").id}
"""
GONE = """
tenant.identity.delete(f"/users/{tenant.current_user_id}/application_credentials/{credential}")
answer = admin.identity.get("/auth/tokens", headers={"X-Subject-Token": token, "OpenStack-Identity-Access-Rules": "1"}, raise_exc=False)
result = answer.status_code
"""
CLEAN = """
for c in tenant.identity.get(f"/users/{tenant.current_user_id}/application_credentials").json()["application_credentials"]:
    if c["name"] == "bootstrap-token-test":
        tenant.identity.delete(f"/users/{tenant.current_user_id}/application_credentials/{c['id']}")
for i in tenant.image.images():
    if i.name == "bootstrap-token-test-ignition":
        tenant.image.delete_image(i)
"""


@pytest.fixture
def made(cloud):
    sdk(cloud, CLEAN)
    expiry = expires_at(time.time())
    found = sdk(cloud, MADE, path_of=access_rule_path("IMAGE"), expiry=expiry)
    yield {**found, "expiry": expiry}
    sdk(cloud, CLEAN)


def _check(made: dict, keystone: str | None = None, ca: str = "", allow_http: bool = True) -> str:
    """The check as the program runs it; by default as the committed dev stack (allowHttpIdentityEndpoint) does."""
    environment = {
        "PATH": "/usr/bin:/bin",
        "OCP_PYTHON": sys.executable,
        "OCP_TOKEN_SCRIPT": str(TOKEN_SCRIPT),
        "OCP_KEYSTONE_URL": keystone or made["keystone"],
        "OCP_CREDENTIAL_ID": made["id"],
        "OCP_CREDENTIAL_SECRET": made["secret"],
        "OCP_IMAGE_FILE_URL": f"{made['glance'].rstrip('/').removesuffix('/v2')}/v2/images/{made['image']}/file",
        "OCP_EXPIRES_AT": made["expiry"],
        "OCP_CLOUD_CA": ca,
        ALLOW_HTTP: "true" if allow_http else "false",
    }
    done = subprocess.run(["/bin/sh", "-c", TOKEN_COMMAND], env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_credentials_token_reads_its_image_and_nothing_else_until_it_is_deleted(cloud, made):
    check = token_check(_check(made), made["expiry"])
    assert check.error is None and check.warning is None and check.token, check
    glance = made["glance"].rstrip("/").removesuffix("/v2")
    assert status_with_token(f"{glance}/v2/images/{made['image']}/file", check.token) == 200
    refused = {
        "image list": status_with_token(f"{glance}/v2/images", check.token),
        "another image's file": status_with_token(f"{glance}/v2/images/{made['other']}/file", check.token),
        "server list": status_with_token(f"{made['compute'].rstrip('/')}/servers", check.token),
    }
    assert refused == dict.fromkeys(refused, 401), refused
    # Deleted: Keystone no longer knows the token, and gives no new one (the run says so and stops).
    assert sdk(cloud, GONE, credential=made["id"], token=check.token) == 404
    after = token_check(_check(made), made["expiry"])
    assert after.token == "" and after.error is not None and "Keystone answered 40" in after.error, after


def test_the_secret_goes_to_the_http_catalog_endpoint_only_where_allowed_and_through_https_without(cloud, made, tmp_path):
    assert made["keystone"].startswith("http://"), made["keystone"]  # the catalog's, as the program reads it
    refused = token_check(_check(made, allow_http=False), made["expiry"])
    assert refused.token == "" and refused.error is not None, refused
    assert refused.error.startswith(
        f"ocp:bootstrap.allowHttpIdentityEndpoint: the bootstrap's token check would have sent the application credential's secret to {made['keystone']}"
    ), refused.error
    # The same Keystone behind https: the check takes it without the stack's leave, and its token is the same one.
    with keystone_over_tls(tmp_path) as front:
        check = token_check(_check(made, keystone=front.url, ca=front.ca.read_text(), allow_http=False), made["expiry"])
        assert check.error is None and check.warning is None and check.token, check
        assert "POST /v3/auth/tokens" in front.seen, front.seen
    glance = made["glance"].rstrip("/").removesuffix("/v2")
    assert status_with_token(f"{glance}/v2/images/{made['image']}/file", check.token) == 200
    assert status_with_token(f"{glance}/v2/images", check.token) == 401


@pytest.fixture(scope="module")
def dev_stack(cloud, cloud_env, tmp_path_factory):
    reason = needs(*PLUGINS)
    if reason is not None:
        pytest.skip(reason)
    yield from openstack_stack("dev", tmp_path_factory.mktemp("dev-identity"), cloud, cloud_env)


def _bootstrap(stack, **fields) -> dict[str, str]:
    bootstrap = {key: value for key, value in {**structured(stack.base["ocp:bootstrap"]), **fields}.items() if value is not None}
    return {**stack.base, "ocp:bootstrap": json.dumps(bootstrap)}


def _preview(stack, config: dict[str, str], clouds_yaml=None):
    stack.write_config(config)
    try:
        done = stack.pulumi("preview", env={"OS_CLIENT_CONFIG_FILE": str(clouds_yaml)} if clouds_yaml else None)
    finally:
        stack.write_config(stack.base)
    return done.returncode, " ".join((done.stdout + done.stderr).split())


CREDENTIALS = """
result = [c["name"] for c in tenant.identity.get(f"/users/{tenant.current_user_id}/application_credentials").json()["application_credentials"]]
"""


def test_the_real_preview_refuses_an_http_identity_endpoint_and_says_which(cloud, dev_stack, tmp_path):
    strict = _bootstrap(dev_stack, allowHttpIdentityEndpoint=None)
    code, output = _preview(dev_stack, strict)
    assert code != 0 and dev_stack.state() == [], output[-3000:]
    assert (
        f'ocp:bootstrap.allowHttpIdentityEndpoint: the clouds.yaml entry "openstack" ({cloud.clouds_yaml}) has auth_url '
        "http://127.0.0.1:5000/v3, plain http: the provider logs in there"
    ) in output, output[-3000:]
    # An https auth_url (the same Keystone behind the front) beside the catalog Keystone answers with, whose
    # identity endpoint is http: the provider logs in over https and the preflight refuses the catalog's.
    with keystone_over_tls(tmp_path) as front:
        entries = yaml.safe_load(cloud.clouds_yaml.read_text())
        entry = entries["clouds"]["openstack"]
        entry["auth"]["auth_url"], entry["cacert"] = front.url, str(front.ca)
        clouds_yaml = tmp_path / "clouds.yaml"
        clouds_yaml.write_text(yaml.safe_dump(entries))
        code, output = _preview(dev_stack, strict, clouds_yaml)
        assert code != 0 and dev_stack.state() == [], output[-3000:]
        assert (
            "ocp:bootstrap.allowHttpIdentityEndpoint: the service catalog's public identity endpoint http://127.0.0.1:5000/v3 is "
            "plain http: the bootstrap's application credential would be made there"
        ) in output, output[-3000:]
        assert "clouds.yaml entry" not in output and "POST /v3/auth/tokens" in front.seen, front.seen
        # Allowed, the same preview passes: the lab user's token has `member`.
        code, output = _preview(dev_stack, dev_stack.base, clouds_yaml)
        assert code == 0, output[-3000:]
    assert not [name for name in sdk(cloud, CREDENTIALS) if name.endswith("bootstrap-ignition")]
