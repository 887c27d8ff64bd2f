"""Tests of `toolsets.openapi`, against real specs and real HTTP servers on 127.0.0.1."""
