"""Tests of `toolsets.mcp.server`."""
