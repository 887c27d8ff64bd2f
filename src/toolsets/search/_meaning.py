"""What a request means beyond its words: a static word embedding for `ToolIndex`.

The vectors are WordLlama's (``wordllama`` on PyPI, MIT: 256 dimensions a token of
Llama 2's tokenizer, distilled from a large language model's token embeddings), read
from the files its wheel ships: nothing is downloaded, and the package itself (its
loader may reach the Hugging Face hub) is never imported. A text's vector is the sum of
its tokens' vectors, normalised: cosine similarity is then a dot product. It puts "give
the customer their money back" near "Create a refund" and "a paper copy" near print,
where no word is shared; it is coarse, so the index adds it to BM25's ranking as one
bonus among others, never alone.

It costs about 50 MB once a process (the tokenizer about 33, the vectors 16, kept as
float16 and summed as float32). WordLlama ships wheels for Linux x86_64, macOS on Apple
silicon and Windows, Python 3.13 at most; the ``search`` extra installs it there only.
Where it is not installed the index ranks by words alone, and says so once in the log.

Needs the ``search`` extra: ``pip install 'toolsets-ai[search]'``.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolsets._install import install_line

__all__ = ["Embedding", "embedding", "search_extra_missing"]

logger = logging.getLogger("toolsets")

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
        f"toolsets.search needs the search extra (bm25s, PyStemmer; wordllama's vectors "
        f"where it ships wheels), and {missing} is not installed: {install_line('search')}",
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
        read; the package itself is not imported).

        Raises:
            ImportError: one of them is not installed (``name`` says which), or the
                installed wordllama has not the files of its 0.4 line.
        """
        try:
            safetensors = importlib.import_module("safetensors.numpy")
            tokenizers = importlib.import_module("tokenizers")
            found = importlib.util.find_spec(PACKAGE)
            if found is None or not found.submodule_search_locations:
                raise ModuleNotFoundError(f"No module named {PACKAGE!r}", name=PACKAGE)
        except ImportError as exc:  # ModuleNotFoundError too
            raise search_extra_missing(exc) from exc
        root = Path(next(iter(found.submodule_search_locations)))
        missing = [name for name in (WEIGHTS, TOKENIZER) if not (root / name).is_file()]
        if missing:
            raise ImportError(
                f"the installed {PACKAGE} has no {' nor '.join(missing)} (a version other "
                f"than the 0.4 line toolsets reads?): {install_line('search')}",
                name=PACKAGE,
            )
        vectors = safetensors.load_file(str(root / WEIGHTS))["embedding.weight"]
        tokenizer = tokenizers.Tokenizer.from_file(str(root / TOKENIZER))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        return cls(tokenizer, vectors)

    @classmethod
    def installed(cls) -> Embedding | None:
        """`load`, or None when it cannot: the reason is logged (a warning), and the
        index ranks by words alone."""
        try:
            return cls.load()
        except ImportError as exc:
            logger.warning("toolsets.search ranks by words alone, without meaning: %s", exc)
            return None

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
                found[row] = vectors[ids].sum(axis=0, dtype=numpy.float32)
        norms = numpy.linalg.norm(found, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        found /= norms
        return found


_loaded: list[Embedding | None] = []
"""The process's `Embedding` once asked for (None: not installed)."""
_loading = threading.Lock()


def embedding() -> Embedding | None:
    """The process's one `Embedding`, loaded the first time it is asked for (by one
    thread, however many ask at once); None where wordllama's files are not installed."""
    if not _loaded:
        with _loading:
            if not _loaded:
                _loaded.append(Embedding.installed())
    return _loaded[0]
