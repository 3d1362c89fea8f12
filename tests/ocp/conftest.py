"""The real Kubernetes API server (harness/kubeapi.py) the approver's modules judge CSRs against: one per module."""

from __future__ import annotations

import pytest

from harness import kubeapi


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """etcd, kube-apiserver and the csrsigning controller on 127.0.0.1 (skipped without the toolchain's)."""
    reason = kubeapi.missing()
    if reason:
        pytest.skip(reason)
    with kubeapi.running(tmp_path_factory.mktemp("kubeapi"), controllers=("csrsigning",)) as running:
        yield running
