"""The clouds.yaml entry the installer and the openstack CLI read, and the CA its `cacert` names.

Read before any resource (a problem stops the program) and again by the node configs, which
trust that CA. Pure Python, no Pulumi.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from cluster.config import ClusterConfig, pem_bundle_problem


def clouds_yaml_file() -> Path | None:
    """The clouds.yaml that openshift-install and the openstack CLI read: OS_CLIENT_CONFIG_FILE,
    else the first of ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml."""
    override = os.environ.get("OS_CLIENT_CONFIG_FILE")
    if override:
        return Path(override) if Path(override).is_file() else None
    candidates = (Path.cwd() / "clouds.yaml", Path.home() / ".config/openstack/clouds.yaml", Path("/etc/openstack/clouds.yaml"))
    return next((path for path in candidates if path.is_file()), None)


def _entry(cloud: str) -> tuple[Path, dict] | None:
    """The clouds.yaml file and its entry `cloud` ({} where it has none); None where no file can be read
    (the installer reports an unreadable clouds.yaml in its own words)."""
    path = clouds_yaml_file()
    if path is None:
        return None
    try:
        entry = ((yaml.safe_load(path.read_text()) or {}).get("clouds") or {}).get(cloud) or {}
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return path, entry if isinstance(entry, dict) else {}


def clouds_yaml_auth_url(config: ClusterConfig) -> tuple[str, str] | None:
    """The clouds.yaml entry (named, with its file) and its auth_url, where the provider logs in; None: not read."""
    found = _entry(config.openstack.cloud) if config.openstack is not None else None
    if found is None:
        return None
    path, entry = found
    auth = entry.get("auth")
    url = auth.get("auth_url") if isinstance(auth, dict) else None
    return (f'"{config.openstack.cloud}" ({path})', str(url)) if url else None


def clouds_yaml_ca(config: ClusterConfig) -> tuple[str | None, list[str]]:
    """The CA that the clouds.yaml entry's `cacert` names, and its problems: in integrated mode (the
    installer and the cluster read it) and wherever the bootstrap fetches its config from Glance."""
    found = _entry(config.openstack.cloud) if config.openstack is not None and (config.integrated or config.uses_glance) else None
    if found is None:
        return None, []
    path, entry = found
    cacert = entry.get("cacert")
    if not cacert:
        return None, []
    ca_file = Path(str(cacert)).expanduser()
    text = ca_file.read_text(errors="replace") if ca_file.is_file() else None
    problem = pem_bundle_problem(text) if text is not None else None
    if text is None or problem:
        what = "is not a file" if text is None else f"openshift-install would refuse ({problem})"
        readers = (
            "openshift-install and the cluster's cloud provider read that CA"
            if config.integrated
            else "the bootstrap trusts it to fetch its config from the cloud's image endpoint"
        )
        return None, [
            f"ocp:openstack.cloud: the clouds.yaml entry \"{config.openstack.cloud}\" ({path}) names cacert {cacert}, which "
            f"{what}: fix the path or the file there ({readers})"
        ]
    return text, []
