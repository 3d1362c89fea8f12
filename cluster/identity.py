"""What makes one cluster distinct from another with the same name: the installer's infra ID,
a per-cluster secret, and the release payload the installer generated the configs for. All
come from the installer's outputs, so they are known only inside `apply`; everything derived
from `secret` must stay inside secret Outputs."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClusterIdentity:
    infra_id: str
    secret: bytes
    # The release payload of the installer that generated the configs (a digest-pinned
    # pullspec), and its component images by payload name (`keepalived-ipfailover`,
    # `haproxy-router`, `coredns`, ...), each digest-pinned, as `oc adm release info
    # --image-for=<name>` gives them. Empty when the installer run did not record them.
    release_image: str | None = None
    release_images: Mapping[str, str] = field(default_factory=dict)

    def derive(self, purpose: str, length: int = 16) -> str:
        """A stable secret for one purpose (hex), unguessable without the cluster secret."""
        return hmac.new(self.secret, purpose.encode(), hashlib.sha256).hexdigest()[:length]
