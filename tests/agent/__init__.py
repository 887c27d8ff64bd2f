"""Tests of `toolsets.agent`: the loop, its sessions, events and built-in tools."""
