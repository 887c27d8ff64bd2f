"""Code mode: the model writes one short program that calls a toolset's tools, run in
the `pydantic-monty` sandbox (the ``code`` extra), instead of one model turn per call."""

from toolsets.code._code_mode import RunCodeTool, code_mode

__all__ = ["RunCodeTool", "code_mode"]
