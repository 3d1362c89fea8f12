"""What the lab adds to harness.netns: pulling a port's cable, and finding what a lab left."""

from __future__ import annotations

from harness import netns
from harness.lab.clock import wait_until
from tests.lab.conftest import need_lab


def test_leftovers_finds_what_a_lab_left_and_nothing_after_close():
    need_lab()
    with netns.lab("leftover") as lab:
        namespace = lab.namespace("node")
        lab.start(namespace, ["sleep", "30"])

        def commands() -> list[str]:
            return [process.split(": ", 1)[1] for process in netns.processes_in(set(lab.created.values()))]

        wait_until(lambda: commands() == ["sleep 30"], 5, "sleep to run in the namespace")  # after `ip netns exec`
    assert lab.leftovers() == []


def test_a_pulled_port_takes_the_carrier_away():
    need_lab()
    with netns.lab("port") as lab:
        namespace = lab.namespace("node")
        port = lab.attach(namespace, "br-ex", "10.0.0.20/16")

        def flags() -> str:
            return lab.run(namespace, ["ip", "-o", "link", "show", "br-ex"]).stdout

        assert "NO-CARRIER" not in flags()
        lab.set_port(port, up=False)
        assert "NO-CARRIER" in flags()
        lab.set_port(port, up=True)
        assert "NO-CARRIER" not in flags()
