"""The error an adapter raises when its framework is not installed."""

from __future__ import annotations

__all__ = ["missing_extra"]

DISTRIBUTION = "toolsets-ai"


def missing_extra(module: str, extra: str, cause: ImportError) -> ImportError:
    """An ImportError saying that ``module`` needs ``extra`` and the line that installs it.

    Raise it ``from`` the original error, at the top of the adapter module::

        try:
            import pydantic_ai
        except ImportError as exc:
            raise missing_extra(__name__, "pydantic-ai", exc) from exc
    """
    missing = cause.name or "a dependency"
    return ImportError(
        f"{module} needs {missing}, which is not installed: pip install '{DISTRIBUTION}[{extra}]'",
        name=cause.name,
    )
