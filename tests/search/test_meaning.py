"""The index's sense of meaning: WordLlama's static vectors, read from the installed
package's files (the search extra), and what they decide in a ranking."""

from __future__ import annotations

import sys

import numpy
import pytest

from toolsets import FunctionTool
from toolsets.search import IndexEntry, ToolIndex
from toolsets.search._meaning import Embedding, embedding


def test_each_text_gets_one_unit_vector_and_a_text_of_no_tokens_none() -> None:
    vectors = embedding()(["Create a refund", "List all charges", ""])
    assert vectors.shape == (3, embedding().dimensions)
    assert vectors.dtype == numpy.float32
    assert numpy.allclose(numpy.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert not vectors[2].any()
    assert embedding()([]).shape == (0, embedding().dimensions)


def test_a_request_is_nearer_what_it_means_than_what_shares_its_subject() -> None:
    request, refund, charges = embedding()(
        ["give the customer their money back", "Create a refund", "List all charges"]
    )
    assert request @ refund > request @ charges + 0.2


def test_the_vectors_are_loaded_once_a_process() -> None:
    assert embedding() is embedding()


@pytest.mark.parametrize("module", ["wordllama", "tokenizers", "safetensors.numpy"])
def test_loading_without_the_search_extra_names_the_missing_module(
    monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError) as caught:
        Embedding.load()
    assert caught.value.name == module
    assert "[search]" in str(caught.value)


def archive_document(document: str) -> str:
    """Move a document to the archive."""
    return document


def print_document(document: str) -> str:
    """Send a document to the printer."""
    return document


def translate_document(document: str) -> str:
    """Translate a document into another language."""
    return document


@pytest.mark.parametrize(
    ("request_", "meant"),
    [
        ("I need a paper copy of the document", "print_document"),
        ("the document should be in Spanish", "translate_document"),
    ],
)
def test_tools_the_words_tie_on_are_ranked_by_what_the_request_means(
    request_: str, meant: str
) -> None:
    tools = (archive_document, print_document, translate_document)
    index = ToolIndex.build(IndexEntry.of(FunctionTool(f)) for f in tools)
    assert [match.name for match in index.search(request_, 1)] == [meant]
