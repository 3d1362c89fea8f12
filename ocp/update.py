"""`python -m ocp up --stack S`: a day-2 stack edit applied as `pulumi up` would, with the policy pack on
both the preview and the up (the pack's whole-stack rules stop a change only at a preview), through the
install driver's own preview and up (ocp/driver.py)."""

from __future__ import annotations

from collections.abc import Callable

from ocp import driver, locks, state_guard


def update(name: str, say: Callable[[str], None], go_on: bool = False, replace: tuple[str, ...] = (), clear_dead: bool = False) -> int:
    """Stops (driver.Stop) on a violation, or on a disruption of running machines unless `go_on`, and
    (locks.Locked) while another run holds the stack's lock; `replace`: URNs to replace, as `pulumi up
    --replace`; `clear_dead`: remove a lock whose process is gone from this host first. The number of changes made."""
    stack = driver._stack(name)
    locks.check(stack, say, clear_dead)
    config = state_guard.config_or_none(lambda: driver._config(stack))
    state_guard.check(stack, name, config, driver.Stop, driver._errors)  # the state's commands: this program's, or nothing runs
    say(f"1/2 preview of stack {name}")
    total = driver.preview(stack, say, go_on, replace)
    if total:
        say("2/2 pulumi up")
        driver.up(stack, say, total, replace)
    return total
