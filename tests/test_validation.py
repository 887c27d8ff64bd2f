"""What checking a call's arguments costs beyond the check itself: a schema is checked
against its meta-schema at most once, in one quick walk for JSON Schema 2020-12, and not
at all when toolsets made it (an API operation's arguments); jsonschema's own meta-schema
check, milliseconds a schema and hundreds of them for a big one, runs only for another
dialect or a schema the walk cannot vouch for. Observed by counting jsonschema's
``check_schema`` calls (spied on, not replaced)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import httpx2
import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from toolsets import ToolContext
from toolsets._invoke import ConfirmationNeeded, Done, invoke
from toolsets._validation import ArgumentChecker, TrustedSchema
from toolsets.openapi import OpenApiToolset


@pytest.fixture
def meta_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The dialects jsonschema's ``check_schema`` was asked to check a schema in."""
    asked: list[str] = []
    for cls in (Draft202012Validator, Draft7Validator):
        original = cls.check_schema

        def spy(
            schema: Any, *args: Any, _cls: Any = cls, _original: Any = original, **kw: Any
        ) -> None:
            asked.append(_cls.__name__)
            _original(schema, *args, **kw)

        monkeypatch.setattr(cls, "check_schema", staticmethod(spy))
    return asked


SHOP: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "shop", "version": "1"},
    "paths": {
        f"/items{n}/{{id}}": {
            "get": {
                "operationId": f"get{n}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                    {"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/Q"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {
                "operationId": f"delete{n}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "responses": {"204": {"description": "gone"}},
            },
        }
        for n in range(3)
    },
    "components": {"schemas": {"Q": {"type": "string", "minLength": 1}}},
}


def answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={"ok": True})


@pytest.mark.anyio
async def test_an_api_operations_schema_is_never_checked_again_against_the_meta_schema(
    meta_checks: list[str],
) -> None:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    async with client, OpenApiToolset(SHOP, base_url="http://shop.test", client=client) as ts:
        tools = {tool.name: tool for tool in await ts.list_tools()}
        for n in range(3):
            for _ in range(2):  # first and later calls alike
                assert await tools[f"get{n}"].run({"id": n, "q": "a"}, ToolContext()) == {
                    "ok": True
                }
            refused = await tools[f"get{n}"].run({"id": "x"}, ToolContext())
            assert "fields" in refused  # type: ignore[operator]
            # The check before a call waits for the user's approval uses the same schema.
            asked = await invoke(tools[f"delete{n}"], {"id": n}, ToolContext(), default_timeout=5)
            assert isinstance(asked, ConfirmationNeeded)
            wrong = await invoke(tools[f"delete{n}"], {"id": "x"}, ToolContext(), default_timeout=5)
            assert isinstance(wrong, Done)
        assert isinstance(tools["get0"].arguments_schema, TrustedSchema)
    assert meta_checks == []


def test_a_2020_12_schema_from_elsewhere_is_vouched_for_in_one_walk(
    meta_checks: list[str],
) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0}, "b": {"$ref": "#/$defs/b"}},
        "$defs": {"b": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["a"],
    }
    checkers = [ArgumentChecker(schema, tool_name=f"tool{n}") for n in range(3)]
    for checker in checkers:
        assert checker.problems({"a": 1, "b": ["x"]}) == []
        assert [field for field, _ in checker.problems({"a": -1, "b": []})] == ["a", "b"]
    assert meta_checks == []


def test_jsonschema_checks_only_what_the_walk_cannot_vouch_for_and_once(
    meta_checks: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    invalid = {"type": "object", "properties": {"a": {"type": "strng"}}}
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"a": {"items": [{"type": "string"}]}},
    }
    unusable = ArgumentChecker(invalid, tool_name="invalid")
    older = ArgumentChecker(draft7, tool_name="older")
    for _ in range(3):
        assert unusable.problems({"a": 1}) == []  # unchecked: the server decides
        assert [field for field, _ in older.problems({"a": [1]})] == ["a.0"]
    assert sorted(meta_checks) == ["Draft202012Validator", "Draft7Validator"]
    assert len([r for r in caplog.records if "cannot be used" in r.getMessage()]) == 1


def test_a_copy_of_a_trusted_schema_is_no_longer_vouched_for() -> None:
    trusted = TrustedSchema({"type": "object", "properties": {"a": {"type": "string"}}})
    for made in (copy.copy(trusted), copy.deepcopy(trusted), pickle.loads(pickle.dumps(trusted))):
        assert type(made) is dict
        assert made == trusted
