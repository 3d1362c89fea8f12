"""The fake release: versions, the marker every fake artefact carries, the payload's images.

It mirrors OpenShift 4.19.0-ec.5, whose installer is `openshift-install v1.4.19-ec5` (the
toolchain builds that one: tests/tools/test_installer_contract.py holds the fake to it).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from cluster.installer import RELEASE_COMPONENTS

IGNITION_VERSION = "3.2.0"
RELEASE_VERSION = "4.19.0-ec.5"
RELEASE_IMAGE = f"quay.io/openshift-release-dev/ocp-release:{RELEASE_VERSION}-x86_64"
INSTALLER_VERSION = "v1.4.19-ec5"
# Tests of behaviour that differs by release set this to shape the configs like another
# release's (e.g. 4.18.0): its channel, which is where the program reads the release from.
RELEASE_VARIABLE = "SAMPLE_INSTALLER_RELEASE"


def channel() -> str:
    """The ClusterVersion channel the installer sets, stable-<major>.<minor> of its release:
    4.19.0-ec.5's, or that of $SAMPLE_INSTALLER_RELEASE."""
    version = os.environ.get(RELEASE_VARIABLE) or RELEASE_VERSION
    return "stable-" + ".".join(version.split(".")[:2])
# Kept as written when this was one file: it is in every certificate of the committed samples.
FAKE_MARKER = "FAKE tools/sample_installer.py"


def release_images() -> dict[str, Any]:
    """What `openshift-install version` and `oc adm release info --image-for` would give for
    this fake 4.19.0-ec.5 release: digest-pinned pullspecs, fake digests (sha256 of the name)."""

    def digest(name: str) -> str:
        return "sha256:" + hashlib.sha256(f"{FAKE_MARKER} {name}".encode()).hexdigest()

    return {
        "release": f"quay.io/openshift-release-dev/ocp-release@{digest(RELEASE_IMAGE)}",
        "images": {name: f"quay.io/openshift-release-dev/ocp-v4.0-art-dev@{digest(name)}" for name in RELEASE_COMPONENTS},
    }
