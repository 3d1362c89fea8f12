"""Text that others wrote (a CSR's requester, a lock file's user and host), fit for one printed
line: its control characters, and every other character that is not printable, escaped as Python
writes them (`\x1b`, `\n`, `\u202e`), so that it can neither move the cursor, recolour the
terminal nor break or fake a line of the message around it. Pure Python."""

from __future__ import annotations


def shown(text: str) -> str:
    """`text` with each non-printable character escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
