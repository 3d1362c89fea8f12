"""`python -m ocp status --all` without an engine: the whole's exit code from each stack's, the reading side by
side (bounded, in the listed order, a stack that cannot be opened or read being its own entry, one progress line
each), the JSON against the shape docs/day2.md documents, the table and the arguments. The engine and the backend:
tests/e2e/test_status_all.py."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import replace

import pytest
from pulumi import automation as auto

from ocp.__main__ import main
from ocp.status import Cluster, Drift
from ocp.status_cluster import Operator, Request
from ocp.status_all import Fleet, Unread, read_all
from ocp.status_drift import RULE, Step, changes
from ocp.status_render import FLEET_SCHEMA, UNREAD_SCHEMA, fleet_json, fleet_table
from tests.conftest import ROOT
from tests.ocp.test_status import NOW, RULE_URN, documented, full_report, shape

HEALTHY = full_report()
DRIFTED = full_report(stack="prod", drift=Drift(True, changes=changes([Step("delete", RULE, RULE_URN, {"id": "r-1"}, {})], "prod")))
UNTOLD = full_report(stack="lab", cluster=Cluster(False, "the cluster's API did not answer: timeout"))
UNREAD = Unread("old", NOW, "the stack could not be opened: error: no stack named 'old' found")


def fleet(*entries) -> Fleet:
    return Fleet("ocp", NOW, "", entries)


def test_the_whole_exit_code_is_the_worst_told():
    assert fleet(HEALTHY).exit_code == 0
    assert fleet(HEALTHY, UNTOLD).exit_code == 2 and fleet(HEALTHY, UNREAD).exit_code == 2
    assert fleet(HEALTHY, UNTOLD, UNREAD, DRIFTED).exit_code == 1  # what is read and wrong says 1 beside what is not
    assert fleet().exit_code == 2  # no stack found: most likely the wrong backend, not a healthy fleet
    assert fleet(HEALTHY, UNTOLD, UNREAD, DRIFTED).counts() == {"healthy": 1, "drift": 1, "unhealthy": 0, "unknown": 2}


def test_stacks_are_read_side_by_side_at_most_jobs_at_once_and_one_failing_stops_none():
    running, most, guard = [0], [0], threading.Lock()
    reports = {"a": HEALTHY, "b": DRIFTED, "e": UNTOLD, "f": HEALTHY}

    def open_stack(name: str):
        if name == "c":
            raise auto.CommandError(auto.CommandResult(stdout="", stderr="error: no stack named 'c' found", code=255))
        return name

    def read(name):
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with guard:
            running[0] -= 1
        if name == "d":
            raise RuntimeError("the cloud went away\nmid-read")
        return reports[name]

    lines: list[str] = []
    began = time.monotonic()
    entries = read_all(["a", "b", "c", "d", "e", "f"], open_stack, read, 2, lines.append)
    assert time.monotonic() - began < 1.0  # five reads of 0.2 s, two at once: not one after the other
    assert most[0] == 2
    assert [entry.stack for entry in entries] == ["dev", "prod", "c", "d", "lab", "dev"]  # the listed order
    assert isinstance(entries[2], Unread) and entries[2].why == "the stack could not be opened: stderr: error: no stack named 'c' found"
    assert isinstance(entries[3], Unread) and entries[3].why == "reading it failed: RuntimeError: mid-read"
    assert len(lines) == 6 and all(re.match(r"\[\d/6 0m0\ds\] ", line) for line in lines), lines
    assert any(line.endswith("] c: unknown (exit 2): the stack could not be opened: stderr: error: no stack named 'c' found") for line in lines)


def documented_all() -> dict:
    """The second JSON block of docs/day2.md's "Every morning" (the first is one stack's)."""
    text = (ROOT / "docs" / "day2.md").read_text()
    section = text[text.index("## Every morning"):text.index("## Beyond stack edits")]
    return json.loads(re.findall(r"```json\n(.*?)\n```", section, re.S)[1])


def test_the_json_has_exactly_the_documented_keys():
    full = full_report(  # something in every list of the report, as the single-stack test has it
        cluster=replace(HEALTHY.cluster, degraded=(Operator("network", "R", "M"),), pending=(Request("csr-x", "w-0", "client", "never", "why"),)),
        drift=DRIFTED.drift,
    )
    made = json.loads(json.dumps(fleet_json(Fleet("ocp", NOW, "`pulumi stack ls` failed (x): listed from the files", (full, UNREAD)))))
    doc = documented_all()
    assert made["schema"] == FLEET_SCHEMA == doc["schema"]
    assert shape({**made, "stacks": []}) == shape({**doc, "stacks": []})
    (report_doc, unread_doc) = doc["stacks"]
    assert report_doc["schema"] == made["stacks"][0]["schema"] == documented()["schema"]
    assert shape(made["stacks"][0]) == shape(documented())  # each stack's entry: the single-stack report, whole
    assert made["stacks"][1]["schema"] == UNREAD_SCHEMA == unread_doc["schema"] and shape(made["stacks"][1]) == shape(unread_doc)
    assert (made["exitCode"], made["listing"]["by"], made["stacks"][1]["unknowns"]) == (1, "backend files", [f"stack: {UNREAD.why}"])
    assert {key: made["stacks"][1][key] for key in ("verdict", "exitCode", "problems")} == {"verdict": "unknown", "exitCode": 2, "problems": []}


def test_the_table_has_a_row_per_stack_and_the_summary():
    text = fleet_table(fleet(HEALTHY, DRIFTED, UNREAD))
    lines = text.splitlines()
    assert lines[0].split() == ["STACK", "VERDICT", "EXIT", "LAST", "UPDATE", "LOCK", "DRIFT", "FIRST", "REASON"]
    assert lines[1].split()[:3] == ["dev", "healthy", "0"] and "update succeeded 2026-11-28T23:00:00Z" in lines[1]
    assert lines[2].split()[:3] == ["prod", "drift", "1"] and "drift: ocp4-worker-ingress-https" in lines[2]
    assert lines[3].split()[:3] == ["old", "unknown", "2"] and lines[3].endswith("no stack named 'old' found")
    assert lines[4] == "3 stacks of project ocp: 1 healthy, 1 drift, 0 unhealthy, 1 could not tell; exit 1"
    verbose = fleet_table(fleet(HEALTHY, UNREAD), verbose=True)
    assert "stack dev: healthy (exit 0), read 2026-11-29T07:00:00Z" in verbose and "stack old: unknown (exit 2): could not be read: " in verbose
    assert "no stack found" in fleet_table(fleet())


def test_all_and_stack_are_one_or_the_other_and_jobs_go_with_all(capsys):
    for argv in (["status"], ["status", "--all", "--stack", "dev"], ["status", "--stack", "dev", "--jobs", "2"], ["status", "--all", "--jobs", "0"]):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2, argv
    assert "--jobs and --verbose go with --all" in capsys.readouterr().err
