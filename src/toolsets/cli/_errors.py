"""The command line's own errors: what a command refuses to do, and what the command
line needs beyond the plain install (the error that says so). Imported before click
and rich are: it needs neither."""

from __future__ import annotations

from toolsets._errors import ToolsetError
from toolsets._install import install_line

__all__ = ["NEEDED", "CommandError", "SourceError", "missing_cli"]

NEEDED = ("click", "rich")
"""The modules the command line needs beyond the plain install (the ``cli`` extra)."""


class CommandError(ToolsetError):
    """What a command refuses to do, said in one line (exit status 1)."""


def missing_cli(cause: ImportError) -> ImportError:
    """The ImportError saying that the command line needs the ``cli`` extra, and the line
    that installs it (naming the clone this copy comes from)."""
    top = (cause.name or "").partition(".")[0]
    missing = f"no module named {top!r}" if top else str(cause)
    return ImportError(
        f"the toolsets command needs the cli extra ({missing}): {install_line('cli')}",
        name=cause.name,
    )


class SourceError(ToolsetError):
    """A SOURCE argument names nothing the command line can use (``.source``)."""

    def __init__(self, message: str, *, source: str) -> None:
        super().__init__(message)
        self.source = source
