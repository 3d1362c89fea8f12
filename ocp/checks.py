"""What `python -m ocp` checks before it waits on anything: the tools each command runs (one line
per missing or unfit tool, saying how to get it), and, right after the first `pulumi up`, that
this machine resolves the cluster's API name (else the records to make, before any wait)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from cluster.cloud_facts import MINIMUM_NETWORK_MTU
from cluster.config import ClusterConfig

PROJECT = Path(__file__).resolve().parent.parent
PULUMI_DOWNLOAD = "https://www.pulumi.com/docs/iac/download-install/"
CLIENTS = "https://mirror.openshift.com/pub/openshift-v4/clients/ocp/"
# The oldest OpenShift this program installs (docs/modes.md).
OLDEST_MINOR = 14


class MissingTools(Exception):
    """Tools a command needs are missing or unfit: one line each, what and how to get it."""

    def __init__(self, lines: list[str]):
        super().__init__("; ".join(lines))
        self.lines = lines


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def pulumi_problems(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The Pulumi CLI every command drives (the Automation API runs `pulumi` from PATH), at least
    the SDK's version (tests/toolchain holds the toolchain's so)."""
    sdk = metadata.version("pulumi")
    how = f"install the Pulumi CLI {sdk} or later ({PULUMI_DOWNLOAD}) and put it on PATH"
    path = which("pulumi")
    if path is None:
        return [f"pulumi: not on PATH (every command drives the Pulumi engine): {how}"]
    try:
        done = subprocess.run([path, "version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return [f"pulumi: {path} does not run ({error}): {how}"]
    found = done.stdout.strip()
    if done.returncode != 0 or not re.match(r"v?\d+\.\d+", found):
        return [f"pulumi: `{path} version` fails ({(done.stderr or found).strip()[-200:]}): {how}"]
    if _version_tuple(found) < _version_tuple(sdk):
        return [f"pulumi: {path} is {found}, older than the Pulumi SDK this program runs on ({sdk}): {how}"]
    return []


def resolve(binary: str, which: Callable[[str], str | None] = shutil.which) -> str | None:
    """Where a configured binary is: a path (relative to the project, where the engine runs it), or a name on PATH."""
    if "/" in binary:
        path = PROJECT / binary
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return which(binary)


def installer_release(path: str) -> str | None:
    """The OpenShift release an `openshift-install` installs (`4.19.0-ec.5`), from its `version`:
    the release image's tag, else its own version; None where neither names one."""
    done = subprocess.run([path, "version"], capture_output=True, text=True, timeout=60)
    text = done.stdout
    image = re.search(r"^release image \S+:(4\.\d+\.\d+\S*?)(?:-x86_64|-aarch64|-ppc64le|-s390x|-multi)?$", text, re.M)
    if image:
        return image.group(1)
    own = re.search(r"^\S*openshift-install v?(4\.\d+\.\d+\S*)", text, re.M)
    return own.group(1) if own else None


def installer_problems(path: str, config: ClusterConfig) -> list[str]:
    """The installer's release against what this program and the config need."""
    try:
        release = installer_release(path)
    except (OSError, subprocess.TimeoutExpired) as error:
        return [f"openshift-install: {path} does not run ({error}): download the release's installer from {CLIENTS}"]
    if release is None:
        return []  # a build that names no release: nothing to judge it by
    minor = int(release.split(".")[1])
    wanted, why = OLDEST_MINOR, f"the oldest this program installs is 4.{OLDEST_MINOR}"
    baseline = config.capabilities.baseline_capability_set if config.capabilities else None
    if baseline and re.fullmatch(r"v4\.\d+", baseline) and int(baseline.split(".")[1]) > wanted:
        wanted, why = int(baseline.split(".")[1]), f"ocp:capabilities.baselineCapabilitySet is {baseline}"
    if minor < wanted:
        return [f"openshift-install: {path} installs OpenShift {release}, older than 4.{wanted} ({why}): download a 4.{wanted} or later installer from {CLIENTS}"]
    return []


def tool_problems(command: str, config: ClusterConfig | None, which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """What `command` (install, approve-csrs, destroy) needs beyond pulumi, for this config."""
    found: list[str] = []
    if config is None:
        return found
    if command == "install":
        name = config.installer.binary or "openshift-install"
        path = resolve(name, which)
        if path is None:
            key = "ocp:installer.binary" if config.installer.binary else "the waits use openshift-install from PATH"
            found.append(
                f"openshift-install: {name} is not found ({key}; `pulumi up` makes the configs with it, install waits with it): "
                f"download the release's openshift-install from {CLIENTS} and put it on PATH or name it in ocp:installer.binary"
            )
        else:
            found += installer_problems(path, config)
    if command in ("install", "approve-csrs") and resolve(config.installer.oc, which) is None:
        other = "kubectl" if not config.installer.oc.endswith("kubectl") and which("kubectl") else None
        instead = f", or use the kubectl on PATH: `pulumi config set --path ocp:installer.oc {other}`" if other else ""
        found.append(
            f"oc: {config.installer.oc} is not found (ocp:installer.oc: the nodes' certificates are approved with it): "
            f"download openshift-client-linux from {CLIENTS} and put oc on PATH{instead}"
        )
    return found


def check(command: str, config: ClusterConfig | None) -> None:
    """Stops with every missing tool at once."""
    found = tool_problems(command, config)
    if found:
        raise MissingTools(found)


# ---- the API's name, right after the first `pulumi up`


def resolves(host: str) -> list[str]:
    """The addresses this machine resolves `host` to (none: it does not)."""
    try:
        return sorted({entry[4][0] for entry in socket.getaddrinfo(host, 443, proto=socket.IPPROTO_TCP)}) if host else []
    except OSError:
        return []


def dns_records(domain: str, outputs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Name -> address of the records clients need: the API's and the routes' (floating IP, else VIP)."""
    api = outputs.get("apiFloatingIp") or outputs.get("apiVip") or ""
    ingress = outputs.get("ingressFloatingIp") or outputs.get("ingressVip") or ""
    return [(f"api.{domain}", str(api)), (f"*.apps.{domain}", str(ingress))]


def name_problem(domain: str, outputs: Mapping[str, Any], stack: str, openstack: bool = False) -> str | None:
    """Why the install cannot go on to its waits: this machine does not resolve the API's name
    (`openshift-install wait-for` and the approvals reach the API by it). None when it does.
    `openstack`: a stack that could have floating IPs, whose absence is said."""
    host = f"api.{domain}"
    if resolves(host):
        return None
    records = "\n".join(f"  {name}  A  {address}" for name, address in dns_records(domain, outputs))
    hosts = "\n".join(f"  {line}" for line in str(outputs.get("etcHosts") or "").splitlines())
    # No floating IP (a provider network, a subnet routed by its owners): the names lead to the VIPs themselves.
    direct = "" if outputs.get("apiFloatingIp") or not openstack else (
        f" (the stack has no API floating IP: the records name the API VIP {outputs.get('apiVip')}, which this machine "
        "reaches on the machine network or through a route to it)"
    )
    return (
        f"nothing here resolves {host}, which the waits and the approvals reach the API by: make these DNS records{direct}\n{records}\n"
        f"or add these lines to /etc/hosts (`pulumi stack output etcHosts --stack {stack} | sudo tee -a /etc/hosts`):\n{hosts}\n"
        "then run the same command again: it goes on from here"
    )


def mtu_problem(outputs: Mapping[str, Any]) -> str | None:
    """Why the install cannot go on: the machine network's MTU (known once `up` made or read it) is under
    what OVN-Kubernetes needs. None when it is enough or unknown (libvirt)."""
    mtu = outputs.get("networkMtu")
    if not isinstance(mtu, int) or mtu >= MINIMUM_NETWORK_MTU:
        return None
    return (
        f"the machine network's MTU is {mtu}: OVN-Kubernetes needs at least {MINIMUM_NETWORK_MTU} (its Geneve header takes 100 "
        "bytes, pods need 1280), and the cluster would not come up. Ask the cloud's operators for a larger MTU "
        "(`openstack network set --mtu` needs an admin), or put the cluster on a network that has one "
        "(ocp:openstack.existingNetwork), then run `pulumi destroy` and install again"
    )


def name_elsewhere(domain: str, outputs: Mapping[str, Any]) -> str | None:
    """A line when the API's name resolves, but not to the API's address (a stale record; or a tunnel)."""
    host = f"api.{domain}"
    expected = dns_records(domain, outputs)[0][1]
    found = resolves(host)
    if not found or not expected or expected in found:
        return None
    return f"{host} resolves to {', '.join(found)} here, not to the API's {expected}: fix the record unless that address leads to the API"
