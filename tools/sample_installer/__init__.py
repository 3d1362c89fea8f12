"""A deterministic FAKE `openshift-install create manifests | ignition-configs` (platform none or openstack).

Tests and the offline plan use it instead of the real installer.  The output has
the shape of real openshift-install v1.4.19-ec5 output (OpenShift 4.19.0-ec.5,
Ignition spec 3.2.0): the same files per step, manifest names, bootstrap paths,
modes and units (tests/tools/test_installer_contract.py holds it to the toolchain's
real installer).  Every key, certificate, password and ID is pseudo-random data
seeded from a sha256 of the install-config, every script a stand-in.  Nothing in
it is a secret:

* certificates are well-formed X.509 DER (so SANs and subjects can be read back)
  whose subjects carry an "OU=FAKE ..." marker; their signatures are random bytes;
* private keys are PKCS#1-shaped random integers preceded by a "FAKE" text line,
  which PEM parsers skip;
* with `platform: openstack` the cloud credentials are a FAKE clouds.yaml (no real
  one is ever read) and OpenStack IDs are fake UUIDs.

Usage:
    python -m tools.sample_installer create manifests --dir DIR          (then edit or delete manifests)
    python -m tools.sample_installer create ignition-configs --dir DIR
    python -m tools.sample_installer version
    python -m tools.sample_installer write-samples --out DIR --install-config FILE

In process (no subprocess): `manifests(install_config)`, `ignition_configs(install_config,
manifests)` and `generate(install_config)`, which is the two in a row.

Layout, in import order: release (versions, marker), x509 (seeded randomness, DER),
install_config, pki, render (YAML/JSON like Go), kube (config objects), openstack,
cluster_manifests, bootstrap, assets (the API), cli.
"""

from cluster.installer import ASSET_FILES
from tools.sample_installer.assets import generate, ignition_configs, manifests, write_files
from tools.sample_installer.cli import STATE_FILE, main
from tools.sample_installer.release import FAKE_MARKER, IGNITION_VERSION, INSTALLER_VERSION, RELEASE_IMAGE, release_images

OUTPUT_FILES = ASSET_FILES

__all__ = [
    "FAKE_MARKER",
    "IGNITION_VERSION",
    "INSTALLER_VERSION",
    "OUTPUT_FILES",
    "RELEASE_IMAGE",
    "STATE_FILE",
    "generate",
    "ignition_configs",
    "main",
    "manifests",
    "release_images",
    "write_files",
]
