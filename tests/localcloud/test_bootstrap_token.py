"""The bootstrap's token check (components/openstack/bootstrap_token.py, run as the program runs it)
against the local cloud's real Keystone and Glance, with an application credential made as the
program makes it (cluster/bootstrap_credential.py): the token reads its image's file and nothing
else, and once the credential is deleted Keystone gives none and refuses the old one. Needs no
toolchain; the whole stack's credential is judged in test_openstack_lifecycle.py."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cluster.bootstrap_credential import TOKEN_COMMAND, access_rule_path, expires_at, token_check
from components.openstack.bootstrap_credential import TOKEN_SCRIPT
from tests.localcloud.conftest import sdk, status_with_token

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


def _check(made: dict) -> str:
    environment = {
        "PATH": "/usr/bin:/bin",
        "OCP_PYTHON": sys.executable,
        "OCP_TOKEN_SCRIPT": str(TOKEN_SCRIPT),
        "OCP_KEYSTONE_URL": made["keystone"],
        "OCP_CREDENTIAL_ID": made["id"],
        "OCP_CREDENTIAL_SECRET": made["secret"],
        "OCP_IMAGE_FILE_URL": f"{made['glance'].rstrip('/').removesuffix('/v2')}/v2/images/{made['image']}/file",
        "OCP_EXPIRES_AT": made["expiry"],
        "OCP_CLOUD_CA": "",
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
