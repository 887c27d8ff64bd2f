"""What the command line needs beyond the plain install, and the error that says so."""

from __future__ import annotations

from toolsets._install import install_line

__all__ = ["NEEDED", "missing_cli"]

NEEDED = ("click", "rich")
"""The modules the command line needs beyond the plain install (the ``cli`` extra)."""


def missing_cli(cause: ImportError) -> ImportError:
    """The ImportError saying that the command line needs the ``cli`` extra, and the line
    that installs it (naming the clone this copy comes from)."""
    top = (cause.name or "").partition(".")[0]
    missing = f"no module named {top!r}" if top else str(cause)
    return ImportError(
        f"the toolsets command needs the cli extra ({missing}): {install_line('cli')}",
        name=cause.name,
    )
