"""The ``toolsets`` command: list, inspect and call the tools of OpenAPI specs, MCP
servers and Python modules, validate specs, chat with an agent over them, and serve them
over MCP. Installed with the ``cli`` extra (click and rich)::

    pip install '.[cli]'    # in a clone of the repository (toolsets-ai is not on PyPI)
    pip install 'toolsets-ai[cli] @ file:///path/to/the/clone'    # from elsewhere
    toolsets --help
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from toolsets.cli._errors import NEEDED, missing_cli

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``toolsets`` command with ``argv`` (default: the process's arguments) and
    exit with its status. Without the ``cli`` extra, says in one line how to install it."""
    try:
        from toolsets.cli import _app
    except ImportError as exc:
        if exc.name not in NEEDED and "[cli]" not in str(exc):
            raise
        message = str(exc) if "[cli]" in str(exc) else str(missing_cli(exc))
        print(f"toolsets: {message}", file=sys.stderr)  # noqa: T201
        sys.exit(1)
    sys.exit(_app.main(list(sys.argv[1:] if argv is None else argv)))
