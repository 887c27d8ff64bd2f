"""The index's sense of meaning: WordLlama's static vectors, read from the installed
package's files (the search extra), and what they decide in a ranking."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy
import pytest

from tests.helpers import ROOT
from toolsets import FunctionTool
from toolsets.search import IndexEntry, ToolIndex, _meaning
from toolsets.search._meaning import Embedding, embedding


def vectors() -> Embedding:
    found = embedding()
    assert found is not None, "the search extra installs wordllama on this platform"
    return found


def test_each_text_gets_one_unit_vector_and_a_text_of_no_tokens_none() -> None:
    made = vectors()(["Create a refund", "List all charges", ""])
    assert made.shape == (3, vectors().dimensions)
    assert made.dtype == numpy.float32
    assert numpy.allclose(numpy.linalg.norm(made[:2], axis=1), 1.0, atol=1e-5)
    assert not made[2].any()
    assert vectors()([]).shape == (0, vectors().dimensions)


def test_a_request_is_nearer_what_it_means_than_what_shares_its_subject() -> None:
    request, refund, charges = vectors()(
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


def test_without_the_vectors_the_reason_is_logged_and_there_is_no_embedding(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)
    with caplog.at_level(logging.WARNING, logger="toolsets"):
        assert Embedding.installed() is None
    [record] = caplog.records
    assert "ranks by words alone" in record.getMessage()
    assert "wordllama" in record.getMessage()


def test_a_wordllama_without_the_files_read_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_meaning, "WEIGHTS", "weights/none_such.safetensors")
    with pytest.raises(ImportError) as caught:
        Embedding.load()
    assert caught.value.name == "wordllama"
    assert "weights/none_such.safetensors" in str(caught.value)


WITHOUT_VECTORS = """
import sys
sys.modules["wordllama"] = None  # as where the extra does not install it
from toolsets import FunctionTool
from toolsets.search import IndexEntry, ToolIndex

def refund_order(order: str) -> str:
    \"\"\"Give a shopper their money back for an order.\"\"\"
    return order

def send_invoice(order: str) -> str:
    \"\"\"Mail the bill for an order.\"\"\"
    return order

index = ToolIndex.build(IndexEntry.of(FunctionTool(f)) for f in (send_invoice, refund_order))
print([match.name for match in index.search("refund the order", 2)])
"""


def test_without_the_vectors_the_index_ranks_by_words_alone_and_says_so() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_VECTORS],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['refund_order', 'send_invoice']"
    assert "ranks by words alone" in done.stderr


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
