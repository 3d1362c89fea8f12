"""The toolchain's `openshift-install` (4.19.0-ec.5) as an older release's, say 4.17.3's, whose
installer the Go proxy does not serve (toolchain/pins.toml): for a cluster installed at that
release. The real installer runs as it is; then its configs name the older release where an
installer's configs do, the ClusterVersion channel in the bootstrap's cvo-overrides.yaml
(`stable-4.17`, where this program read the install release before commit 407378c), and
`version` says it (the driver's check reads it). All else is 4.19.0-ec.5's: a test may rest only
on the release the configs name, not on what else differs between the two releases' configs.

    binary = older_installer.write(work, "4.17.3")   # a script to name in ocp:installer.binary

Run as a script by what `write` makes (standard library only). Test harness.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

CVO_OVERRIDES = "/opt/openshift/manifests/cvo-overrides.yaml"
REAL_RELEASE, REAL_VERSION = "4.19.0-ec.5", "v1.4.19-ec5"


def write(work: Path, release: str, real: str | None = None) -> Path:
    """An executable in `work` that is the toolchain's installer as `release`'s."""
    if real is None:
        from tools import toolchain

        real = toolchain.binary("openshift-install")
    script = work / f"openshift-install-{release}"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "{release}" "{real}" "$@"\n')
    script.chmod(0o755)
    return script


def _name_release(bootstrap: Path, release: str) -> None:
    config = json.loads(bootstrap.read_text())
    (entry,) = [entry for entry in config["storage"]["files"] if entry["path"] == CVO_OVERRIDES]
    header, _, payload = entry["contents"]["source"].partition(",")
    assert header.endswith(";base64"), header  # as the installer writes every file
    minor = ".".join(release.split(".")[:2])
    text, found = re.subn(r"^(  channel: stable-)4\.\d+$", rf"\g<1>{minor}", base64.b64decode(payload).decode(), flags=re.M)
    if found != 1:
        sys.exit(f"older_installer: {CVO_OVERRIDES} in {bootstrap} names no channel to set to stable-{minor}")
    entry["contents"]["source"] = f"{header},{base64.b64encode(text.encode()).decode()}"
    bootstrap.write_text(json.dumps(config, separators=(",", ":")))


def main(argv: list[str]) -> int:
    release, real, args = argv[0], argv[1], argv[2:]
    if args[:1] == ["version"]:
        done = subprocess.run([real, *args], capture_output=True, text=True)
        sys.stdout.write(done.stdout.replace(REAL_VERSION, release).replace(REAL_RELEASE, release))
        sys.stderr.write(done.stderr)
        return done.returncode
    code = subprocess.call([real, *args])
    if code == 0 and args[:2] == ["create", "ignition-configs"]:
        _name_release(Path(args[args.index("--dir") + 1]) / "bootstrap.ign", release)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
