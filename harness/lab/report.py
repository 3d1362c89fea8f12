"""Lab runs as a table for people, or as JSON for machines."""

from __future__ import annotations

import json
import os

from harness.lab.runner import LabRun
from harness.lab.observation import Result

COLUMNS = ("scenario", "holders seen", "moved s", "answers s", "requests", "failed (outside)", "2 holders s", "settled")


def as_json(runs: list[LabRun]) -> str:
    return json.dumps([run.as_dict() for run in runs], indent=2)


def as_text(runs: list[LabRun]) -> str:
    return "\n\n".join(_run(run) for run in runs)


def _run(run: LabRun) -> str:
    rows = [COLUMNS] + [_row(result, _common_prefix(list(run.nodes))) for result in run.results]
    widths = [max(len(row[column]) for row in rows) for column in range(len(COLUMNS))]
    lines = [
        f"lab {run.label}: advert_int {run.advert_int:g} s, takeover target {run.budget_s:g} s, {run.wall_s:g} s in all"
    ]
    lines += [
        "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines += [f"  {result.scenario}: {'; '.join(_notes(result))}" for result in run.results if _notes(result)]
    lines.append(f"  outside the faults: two holders {run.split_brain_s:g} s, holder changes {run.quiet_moves}")
    lines.append(f"  left behind: {', '.join(run.leftovers) or 'nothing'}")
    if run.error:
        lines.append(f"  ERROR: {run.error}")
    return "\n".join(lines)


def _row(result: Result, prefix: str) -> tuple[str, ...]:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    return (
        result.scenario,
        " > ".join(name.replace(prefix, "") for name in result.path) or "-",
        seconds(result.moved_s),
        seconds(result.answers_s),
        str(result.requests),
        f"{result.failed} ({'-' if result.failed_outside is None else result.failed_outside})",
        seconds(result.two_holders_s),
        "yes" if result.settled else "NO",
    )


def _notes(result: Result) -> list[str]:
    return [
        f"{name.removesuffix('_s').replace('_', ' ')} {value:g}{' s' if name.endswith('_s') else ''}"
        for name, value in result.figures.items()
    ] + result.notes


def _common_prefix(names: list[str]) -> str:
    """The cluster name part every node name starts with ("ocp4-"), left out of the table."""
    prefix = os.path.commonprefix(names)
    return prefix[: prefix.rfind("-") + 1]
