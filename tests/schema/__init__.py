"""Tests of `toolsets.schema`: tool declarations in the dialects model APIs accept."""
