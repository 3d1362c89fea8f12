"""Data URLs as Ignition and `openshift-install` write them (base64 or percent-encoded,
optionally gzip-compressed). Pure Python; the installer contract and the ignition builder
both read them."""

from __future__ import annotations

import base64
import gzip
import urllib.parse
from typing import Any


def decode_data_url(source: str) -> bytes:
    """Contents of a data URL as written by us or by openshift-install (base64 or percent-encoded)."""
    if not source.startswith("data:"):
        raise ValueError(f"not a data URL: {source[:40]}")
    header, _, payload = source[5:].partition(",")
    if header.endswith(";base64"):
        return base64.b64decode(payload)
    return urllib.parse.unquote_to_bytes(payload)


def file_contents(entry: dict[str, Any]) -> bytes | None:
    """Decoded contents of one ignition file entry, None when it is fetched from elsewhere."""
    source = entry.get("contents", {}).get("source")
    if source is None:
        return b""
    if not source.startswith("data:"):
        return None
    data = decode_data_url(source)
    if entry["contents"].get("compression") == "gzip":
        data = gzip.decompress(data)
    return data


def written_contents(entry: dict[str, Any]) -> bytes | None:
    """What Ignition writes for one file entry on a fresh node: its contents, then each `append`
    (the installer's bootstrap /etc/motd is all append); None when any part is fetched from elsewhere."""
    parts = [file_contents(entry)] + [file_contents({"contents": item}) for item in entry.get("append", [])]
    return None if None in parts else b"".join(parts)  # type: ignore[arg-type]
