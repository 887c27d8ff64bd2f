"""Code mode: the model writes one short program that calls a toolset's tools, run in
the `pydantic-monty` sandbox, instead of one model turn per call.

It needs the ``code`` extra: ``pip install 'toolsets-ai[code]'`` (``toolsets-ai`` is not
on PyPI: in a clone of the repository that is ``pip install '.[code]'``). Without it this
package still imports; `code_mode` raises ImportError naming the line to run.
"""

from toolsets.code._code_mode import CodeModeToolset, RunCodeTool, code_mode
from toolsets.code._limits import Limits

__all__ = ["CodeModeToolset", "Limits", "RunCodeTool", "code_mode"]
