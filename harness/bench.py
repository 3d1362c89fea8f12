"""Benchmark of the offline plan: whole-process time and peak memory by cluster size.

    python -m harness.bench [--repeat 3]

Each size runs `python -m tools.plan` in a fresh process (what a user waits for), on the dev
stack with the worker count changed; the baseline is a bare `import pulumi_openstack`.
Prints the median of --repeat runs, the per-worker slope, and user_data size per role.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SIZES = (2, 50, 200)  # workers, beside 3 masters
TARGET_SMALL_SECONDS = 2.0
TARGET_SMALL_RATIO = 2.0
TARGET_LARGE_SECONDS = 10.0


def measure(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return elapsed, usage.ru_maxrss


def stack_file(directory: Path, workers: int) -> Path:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["ocp:workers"].update(count=workers, maxCount=max(100, workers))
    path = directory / f"Pulumi.bench{workers}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def median_of(repeat: int, command: list[str]) -> tuple[float, int]:
    runs = [measure(command) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def user_data_sizes(plan_dir: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for node in sorted((plan_dir / "nodes").iterdir()):
        role = "helper" if node.name.endswith("bootstrap-helper") else node.name.split("-")[-2 if node.name[-1].isdigit() else -1]
        sizes[role] = max(sizes.get(role, 0), (node / "user_data").stat().st_size)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    python = sys.executable
    baseline, baseline_rss = median_of(args.repeat, [python, "-c", "import pulumi_openstack"])
    print(f"baseline: import pulumi_openstack  {baseline:6.2f} s  {baseline_rss / 1024:6.0f} MiB")
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        for workers in SIZES:
            out = directory / f"plan{workers}"
            command = [python, "-m", "tools.plan", "--config-file", str(stack_file(directory, workers)), "--out", str(out)]
            seconds, rss = median_of(args.repeat, command)
            results[workers] = (seconds, rss)
            print(f"plan 3+{workers:<3}  {seconds:6.2f} s  {rss / 1024:6.0f} MiB  ({seconds / baseline:.1f}x baseline)")
        sizes = user_data_sizes(directory / f"plan{SIZES[0]}")
    small, large = results[SIZES[0]][0], results[SIZES[-1]][0]
    slope_low = (results[SIZES[1]][0] - small) / (SIZES[1] - SIZES[0])
    slope_high = (large - results[SIZES[1]][0]) / (SIZES[-1] - SIZES[1])
    print(f"per added worker: {slope_low * 1000:.1f} ms (2->50), {slope_high * 1000:.1f} ms (50->200)")
    print("user_data size per role (largest node): " + ", ".join(f"{role} {size} B" for role, size in sizes.items()))
    checks = {
        f"3+{SIZES[0]} under {TARGET_SMALL_SECONDS} s": small < TARGET_SMALL_SECONDS,
        f"3+{SIZES[0]} within {TARGET_SMALL_RATIO}x of the baseline": small <= TARGET_SMALL_RATIO * baseline,
        f"3+{SIZES[-1]} under {TARGET_LARGE_SECONDS} s": large < TARGET_LARGE_SECONDS,
        "growth linear (slopes within 2x)": slope_high <= 2 * max(slope_low, 1e-3),
    }
    for name, ok in checks.items():
        print(f"  {'met ' if ok else 'MISSED'}  {name}")
    print(json.dumps({"baseline_s": baseline, **{f"plan_3+{w}_s": r[0] for w, r in results.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
