"""Reading /proc for a diagnosis: a file's text, or why it could not be read, never an error
(a task can end between listing and reading it)."""

from __future__ import annotations

from pathlib import Path


def read(path: Path) -> str:
    """The file's text, or its error in parentheses."""
    try:
        return path.read_text(errors="replace")
    except OSError as e:
        return f"({e.strerror})"
