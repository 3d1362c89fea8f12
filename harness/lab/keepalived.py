"""What the lab needs to know about a rendered keepalived.conf, and about a running keepalived.

`parse` reads the config a node gets (its VIPs, priorities, check weights and timings; no
interface: keepalived-run finds it at run time); `Status` follows the log of a running
keepalived-run and its keepalived (`--log-console`) to know the interface keepalived runs on
and each instance's state and effective priority, which nothing else shows from outside.
"""

from __future__ import annotations

import re
import shlex
import threading
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, ip_interface


@dataclass(frozen=True)
class Script:
    name: str
    interval: float
    rise: int
    fall: int
    weight: int


@dataclass(frozen=True)
class Instance:
    name: str
    vip: IPv4Address | IPv6Address
    priority: int
    advert_int: float
    scripts: tuple[Script, ...]

    @property
    def healthy_priority(self) -> int:
        """The effective priority while every tracked check passes."""
        return self.priority + sum(script.weight for script in self.scripts if script.weight > 0)


@dataclass(frozen=True)
class KeepalivedConf:
    instances: tuple[Instance, ...]

    def instance(self, name: str) -> Instance | None:
        return next((instance for instance in self.instances if instance.name == name), None)


@dataclass
class _Block:
    words: list[str]
    lines: list[list[str]] = field(default_factory=list)
    blocks: list[_Block] = field(default_factory=list)

    def value(self, key: str) -> str:
        return next(line[1] for line in self.lines if line[0] == key)

    def block(self, name: str) -> _Block:
        return next(block for block in self.blocks if block.words == [name])


def _tree(text: str) -> _Block:
    stack = [_Block([])]
    for raw in text.splitlines():
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        if words[-1] == "{":
            block = _Block(words[:-1])
            stack[-1].blocks.append(block)
            stack.append(block)
        elif words == ["}"]:
            stack.pop()
        else:
            stack[-1].lines.append(words)
    return stack[0]


def parse(text: str) -> KeepalivedConf:
    root = _tree(text)
    scripts = {
        block.words[1]: Script(
            name=block.words[1],
            interval=float(block.value("interval")),
            rise=int(block.value("rise")),
            fall=int(block.value("fall")),
            weight=int(block.value("weight")),
        )
        for block in root.blocks
        if block.words[0] == "vrrp_script"
    }
    instances = tuple(
        Instance(
            name=block.words[1],
            vip=ip_interface(block.block("virtual_ipaddress").lines[0][0]).ip,
            priority=int(block.value("priority")),
            advert_int=float(block.value("advert_int")),
            scripts=tuple(scripts[line[0]] for line in block.block("track_script").lines),
        )
        for block in root.blocks
        if block.words[0] == "vrrp_instance"
    )
    return KeepalivedConf(instances)


_EVENT = re.compile(r"\((\w+)\) (?:Changing effective priority from \d+ to (\d+)|Entering (MASTER|BACKUP|FAULT) STATE)")
# keepalived-run's line when it (re)starts keepalived.
_START = re.compile(r"^starting keepalived on (\S+), which holds ")


class Status:
    """State and effective priority of each instance of one running keepalived, from its log."""

    def __init__(self, conf: KeepalivedConf):
        self._lock = threading.Lock()
        self._conf = conf
        self.interface: str | None = None  # where keepalived-run last started keepalived
        self.starts = 0
        self.reset()

    def reset(self) -> None:
        """Back to what a freshly started keepalived has: base priorities, no state yet."""
        with self._lock:
            self._priority = {instance.name: instance.priority for instance in self._conf.instances}
            self._state: dict[str, str] = {}

    def feed(self, line: str) -> None:
        started = _START.match(line)
        if started is not None:
            self.reset()
            with self._lock:
                self.interface = started[1]
                self.starts += 1
            return
        match = _EVENT.search(line)
        if match is None:
            return
        instance, priority, state = match.groups()
        with self._lock:
            if priority is not None:
                self._priority[instance] = int(priority)
            else:
                self._state[instance] = state

    def healthy(self) -> bool:
        """Every instance at its full priority and out of FAULT: ready for the next fault."""
        with self._lock:
            return all(
                self._priority[instance.name] == instance.healthy_priority
                and self._state.get(instance.name) in ("MASTER", "BACKUP")
                for instance in self._conf.instances
            )

    def describe(self) -> str:
        with self._lock:
            return ", ".join(
                f"{name} {self._state.get(name, '-')} {priority}" for name, priority in sorted(self._priority.items())
            )
