"""What makes one cluster distinct from another with the same name: the installer's infra ID,
a per-cluster secret, and the release payload the installer generated the configs for. All
come from the installer's outputs, so they are known only inside `apply`; everything derived
from `secret` must stay inside secret Outputs.

The secret is 32 random bytes the run script made beside the configs (`ROOT_FILE`), and every
derived value names the infra ID too. Stacks installed before that (`legacy`) keep deriving from
the kubeadmin password and the purpose alone: their running masters' VRRP passwords must match
those of a master made later."""

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
    # A bundle recorded before the random root: `secret` is the password's hash, the purpose alone the message.
    legacy: bool = False

    def derive(self, purpose: str, length: int = 16) -> str:
        """A stable secret for one purpose (hex), unguessable without the cluster secret."""
        message = purpose if self.legacy else f"{self.infra_id}\0{purpose}"
        return hmac.new(self.secret, message.encode(), hashlib.sha256).hexdigest()[:length]
