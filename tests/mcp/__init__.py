"""Tests of `toolsets.mcp`, against real MCP servers over stdio and HTTP."""
