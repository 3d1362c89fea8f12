"""This program's version, in one place: `python -m ocp --version` and the offline plan's summary
read it. A release sets it, adds its section to CHANGELOG.md and is tagged v<VERSION>
(CONTRIBUTING.md: Releases)."""

VERSION = "0.1.0"
