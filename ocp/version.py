"""This program's version, in one place: `python -m ocp --version` and the offline plan's summary
read it. A release sets it, adds its section to CHANGELOG.md and is tagged v<VERSION>
(CONTRIBUTING.md: Releases)."""

VERSION = "0.1.0"


def run_message(command: str) -> str:
    """The message `python -m ocp` gives each update it runs: the update history keeps it, and `python -m ocp status`
    reads from it which release of this program last ran the stack, and who ran it (a file or s3:// backend records
    no user)."""
    import getpass
    import socket

    return f"ocp {VERSION}: {command} by {getpass.getuser()}@{socket.gethostname()}"
