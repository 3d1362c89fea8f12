"""The destroy cleanup's optional services are asked of the catalog first (cluster/cleanup_run.py):
a cloud without Octavia, Manila or Swift is never sent a request for them. The whole cleanup runs
against the local cloud, which has Octavia and Manila (tests/localcloud/test_cleanup.py)."""

from __future__ import annotations

import pytest

from cluster.cleanup_run import Cleanup


class CatalogWithout:
    """A connection whose catalog lacks every optional service; any other use fails the test."""

    def __init__(self):
        self.asked: list[str] = []

    def has_service(self, kind: str) -> bool:
        self.asked.append(kind)
        return False

    def __getattr__(self, name: str):
        raise AssertionError(f"the cleanup used {name} on a cloud whose catalog lacks it")


@pytest.mark.parametrize(("step", "service"), [("load_balancers", "load-balancer"), ("shares", "shared-file-system"), ("containers", "object-store")])
def test_a_service_the_catalog_lacks_is_not_asked_for(step, service):
    conn = CatalogWithout()
    cleanup = Cleanup(conn, "ocp4-x7k2p")
    getattr(cleanup, step)()
    assert conn.asked == [service] and cleanup.left == []
