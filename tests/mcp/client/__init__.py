"""Tests of `toolsets.mcp.client`."""
