"""A stack's report (ocp/status.py) for people (`table`) and for machines (`as_json`, schema `ocp-status/1`:
docs/day2.md, "Every morning", shows every key; tests/ocp/test_status.py holds the two to each other). A key is
never removed nor changes meaning within `ocp-status/1`; times are UTC, ISO 8601; absent values are null. The
reports of `status --all` (ocp/status_all.py): `fleet_table`, and `fleet_json` (schema `ocp-status-all/1`, the same rules)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ocp.status import Report
from ocp.status_all import Fleet, Unread, first_reason

SCHEMA = "ocp-status/1"


def _when(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def as_json(report: Report) -> dict[str, Any]:
    last, lock, drift, cluster, capacity = report.last_update, report.lock, report.drift, report.cluster, report.capacity
    return {
        "schema": SCHEMA,
        "stack": report.stack,
        "readAt": _when(report.read_at),
        "verdict": report.verdict,
        "exitCode": report.exit_code,
        "problems": report.problems(),
        "unknowns": report.unknowns(),
        "lastUpdate": None if last is None else {
            "kind": last.kind, "result": last.result, "started": _when(last.started), "ended": _when(last.ended),
            "by": last.by, "via": last.via, "ocpVersion": last.version or None,
        },
        "lock": {
            "read": lock.read, "why": lock.why or None,
            "holders": [{"holder": h.holder, "pid": h.pid, "since": _when(h.since), "state": h.state, "where": h.where} for h in lock.holders],
        },
        "drift": {
            "read": drift.read, "why": drift.why or None,
            "changes": [
                {"resource": c.resource, "type": c.type, "id": c.id or None, "op": c.op, "keys": list(c.keys), "kept": list(c.kept), "expected": c.expected, "why": c.why, "run": c.run or None}
                for c in drift.changes
            ],
        },
        "cluster": {
            "read": cluster.read, "why": cluster.why or None, "version": cluster.version or None,
            "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in cluster.conditions],
            "nodes": [{"name": n.name, "ready": n.ready, "reason": n.reason} for n in cluster.nodes],
            "degradedOperators": [{"name": o.name, "reason": o.reason, "message": o.message} for o in cluster.degraded],
            "pendingRequests": [{"name": r.name, "node": r.node or None, "kind": r.kind, "verdict": r.verdict, "reason": r.reason} for r in cluster.pending],
            "nearestExpiry": None if cluster.expiry is None else {
                "what": cluster.expiry.what, "notAfter": _when(cluster.expiry.not_after), "days": round(cluster.expiry.days, 1),
            },
        },
        "capacity": {
            "read": capacity.read, "why": capacity.why or None,
            "nextWorker": [{"quota": r.quota, "need": r.need, "free": r.free, "limit": r.limit, "fits": r.fits} for r in capacity.rooms],
        },
    }


def table(report: Report) -> str:
    """The report for people: one section per part, what is wrong first."""
    data = as_json(report)
    lines = [f"stack {report.stack}: {report.verdict} (exit {report.exit_code}), read {data['readAt']}"]
    lines += [f"  ! {problem}" for problem in data["problems"]] + [f"  ? {unknown}" for unknown in data["unknowns"]]
    last = data["lastUpdate"]
    lines.append("last update: " + (
        f"{last['kind']} {last['result']} at {last['ended'] or last['started']}, by {last['by']} via {last['via']}"
        + (f" (ocp {last['ocpVersion']})" if last["ocpVersion"] else " (no ocp version recorded)")
        if last else report.history_why
    ))
    lock = data["lock"]
    if not lock["read"]:
        lines.append(f"lock: not read ({lock['why']})")
    else:
        lines.append("lock: " + ("none" if not lock["holders"] else "; ".join(
            f"{h['holder'] or '(unreadable lock)'} pid {h['pid']} since {h['since']} ({h['state']})" for h in lock["holders"])))
    drift = data["drift"]
    real = sum(not change["expected"] for change in drift["changes"])
    lines.append("drift: " + (f"not read ({drift['why']})" if not drift["read"] else f"{real} of {len(drift['changes'])} changed resources" if drift["changes"] else "none"))
    for change in drift["changes"]:
        mark = "expected" if change["expected"] else "DRIFT"
        keys = f" [{', '.join(change['keys'])}]" if change["keys"] else ""
        keys += f" (the cluster's, kept: {', '.join(change['kept'])})" if change["kept"] else ""
        lines.append(f"  {mark:8} {change['op']:7} {change['resource']} ({change['type']}){keys}: {change['why']}")
        if change["run"]:
            lines.append(f"           run: {change['run']}")
    cluster = data["cluster"]
    if not cluster["read"]:
        lines.append(f"cluster: not read ({cluster['why']})")
    else:
        conditions = ", ".join(f"{c['type']}={c['status']}" for c in cluster["conditions"]) or "no conditions"
        lines.append(f"cluster: version {cluster['version'] or 'unknown'} ({conditions})")
        ready = sum(n["ready"] for n in cluster["nodes"])
        lines.append(f"  nodes: {ready} of {len(cluster['nodes'])} Ready" + "".join(
            f"; {n['name']} NotReady ({n['reason']})" for n in cluster["nodes"] if not n["ready"]))
        lines += [f"  operator {o['name']} Degraded: {o['reason']}: {o['message']}" for o in cluster["degradedOperators"]]
        lines += [f"  request {r['name']} ({r['kind']}, {r['node'] or 'no node'}) pending, the approver: {r['verdict']}: {r['reason']}" for r in cluster["pendingRequests"]]
        expiry = cluster["nearestExpiry"]
        lines.append(f"  nearest expiry: {expiry['what']} on {expiry['notAfter']} (in {expiry['days']} days)" if expiry else "  nearest expiry: none read")
    capacity = data["capacity"]
    if not capacity["read"]:
        lines.append(f"capacity: not read ({capacity['why']})")
    else:
        lines.append("capacity for the next worker: " + (", ".join(
            f"{r['quota']} {r['need']} of {'unlimited' if r['free'] is None else r['free']} left{'' if r['fits'] else ' (DOES NOT FIT)'}"
            for r in capacity["nextWorker"]) or "nothing it needs is limited"))
    return "\n".join(lines)


FLEET_SCHEMA = "ocp-status-all/1"
UNREAD_SCHEMA = "ocp-status-unread/1"


def fleet_json(fleet: Fleet) -> dict[str, Any]:
    """`status --all --json` (schema `ocp-status-all/1`, docs/day2.md): each stack's `ocp-status/1` report, or an
    `ocp-status-unread/1` entry for a stack that could not be read (the keys every entry shares, nothing else)."""
    return {
        "schema": FLEET_SCHEMA,
        "project": fleet.project,
        "readAt": _when(fleet.read_at),
        "exitCode": fleet.exit_code,
        "counts": fleet.counts(),
        "listing": {"by": "backend files" if fleet.listing_why else "pulumi stack ls", "why": fleet.listing_why or None},
        "stacks": [
            {
                "schema": UNREAD_SCHEMA, "stack": entry.stack, "readAt": _when(entry.read_at), "verdict": entry.verdict,
                "exitCode": entry.exit_code, "problems": [], "unknowns": [f"stack: {entry.why}"],
            } if isinstance(entry, Unread) else as_json(entry)
            for entry in fleet.entries
        ],
    }


def fleet_table(fleet: Fleet, verbose: bool = False) -> str:
    """One row per stack (its verdict, last update, lock, drift and first reason), a summary line; with `verbose`,
    then each stack's own table."""
    rows = [("STACK", "VERDICT", "EXIT", "LAST UPDATE", "LOCK", "DRIFT", "FIRST REASON")]
    for entry in fleet.entries:
        if isinstance(entry, Unread):
            rows.append((entry.stack, entry.verdict, str(entry.exit_code), "-", "-", "-", first_reason(entry).removeprefix(": ")))
            continue
        last = entry.last_update
        when = f"{last.kind} {last.result} {_when(last.ended or last.started)}" if last else "none"
        lock = "not read" if not entry.lock.read else ", ".join(f"{h.holder or '?'} ({h.state})" for h in entry.lock.holders) or "none"
        real = sum(not change.expected for change in entry.drift.changes)
        drift = "not read" if not entry.drift.read else str(real) if real else "none"
        rows.append((entry.stack, entry.verdict, str(entry.exit_code), when, lock, drift, first_reason(entry).removeprefix(": ")))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)) + "  " + row[-1] for row in rows]
    counts = fleet.counts()
    lines.append(
        f"{len(fleet.entries)} stack{'s' if len(fleet.entries) != 1 else ''} of project {fleet.project}: {counts['healthy']} healthy, "
        f"{counts['drift']} drift, {counts['unhealthy']} unhealthy, {counts['unknown']} could not tell; exit {fleet.exit_code}"
        + ("" if fleet.entries else " (no stack found: is `pulumi login` the backend you meant?)")
    )
    if fleet.listing_why:
        lines.append(fleet.listing_why)
    if verbose:
        for entry in fleet.entries:
            lines += ["", f"stack {entry.stack}: {entry.verdict} (exit {entry.exit_code}): could not be read: {entry.why}" if isinstance(entry, Unread) else table(entry)]
    return "\n".join(lines)
