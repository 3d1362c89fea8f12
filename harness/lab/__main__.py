"""python -m harness.lab: run a stack's on-node networking for real, in network namespaces."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pulumi

from harness.lab import report
from harness.lab.nodes import SHAPES, load_plan
from harness.lab.runner import Interrupted, LabFailed, LabRun, run_lab, run_shapes, unavailable
from harness.lab.scenarios import SCENARIOS
from tools.plan import PlanError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.lab",
        description="Run a stack's keepalived, haproxy and API VIP redirect, as rendered, in network "
        "namespaces, and measure how VIPs move under faults (docs/lab.md).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml")
    source.add_argument("--config-file", help="path of a Pulumi.<stack>.yaml")
    parser.add_argument(
        "--shape",
        action="append",
        choices=[*SHAPES, "all"],
        help="node counts: as-is (default), compact (no workers), five-masters, dual-stack (compact, IPv6 VIPs observed), or all; several run side by side",
    )
    parser.add_argument("--scenario", choices=list(SCENARIOS), help="run this one (after those it needs)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (plan, logs, requests)")
    args = parser.parse_args(argv)
    shapes = list(SHAPES) if "all" in (args.shape or []) else list(dict.fromkeys(args.shape or ["as-is"]))

    reason = unavailable()
    if reason:
        print(f"error: the lab cannot run here: {reason}", file=sys.stderr)
        return 2
    try:
        if len(shapes) == 1:
            runs = [_run(args, shapes[0])]
        else:
            passed = [f"--stack={args.stack}" if args.stack else f"--config-file={Path(args.config_file).resolve()}"]
            passed += [f"--scenario={args.scenario}"] * bool(args.scenario) + ["--keep"] * args.keep
            runs = run_shapes(passed, shapes)
    except (PlanError, pulumi.RunError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except LabFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return error.code
    except Interrupted as error:
        print(error, file=sys.stderr)
        return 130
    print(report.as_json(runs) if args.json else report.as_text(runs))
    return 1 if any(run.error or run.leftovers for run in runs) else 0


def _run(args: argparse.Namespace, shape: str) -> LabRun:
    workdir = Path(tempfile.mkdtemp(prefix="ocp-lab-"))
    try:
        return run_lab(
            load_plan(args.stack, args.config_file, shape, workdir / "plan"),
            workdir,
            [args.scenario] if args.scenario else [],
        )
    finally:
        if args.keep:
            print(f"work directory ({shape}): {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
