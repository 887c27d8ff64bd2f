"""Tests of `toolsets.models`: the model clients the agent loop talks to."""
