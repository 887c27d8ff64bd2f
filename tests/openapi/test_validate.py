"""Full spec validation on demand: every error with its JSON pointer, never on the load
path; real specs (npm @readme/oas-examples), split ones and broken ones of our own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.openapi.helpers import FIXTURES, OAS_EXAMPLES
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

BROKEN: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "broken", "version": "1"},
    "paths": {
        "/a/{id}": {
            "get": {
                "operationId": "get_a",
                # a path parameter must say required: true
                "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/b": {"post": {"operationId": "post_b", "responses": {"200": {"desc": "typo"}}}},
    },
}


async def test_every_error_is_reported_with_its_pointer() -> None:
    async with OpenApiToolset(BROKEN, base_url="http://127.0.0.1:9") as toolset:
        errors = await toolset.validate()
    pointers = {error.pointer for error in errors}
    assert "/paths/~1a~1{id}/get/parameters/0" in pointers
    assert any(pointer.startswith("/paths/~1b/post/responses") for pointer in pointers)
    assert all(f"#{error.pointer}: " in str(error) for error in errors)


async def test_validation_is_not_part_of_loading() -> None:
    # The same document loads (both operations can still be called); validate() is asked.
    async with OpenApiToolset(BROKEN, base_url="http://127.0.0.1:9") as toolset:
        assert [t.name for t in await toolset.list_tools()] == ["get_a", "post_b"]
        assert await toolset.validate()


@pytest.mark.parametrize(
    "path",
    [
        OAS_EXAMPLES / "3.0" / "yaml" / "petstore.yaml",
        OAS_EXAMPLES / "2.0" / "json" / "petstore.json",
        FIXTURES / "swagger2-split" / "yaml" / "api" / "swagger.yaml",
        FIXTURES / "split" / "spec.yaml",
        OAS_EXAMPLES / "3.1" / "json" / "webhooks.json",
        OAS_EXAMPLES / "3.1" / "json" / "train-travel.json",
    ],
    ids=lambda path: "/".join(path.parts[-3:]),
)
async def test_real_specs_validate_clean_including_external_refs(path: Path) -> None:
    async with OpenApiToolset(path, base_url="http://127.0.0.1:9") as toolset:
        assert await toolset.validate() == ()


async def test_an_unknown_version_is_one_error_at_its_pointer() -> None:
    spec = {**BROKEN, "openapi": "4.0.0"}
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as toolset:
        (error,) = await toolset.validate()
    assert error.pointer == "/openapi"


async def test_progress_is_told_each_phase_and_each_operation_checked() -> None:
    told: list[tuple[str, int, int | None]] = []
    async with OpenApiToolset(BROKEN, base_url="http://127.0.0.1:9") as toolset:
        await toolset.validate(progress=lambda *said: told.append(said))
    assert told == [
        ("loading", 0, None),
        ("the document's structure", 0, None),
        ("operations", 1, 2),
        ("operations", 2, 2),
    ]  # (no components: that phase is not reached)


async def test_what_the_validator_remembers_it_still_finds_a_second_time() -> None:
    # Its lists of what it checked answer `in` from a set now: a repeated operationId
    # is still found (and a schema met twice is checked once).
    shared = {"type": "object", "properties": {"a": {"type": "string"}}}
    ok = {"description": "ok", "content": {"application/json": {"schema": shared}}}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "twice", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "same", "responses": {"200": ok}}},
            "/b": {"get": {"operationId": "same", "responses": {"200": ok}}},
        },
    }
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as toolset:
        errors = await toolset.validate()
    assert any("Operation ID 'same'" in str(error) for error in errors)
