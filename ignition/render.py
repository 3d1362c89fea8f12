"""The one Jinja environment every file this program renders goes through.

Strict: a name missing from the context is an error, never an empty string. No HTML
escaping (these are config files), and a template's trailing newline is kept. Only file
contents are templated; Ignition JSON is always built as data (ignition/assembly.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

TEMPLATES = Path(__file__).parent / "templates"

ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    autoescape=False,
)


def render(name: str, /, **context: Any) -> str:
    """`name` is positional-only, so a template may use `name` itself."""
    return ENVIRONMENT.get_template(name).render(**context)
