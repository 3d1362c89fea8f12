"""The bootstrap's Keystone token from its application credential, tried as the bootstrap uses it.

Run by the program on every run while the bootstrap exists (pulumi-command's local.run, see
components/openstack/bootstrap_credential.py), with the Python that runs the program and its
standard library only: the credential reaches Keystone exactly as given here, whatever OS_CLOUD
or clouds.yaml say (the OpenStack provider would log in from OS_CLOUD's clouds.yaml entry and
ignore an application credential given to it). Prints one JSON line (cluster/bootstrap_credential.py
reads it): the token, or why there is none.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import datetime


def _context() -> ssl.SSLContext:
    ca = os.environ.get("OCP_CLOUD_CA") or None
    return ssl.create_default_context(cadata=ca)


def _status(request: urllib.request.Request) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(request, timeout=60, context=_context()) as response:
            return response.status, dict(response.headers), response.read(4096)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read(4096)


def _issue(keystone: str, credential_id: str, secret: str) -> tuple[int, str, dict]:
    url = keystone.rstrip("/")
    url = url if url.endswith("/v3") else f"{url}/v3"
    body = {"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": credential_id, "secret": secret}}}}
    request = urllib.request.Request(
        f"{url}/auth/tokens", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=60, context=_context()) as response:
            return response.status, response.headers.get("X-Subject-Token", ""), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, "", {}


def main() -> int:
    try:
        print(json.dumps(_check(os.environ)))
    except (urllib.error.URLError, OSError) as error:  # nothing answered: the run says where
        print(json.dumps({"unreachable": str(getattr(error, "reason", error))}))
    return 0


def _check(env: Mapping[str, str]) -> dict:
    # The secret goes nowhere in clear unless the stack says so (cluster.bootstrap_credential.ALLOW_HTTP).
    if env["OCP_KEYSTONE_URL"].strip().lower().startswith("http://") and env.get("OCP_ALLOW_HTTP_IDENTITY") != "true":
        return {"plainHttp": env["OCP_KEYSTONE_URL"]}
    status, token, body = _issue(env["OCP_KEYSTONE_URL"], env["OCP_CREDENTIAL_ID"], env["OCP_CREDENTIAL_SECRET"])
    if status == 401 or status == 404:
        expires = datetime.fromisoformat(env["OCP_EXPIRES_AT"].replace("Z", "+00:00")).timestamp()
        return {"expired": True} if time.time() >= expires else {"keystone": status}
    if status != 201 or not token:
        return {"keystone": status}
    methods = (body.get("token") or {}).get("methods") or []
    if "application_credential" not in methods:
        return {"methods": methods}
    # Read the first byte of the image's file, as the bootstrap reads all of it; then ask for the
    # image list, which the credential's access rule does not allow.
    headers = {"X-Auth-Token": token}
    read, _, _ = _status(urllib.request.Request(env["OCP_IMAGE_FILE_URL"], headers={**headers, "Range": "bytes=0-0"}))
    listing = env["OCP_IMAGE_FILE_URL"].split("/v2/images/")[0] + "/v2/images?limit=1"
    listed, _, _ = _status(urllib.request.Request(listing, headers=headers))
    return {"token": token, "read": read, "listed": listed}


if __name__ == "__main__":
    sys.exit(main())
