"""Ignition spec 3.2 configs built from Python data. Pure Python.

Everything a node gets from this program beyond the installer's config is an `Additions`
(files + systemd units). The same mechanism carries the hostname, the on-node networking
and anything later features add. Output is canonical JSON (sorted keys, no spaces) and
every file is a gzip+base64 data URL with a fixed gzip header, so the same input always
gives the same bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.dataurl import file_contents

# Within both Ignitions that read it: Debian's 2.14, which the tests run (3.0.0 to 3.3.0 and
# 3.4.0-experimental; it asks a server for 3.3.0 in its Accept header, so an MCS stand-in for it
# serves at most that), and RHCOS 4.19's (RHEL 9.6, Ignition 2.20 or so: 3.0.0 to 3.5.0, and no
# 3.4.0-experimental, dropped when 3.4.0 went stable in 2.15; not checked on an RHCOS here). The
# installer's 4.19 pointers and shim are 3.2.0 too. Stay at or under 3.3.0, never experimental.
SPEC_VERSION = "3.2.0"
# Ignition waits this long for response headers; slow clouds and a busy helper need more than 10 s.
HTTP_RESPONSE_HEADERS_TIMEOUT = 120


@dataclass(frozen=True)
class File:
    path: str
    contents: bytes
    mode: int = 0o644

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"ignition file path must be absolute: {self.path}")


@dataclass(frozen=True)
class Unit:
    name: str
    contents: str
    enabled: bool = True
    # Masked: linked to /dev/null, so that nothing starts it (the entry then holds its name only).
    mask: bool = False


@dataclass(frozen=True)
class Additions:
    files: tuple[File, ...] = ()
    units: tuple[Unit, ...] = ()

    def __add__(self, other: Additions) -> Additions:
        return Additions(self.files + other.files, self.units + other.units)


@dataclass(frozen=True)
class NodeIgnition:
    """What one node gets: `user_data` goes to the server; `served` (bootstrap on OpenStack)
    is the full config the user_data points at."""

    user_data: str
    served: str | None = None


def dumps(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha512_tag(text: str) -> str:
    return "sha512-" + hashlib.sha512(text.encode()).hexdigest()


def gzip_data_url(contents: bytes) -> str:
    # mtime=0 and no file name keep the gzip header, and so the output, reproducible.
    packed = gzip.compress(contents, compresslevel=9, mtime=0)
    return "data:;base64," + base64.b64encode(packed).decode()


def file_entry(item: File) -> dict[str, Any]:
    return {
        "path": item.path,
        "mode": item.mode,
        "overwrite": True,
        "contents": {"source": gzip_data_url(item.contents), "compression": "gzip"},
    }


def unit_entry(unit: Unit) -> dict[str, Any]:
    if unit.mask:
        return {"name": unit.name, "mask": True}
    return {"name": unit.name, "enabled": unit.enabled, "contents": unit.contents}


def masked(name: str) -> Unit:
    """A unit the config masks: an entry of the same name, with its contents and enablement, goes."""
    return Unit(name, "", enabled=False, mask=True)


def hostname(name: str) -> Additions:
    return Additions(files=(File("/etc/hostname", f"{name}\n".encode()),))


def with_additions(config: dict[str, Any], additions: Additions) -> dict[str, Any]:
    """A copy of `config` with the additions in; an addition replaces an entry with the same path/name."""
    result = json.loads(json.dumps(config))
    storage = result.setdefault("storage", {})
    new_paths = {item.path for item in additions.files}
    files = [entry for entry in storage.get("files", []) if entry["path"] not in new_paths]
    storage["files"] = files + [file_entry(item) for item in additions.files]
    if additions.units:
        systemd = result.setdefault("systemd", {})
        new_units = {unit.name for unit in additions.units}
        units = [entry for entry in systemd.get("units", []) if entry["name"] not in new_units]
        systemd["units"] = units + [unit_entry(unit) for unit in additions.units]
    return result


def pointer_config(installer_pointer: dict[str, Any], source: str, additions: Additions) -> dict[str, Any]:
    """The installer's master/worker pointer with its merge source replaced and the additions in.

    The installer's CA stays: anything fetched over HTTPS later still trusts the cluster's root CA.
    """
    config = json.loads(json.dumps(installer_pointer))
    config.setdefault("ignition", {})["version"] = SPEC_VERSION
    config["ignition"]["config"] = {"merge": [{"source": source}]}
    return with_additions(config, additions)


def shim_config(
    source: str,
    served: str,
    certificate_authorities: Iterable[str],
    additions: Additions,
    headers: Mapping[str, str] | None = None,
    proxy: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A small user_data that merges the full config from `source` (with these HTTP headers,
    through this proxy: spec 3.1 and later), verified by its sha512."""
    merge: dict[str, Any] = {"source": source, "verification": {"hash": sha512_tag(served)}}
    if headers:
        merge["httpHeaders"] = [{"name": name, "value": value} for name, value in headers.items()]
    config: dict[str, Any] = {
        "ignition": {
            "version": SPEC_VERSION,
            "config": {"merge": [merge]},
            "timeouts": {"httpResponseHeaders": HTTP_RESPONSE_HEADERS_TIMEOUT},
        }
    }
    authorities = [{"source": ca} for ca in certificate_authorities]
    if authorities:
        config["ignition"]["security"] = {"tls": {"certificateAuthorities": authorities}}
    if proxy:
        config["ignition"]["proxy"] = dict(proxy)
    return with_additions(config, additions)


_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.DOTALL)


def certificate_sources(bundle: str) -> list[str]:
    """Each certificate of a PEM bundle as a data URL, once (Ignition refuses two equal sources):
    one CA entry each, as the installer's shim has them."""
    return [
        "data:text/plain;charset=utf-8;base64," + base64.b64encode(f"{block}\n".encode()).decode()
        for block in dict.fromkeys(_CERTIFICATE.findall(bundle))
    ]


def resolve_merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """What Ignition does with `merge`: the child's files/units win over the parent's by path/name."""
    result = json.loads(json.dumps(child))
    result.setdefault("ignition", {})["version"] = SPEC_VERSION
    for section, key, item_key in (("storage", "files", "path"), ("systemd", "units", "name")):
        parent_items = parent.get(section, {}).get(key, [])
        child_items = result.get(section, {}).get(key, [])
        child_keys = {item[item_key] for item in child_items}
        merged = [item for item in parent_items if item[item_key] not in child_keys] + child_items
        if merged:
            result.setdefault(section, {})[key] = merged
    for section in ("passwd",):
        if section in parent and section not in result:
            result[section] = parent[section]
    return result


def readable(config: dict[str, Any]) -> dict[str, Any]:
    """The same config with every data URL decoded into a plain one: valid Ignition, readable JSON."""
    result = json.loads(json.dumps(config))
    for entry in result.get("storage", {}).get("files", []):
        data = file_contents(entry)
        if data is not None:
            entry["contents"] = {"source": "data:," + urllib.parse.quote(data, safe="/:=,-_.")}
    return result
