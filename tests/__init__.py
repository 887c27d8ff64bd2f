"""The test suite. Its folders mirror ``src/toolsets`` (``tests/mcp`` tests ``toolsets.mcp``)
and each has its shared code in its own ``helpers.py``. Every folder is a package, so
pytest puts the repository root on ``sys.path``, never a test folder: ``import mcp`` is
the SDK, not ``tests/mcp``."""
