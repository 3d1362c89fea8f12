"""Commit the deployed state of an older release: `python tests/states/make.py COMMIT`.

Checks COMMIT out in a scratch worktree without the toolchain (so its installer configs come from
the fake installer: keys marked FAKE, the sample pull secret), runs its own offline plan of each
committed stack at AT, and writes tests/states/COMMIT/<stack>/: the stack file and state.json
reduced to what `tools.plan --from` needs (see README.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.preview import digest  # noqa: E402

HERE = Path(__file__).resolve().parent
# Every release's states are made at this instant; tests/test_states.py plans at it too.
AT = "2026-11-25T09:00:00+00:00"
# Inputs this large are kept as their digest: diffed exactly, not stored.
DIGEST_OVER = 32 * 1024


def reduce(state: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outputs the engine would take from the inputs anyway are dropped; large inputs become digests.
    Outputs the program reads back (the installer's configs, ids, addresses) stay."""
    reduced = []
    for item in state:
        inputs = item["inputs"]
        outputs = {key: value for key, value in item["outputs"].items() if key not in inputs or inputs[key] != value}
        kept = {key: digest(value) if len(json.dumps(value)) > DIGEST_OVER else value for key, value in inputs.items()}
        reduced.append({**item, "inputs": kept, "outputs": outputs})
    return sorted(reduced, key=lambda item: item["urn"])  # registration order varies from run to run


def main(commit: str) -> None:
    with tempfile.TemporaryDirectory(prefix="states-") as scratch:
        # A fixed path: the state records the checkout's path (an ignored input), so runs agree.
        tree = Path(tempfile.gettempdir()) / f"ocp-release-{commit}"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True)
        try:
            (tree / "venv").symlink_to(ROOT / "venv")
            name = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True)
            out = HERE / name.stdout.strip()
            for stack_file in sorted(tree.glob("Pulumi.*.yaml")):
                stack = stack_file.stem.removeprefix("Pulumi.")
                plan = Path(scratch) / f"plan-{stack}"
                subprocess.run(
                    [str(ROOT / "venv/bin/python"), "-m", "tools.plan", "--config-file", str(stack_file), "--at", AT, "--out", str(plan)],
                    cwd=tree, env={**os.environ, "OCP_PLAN_LOCALCLOUD": "off"}, check=True, stdout=subprocess.DEVNULL,
                )
                (out / stack).mkdir(parents=True, exist_ok=True)
                shutil.copy(stack_file, out / stack / stack_file.name)
                state = reduce(json.loads((plan / "state.json").read_text()))
                (out / stack / "state.json").write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
                print(f"{out / stack}: {len(state)} resources")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
