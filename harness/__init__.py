"""The test harness: what contributors and the tests run, never the product (harness/README.md).

harness may import tools (the offline plan); the product and tools do not import harness, but for
the one edge tests/test_layout.py lists (the offline plan's real installer asks whether the local
cloud is up).
"""
