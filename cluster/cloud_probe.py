"""What the OpenStack preflight reads beyond the provider's invokes, with openstacksdk in one
process and one authentication: `OS_CLOUD=NAME python -m cluster.cloud_probe`.

pulumi-openstack 5.5.3 has no invoke for Neutron's extensions nor for Nova's hypervisors, so
components/openstack/preflight.py runs this module (cluster/cloud_facts.py PROBE_COMMAND) from the
program's own virtualenv, where openstacksdk is (requirements.txt). It prints one JSON line:

    {"extensions": [aliases, sorted], "hosts": [hypervisor states, sorted] or null}

`hosts` is null where Nova refuses the caller the hypervisors (403: its default policy keeps them
to admins). Any other failure prints {"error": "why"} instead, with exit status 0 so that the
preflight reads the reason; never a traceback, never a secret (the credentials stay in clouds.yaml).
tools/describe_cloud.py connects through `connect` here too.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any


class CloudError(Exception):
    """The cloud could not be reached or read, in one line without secrets."""


class NoEntry(CloudError):
    """clouds.yaml has no such entry (or there is no clouds.yaml)."""


def answer(extensions: Any, hosts: Any) -> str:
    """The probe's line: sorted, so that an unchanged cloud gives the same bytes."""
    return json.dumps({"extensions": sorted(extensions), "hosts": None if hosts is None else sorted(hosts)})


def failed(why: str) -> str:
    return json.dumps({"error": why})


def _no_entry(cloud: str, error: Exception) -> str:
    """Which entries the clouds.yaml openstacksdk read has, and where it is."""
    from openstack import config

    try:
        loader = config.OpenStackConfig()
        names, where = [name for name in loader.get_cloud_names() if name != "defaults"], loader.config_filename
    except Exception:  # noqa: BLE001 - only for the message
        return str(error)
    if where is None:
        return "no clouds.yaml found (./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml, or OS_CLIENT_CONFIG_FILE)"
    return f"no entry {cloud!r} in {where} (its entries: {', '.join(names) or 'none'})"


def connect(cloud: str) -> Any:
    """A connection to the clouds.yaml entry with its token: NoEntry or CloudError says why not."""
    import keystoneauth1.exceptions as ks
    import openstack
    from openstack import exceptions

    try:
        connection = openstack.connect(cloud=cloud)
    except exceptions.ConfigException as error:
        raise NoEntry(_no_entry(cloud, error)) from None
    try:
        auth_url = connection.config.get_auth_args().get("auth_url", "?")
    except Exception:  # noqa: BLE001 - only for the message
        auth_url = "?"
    try:
        connection.session.get_token()
    except ks.http.Unauthorized:
        raise CloudError(f"Keystone at {auth_url} refused its credentials (401): check the entry's auth in clouds.yaml") from None
    except ks.connection.ConnectionError as error:
        # keystoneauth's message, without urllib3's pool details after it
        reason = (str(error).splitlines() or [""])[0].split(": HTTPConnectionPool")[0].split(": HTTPSConnectionPool")[0]
        raise CloudError(f"cannot reach Keystone at {auth_url} ({type(error).__name__}: {reason[:200]})") from None
    except (ks.ClientException, exceptions.SDKException) as error:
        raise CloudError(f"no token from Keystone at {auth_url}: {first_line(error)}") from None
    return connection


def first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def probe(connection: Any) -> str:
    """The line for this connection's user: Neutron's extensions, and Nova's hypervisors where it lets them be listed."""
    from openstack import exceptions

    extensions = [extension.alias for extension in connection.network.extensions()]
    try:
        hosts = [hypervisor.state or "" for hypervisor in connection.compute.hypervisors()]
    except exceptions.ForbiddenException:
        hosts = None
    return answer(extensions, hosts)


def main() -> int:
    cloud = os.environ.get("OS_CLOUD", "")
    if not cloud:
        print(failed("OS_CLOUD names no clouds.yaml entry"))
        return 0
    # keystoneauth warns on stderr while it falls back between API versions: the line says what failed.
    logging.getLogger("keystoneauth").setLevel(logging.ERROR)
    try:
        import openstack  # noqa: F401 - the program's venv has it (requirements.txt)
    except ImportError:
        print(failed(f"no openstacksdk in {sys.executable}: install the program's requirements.txt into its venv"))
        return 0
    try:
        line = probe(connect(cloud))
    except CloudError as error:
        line = failed(str(error))
    except Exception as error:  # noqa: BLE001 - a read the cloud refused or failed: one line, no traceback
        line = failed(f"{type(error).__name__}: {first_line(error)}")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
