"""End-to-end tests: the real toolchain (tests/e2e, marked `e2e`). The fast suite alone:
`venv/bin/python -m pytest -m "not e2e"`; CI runs everything."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)
