"""The error an adapter raises when its framework is not installed."""

from __future__ import annotations

from toolsets._install import install_line

__all__ = ["missing_extra"]

PACKAGES = {
    "pydantic-ai": "pydantic-ai-slim",
    "langchain": "langchain-core",
    "langgraph": "langgraph",
    "openai-agents": "openai-agents",
    "adk": "google-adk",
    "smolagents": "smolagents",
    "search": "bm25s",
}
"""The framework each extra installs, as the user knows it."""


def missing_extra(module: str, extra: str, cause: ImportError) -> ImportError:
    """An ImportError saying that ``module`` needs ``extra`` and the line that installs it
    (`install_line`: the distribution is installed from a clone, not from PyPI).

    Raise it ``from`` the original error, at the top of the adapter module::

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
