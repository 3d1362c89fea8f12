"""The test harness: what contributors and the tests run, never the product (harness/README.md).

harness may import tools (the offline plan); nothing of the product, tools included, imports
harness (tests/test_layout.py checks it).
"""
