"""What a request means beyond its words: a static word embedding for `ToolIndex`.

The vectors are WordLlama's (``wordllama`` on PyPI, MIT: 256 dimensions a token of
Llama 2's tokenizer, distilled from a large language model's token embeddings), read
from the files its wheel ships: nothing is downloaded, and the package itself (its
loader may reach the Hugging Face hub) is never imported. A text's vector is the sum of
its tokens' vectors, normalised: cosine similarity is then a dot product. It puts "give
the customer their money back" near "Create a refund" and "a paper copy" near print,
where no word is shared; it is coarse, so the index adds it to BM25's ranking as one
bonus among others, never alone.

Needs the ``search`` extra: ``pip install 'toolsets-ai[search]'``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolsets._install import install_line

__all__ = ["Embedding", "embedding", "search_extra_missing"]

PACKAGE = "wordllama"
"""The distribution whose files hold the vectors and the tokenizer."""
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
"""The files in it (wordllama 0.4), relative to the package."""
MAX_TOKENS = 256
"""The most tokens of a text that count: a tool's text is its name and a sentence or two."""


def search_extra_missing(cause: ImportError) -> ImportError:
    """The error for a module of the ``search`` extra that is not installed, naming it
    (``cause.name``) and the line that installs the extra."""
    missing = cause.name or str(cause)
    return ImportError(
        f"toolsets.search needs the search extra (bm25s, PyStemmer, wordllama), and "
        f"{missing} is not installed: {install_line('search')}",
        name=cause.name,
    )


class Embedding:
    """Texts to unit vectors (numpy ``float32``, one row a text)."""

    def __init__(self, tokenizer: Any, vectors: Any) -> None:
        self._tokenizer = tokenizer
        self._vectors = vectors
        self.dimensions: int = int(vectors.shape[1])

    @classmethod
    def load(cls) -> Embedding:
        """The vectors and tokenizer of the installed wordllama package (its files are
        read; the package itself is not imported)."""
        try:
            numpy = importlib.import_module("numpy")
            safetensors = importlib.import_module("safetensors.numpy")
            tokenizers = importlib.import_module("tokenizers")
            found = importlib.util.find_spec(PACKAGE)
            if found is None or not found.submodule_search_locations:
                raise ModuleNotFoundError(f"No module named {PACKAGE!r}", name=PACKAGE)
        except ImportError as exc:  # ModuleNotFoundError too
            raise search_extra_missing(exc) from exc
        root = Path(next(iter(found.submodule_search_locations)))
        weights, tokenizer_file = root / WEIGHTS, root / TOKENIZER
        if not (weights.is_file() and tokenizer_file.is_file()):
            raise ImportError(
                f"the installed {PACKAGE} has no {WEIGHTS} and {TOKENIZER} (another version "
                f"than the 0.4 line toolsets reads?): {install_line('search')}",
                name=PACKAGE,
            )
        tables = safetensors.load(weights.read_bytes())
        vectors = numpy.asarray(tables["embedding.weight"], dtype=numpy.float32)
        tokenizer = tokenizers.Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        return cls(tokenizer, vectors)

    def __call__(self, texts: Sequence[str]) -> Any:
        """One unit vector a text (all zeros for a text of no tokens)."""
        numpy = importlib.import_module("numpy")
        found = numpy.zeros((len(texts), self.dimensions), dtype=numpy.float32)
        if not texts:
            return found
        # The fast batch leaves out each token's offsets in the text: not needed here.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        vectors = self._vectors
        for row, encoded in enumerate(encode(list(texts), add_special_tokens=False)):
            ids = encoded.ids
            if ids:
                found[row] = vectors[ids].sum(axis=0)
        norms = numpy.linalg.norm(found, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        found /= norms
        return found


@functools.cache
def embedding() -> Embedding:
    """The process's one `Embedding` (32 MB of vectors), loaded on first use."""
    return Embedding.load()
