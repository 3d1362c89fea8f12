"""What makes one cluster distinct from another with the same name: the installer's infra ID
and a per-cluster secret. Both come from the installer's outputs, so they are known only
inside `apply`; everything derived from `secret` must stay inside secret Outputs."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterIdentity:
    infra_id: str
    secret: bytes

    def derive(self, purpose: str, length: int = 16) -> str:
        """A stable secret for one purpose (hex), unguessable without the cluster secret."""
        return hmac.new(self.secret, purpose.encode(), hashlib.sha256).hexdigest()[:length]
