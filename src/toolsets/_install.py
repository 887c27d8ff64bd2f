"""The line that installs an extra of this library, as this copy was installed, and the
error that says an extra is missing.

The distribution (``toolsets-ai``) is installed from a clone of its repository, not
from PyPI (where ``toolsets`` is an unrelated project): the line names that clone.
"""

from __future__ import annotations

import json
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["DISTRIBUTION", "PACKAGES", "install_line", "missing_extra"]

DISTRIBUTION = "toolsets-ai"
"""The distribution's name (``pyproject.toml``'s ``project.name``)."""


def _clone_running() -> Path | None:
    """The clone this copy is imported from (``src/toolsets`` of a checkout), or None."""
    root = Path(__file__).resolve().parent.parent.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return root if project.get("project", {}).get("name") == DISTRIBUTION else None


def _clone_installed_from() -> Path | None:
    """The directory this distribution was installed from (PEP 610's
    ``direct_url.json``), or None (from an index, a wheel, or not installed)."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        url = json.loads(text or "").get("url", "")
    except (ValueError, AttributeError):
        return None
    parsed = urlparse(url)
    if parsed.scheme != "file" or "dir_info" not in json.loads(text or "{}"):
        return None
    path = Path(unquote(parsed.path))
    return path if path.is_dir() else None


def install_line(extra: str) -> str:
    """The command that adds ``extra`` to this install: ``pip install '/clone[extra]'``
    naming the clone this copy comes from, or else how to run it in one."""
    clone = _clone_running() or _clone_installed_from()
    if clone is not None:
        return f"pip install '{clone}[{extra}]'"
    return (
        f"pip install '.[{extra}]' in your clone of {DISTRIBUTION} (it is not on PyPI, "
        "where toolsets is another project)"
    )


PACKAGES = {
    "pydantic-ai": "pydantic-ai-slim",
    "langchain": "langchain-core",
    "langgraph": "langgraph",
    "openai-agents": "openai-agents",
    "adk": "google-adk",
    "smolagents": "smolagents",
    "search": "bm25s",
    "code": "pydantic-monty",
    "cache": "hishel",
    "otel": "opentelemetry-sdk",
    "redis": "redis",
    "keyring": "keyring",
}
"""The framework each extra installs, as the user knows it."""


def missing_extra(module: str, extra: str, cause: ImportError) -> ImportError:
    """An ImportError saying that ``module`` needs ``extra`` and the line that installs it
    (`install_line`: the distribution is installed from a clone, not from PyPI).

    Raise it ``from`` the original error, at the top of the module that needs it::

        try:
            import pydantic_ai
        except ImportError as exc:
            raise missing_extra(__name__, "pydantic-ai", exc) from exc
    """
    package = PACKAGES.get(extra, extra)
    missing = f"no module named {cause.name!r}" if cause.name else str(cause)
    return ImportError(
        f"{module} needs {package}, which is not installed ({missing}): {install_line(extra)}",
        name=cause.name,
    )
