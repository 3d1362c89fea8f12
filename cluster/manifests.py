"""The user's own manifests (ocp:installer.extraManifests): the *.yaml, *.yml and *.json files
of one directory, each checked as YAML before anything runs, added to the installer's
`openshift/` between `create manifests` and `create ignition-configs` (cluster/installer.py),
as OpenShift's docs do for MachineConfigs; those of its subdirectory `manifests/` go to the
installer's `manifests/` (what must exist before the cluster's operators start), as the
installer's own directory has them: one key, one record of digests, one warning on day 2.
The installer's cloud provider config there is not replaced but merged into
(ocp:installer.cloudProviderConfig, cluster/cloud_provider_config.py). Pure Python but for
reading that directory."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

KEY = "ocp:installer.extraManifests"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# The subdirectory whose files go to the installer's manifests/ (named so in the run script's list).
EARLY = "manifests"
# The installer's own file there that users used to edit by hand: merged into, never replaced.
CLOUD_PROVIDER_CONFIG = "cloud-provider-config.yaml"
# The run script gets every added manifest in one environment string (EXTRA_MANIFESTS), which Linux
# caps at 128 KiB (MAX_ARG_STRLEN); the rest is left to ocp:ntpServers' MachineConfigs.
ENVIRONMENT_BUDGET = 120 * 1024
# Names the run script writes without quoting problems.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def read_extra_manifests(directory: str | None, ours: Mapping[str, bytes] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The directory's manifests by file name, and one problem per bad file (each naming the key
    and the file); nothing without a directory. `ours`: the program's own manifests by file name
    (ocp:ntpServers' MachineConfigs), which no file may replace by name or by object."""
    if directory is None:
        return {}, []
    path = Path(directory)
    if not path.is_dir():
        return {}, [f"{KEY}: {directory} is not a directory: name the directory that holds the manifests to add"]
    early = path / EARLY
    try:
        names = [(p, p.name) for p in sorted(path.iterdir()) if p.suffix in MANIFEST_SUFFIXES and not p.is_dir()]
        if early.is_dir():
            names += [(p, f"{EARLY}/{p.name}") for p in sorted(early.iterdir()) if p.suffix in MANIFEST_SUFFIXES and not p.is_dir()]
    except OSError as error:
        return {}, [f"{KEY}: {directory} cannot be read ({error.strerror})"]
    if not names:
        return {}, [f"{KEY}: {directory} holds no .yaml, .yml or .json file (nor its {EARLY}/): add the manifests, or remove the key"]
    files: dict[str, bytes] = {}
    problems = []
    for file, name in names:
        try:
            data = file.read_bytes()
        except OSError as error:
            problems.append(f"{KEY}: {name} in {directory} cannot be read ({error.strerror})")
            continue
        problem = manifest_problem(file.name, data) or (_replaces_early(file.name) if name != file.name else _replaces(file.name, data, ours or {}))
        if problem:
            problems.append(f"{KEY}: {name} in {directory} {problem}")
        else:
            files[name] = data
    size = sum(len(name) + 2 + 4 * -(-len(data) // 3) for name, data in files.items())
    if size > ENVIRONMENT_BUDGET:
        problems.append(
            f"{KEY}: the manifests in {directory} take {size // 1024} KiB as the installer's command carries them "
            f"(base64, in one environment string, which Linux caps at 128 KiB), over {ENVIRONMENT_BUDGET // 1024} KiB: "
            "keep bulky data out of install-time manifests and `oc apply -f` it once the cluster runs"
        )
    return files, problems


def _objects(data: bytes) -> set[tuple[str, str]]:
    documents = [d for d in yaml.safe_load_all(data) if isinstance(d, dict)]
    return {(str(d.get("kind")), str((d.get("metadata") or {}).get("name"))) for d in documents}


def _replaces_early(name: str) -> str | None:
    if name == CLOUD_PROVIDER_CONFIG:
        return (
            "would replace the installer's cloud provider config (its [Global] section holds what the installer read from "
            "your cloud): write your settings in ocp:installer.cloudProviderConfig instead, which merges them into it"
        )
    return None


def _replaces(name: str, data: bytes, ours: Mapping[str, bytes]) -> str | None:
    # Both would land in openshift/: one file would silently replace the other, or two objects share a name.
    if name in ours:
        return "has the name of a manifest this program makes from ocp:ntpServers: rename it, or leave ntpServers out"
    theirs = {f"{kind} {object_name}" for made in ours.values() for kind, object_name in _objects(made)}
    clash = sorted(theirs & {f"{kind} {object_name}" for kind, object_name in _objects(data)})
    if clash:
        return f"holds {', '.join(clash)}, which this program makes from ocp:ntpServers: remove it, or leave ntpServers out"
    return None


def manifest_problem(name: str, data: bytes) -> str | None:
    """Why the installer or the bootstrap would not take this file as a manifest, or None."""
    if not _SAFE_NAME.match(name):
        return "has a name the installer's directory should not take: rename it with letters, digits, '.', '_' and '-' only"
    try:
        documents = [document for document in yaml.safe_load_all(data) if document is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        return f"is not valid YAML{line} ({getattr(error, 'problem', None) or error}): fix it, or move it out of the directory"
    if not documents:
        return "is empty: remove it"
    for number, document in enumerate(documents, 1):
        which = f"document {number}" if len(documents) > 1 else "it"
        if not isinstance(document, dict) or not all(isinstance(document.get(k), str) and document[k] for k in ("apiVersion", "kind")):
            return f"is not a Kubernetes manifest ({which} lacks apiVersion or kind): write objects with apiVersion, kind and metadata.name"
        metadata = document.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            return f"is not a Kubernetes manifest ({which} has no metadata.name)"
    return None


def digests(files: Mapping[str, bytes]) -> dict[str, str]:
    """What the install record keeps of each file: its name and sha256."""
    return {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in files.items()}
