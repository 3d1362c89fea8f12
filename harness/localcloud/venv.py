"""The services' own virtualenv: OpenStack from PyPI, pinned by requirements-lock.txt.

Kept apart from the project's venv/ (which stays small for the quick start) under the local
cloud's home. Rebuilt only when the requirements, the lock or the drivers change.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from harness.localcloud.layout import Layout

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
LOCK = HERE / "requirements-lock.txt"
DRIVERS = HERE / "drivers"


def fingerprint() -> str:
    digest = hashlib.sha256()
    for path in [REQUIREMENTS, LOCK, *sorted(DRIVERS.glob("localcloud_drivers/*.py")), DRIVERS / "pyproject.toml"]:
        digest.update(str(path.relative_to(HERE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def ensure(layout: Layout, say) -> None:
    stamp = layout.venv / ".localcloud.sha256"
    want = fingerprint()
    if stamp.exists() and stamp.read_text().strip() == want:
        return
    if not (layout.venv / "bin" / "python").exists():
        say(f"creating the services' virtualenv {layout.venv}")
        subprocess.run([sys.executable, "-m", "venv", str(layout.venv)], check=True)
    say("installing OpenStack into it (pinned by harness/localcloud/requirements-lock.txt; ~2 min cold)")
    # The drivers are copied, not linked: the venv does not depend on the clone's path.
    subprocess.run(
        [str(layout.bin("pip")), "install", "--quiet", "--disable-pip-version-check", "-c", str(LOCK), "-r", str(REQUIREMENTS), str(DRIVERS)],
        check=True,
    )
    stamp.write_text(want + "\n")
