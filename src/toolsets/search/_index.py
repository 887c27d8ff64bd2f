"""`ToolIndex`: the tools of a catalogue ranked for a request in the user's words.

Needs the ``search`` extra (bm25s, PyStemmer; WordLlama's vectors where they are
installed). Building reads each tool's name, description and, for an OpenAPI tool, its
method, path, tags and what it takes (its query and body parameters' names and
descriptions, read off the raw operation): never its declaration, so indexing a
catalogue of thousands of operations builds none of their schemas
(`benchmarks/catalog.py` measures the build).

How a request is ranked, in order:

1. Its words are stemmed, stop words left out; each word's related words in API
   vocabulary (`_lexicon.RELATED`: "bookmark" → star, "money back" → refund, "PR" →
   pull request, "my" → authenticated user) are searched too, at a lower weight.
2. BM25 (bm25s) scores three fields apart and adds them: the head (the name split into
   words, the path's words, the summary, the tags), the description and the inputs,
   weighted less: an operation's name says what it does, its description and
   parameters also what it touches ("due date" finds the milestone's ``due_on``).
3. The best candidates are then re-ranked by what BM25 cannot see: how much of the tool's
   name the request covers (``issues_list_for_repo`` for "list the issues of a repo"
   over ``issues_list_labels_for_repo``); whether its HTTP method is the one the verb
   that leads the request asks for (create → POST, remove → DELETE, show → GET, rename
   → PATCH; a question reads unless a verb follows, a yes-no one ("did the refund
   reach her?") always; no verb, no method); how many of the
   request's words it has in any field (all of them, over one rare word); whether its path
   ends in a collection or in one item, as the request asks (a new thing is POSTed to
   the collection, things in the plural are listed, one by number is one item); whether
   the request names one of its inputs that its name does not have (what to change:
   "archive the repo" is the repository's update, whose body has ``archived``); and
   how deep its path goes beyond what the request names (a top-level resource above
   its sub-resources); and how near the request's meaning is to the tool's (`_meaning`:
   static word vectors of the request and of the tool's name, summary and first
   sentence, "a paper copy" near print where no word is shared).

The bonuses are in units of the best BM25 score of the request, so that they weigh the
same for a short request as for a long one.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolsets._forwarding import ForwardingTool
from toolsets._tool import Tool
from toolsets.search._lexicon import INTENTS, NOUNS_TOO, RELATED, STOPWORDS
from toolsets.search._meaning import embedding, search_extra_missing
from toolsets.search._spelling import Spelling, frequencies
from toolsets.search._text import Terms, words

if TYPE_CHECKING:
    from toolsets.openapi._model import Operation

__all__ = ["IndexEntry", "Match", "ToolIndex"]

RELATED_WEIGHT = 0.7
"""A related word's weight in the BM25 query, against 1 for the request's own words."""
TYPO_WEIGHT = 1.0
"""The weight of the word a typo was taken for ("refnud" → refund)."""
PHRASE_WEIGHT = 1.5
"""A word related to two of the request's words together ("money back" → refund): a
phrase says more than one word."""
DESCRIPTION_WEIGHT = 0.3
"""The description's BM25 score's weight, against 1 for the head's."""
INPUTS_WEIGHT = 0.45
"""The inputs' (parameters') BM25 score's weight, against 1 for the head's."""
HEAD_K1 = 1.5
HEAD_B = 0.75
"""BM25's term-frequency saturation and length normalisation for the head field."""
CANDIDATES = 40
"""How many of BM25's best are re-ranked."""
NAME_COVERAGE = 0.3
"""Bonus, in units of the best BM25 score, for a name whose words the request all has."""
METHOD_BONUS = 0.225
"""Bonus for a method the request's verb asks for; lost again for one it does not."""
COLLECTION_BONUS = 0.05
"""Bonus for a list (a path ending in a literal segment) when the request reads things in
the plural; for one thing (a path ending in a parameter) when it names one by number."""
COVERAGE = 0.5
"""Bonus, in units of the best BM25 score, for a tool that has every word of the request
somewhere (name, path, summary, description, inputs): BM25 sums words, and lets one rare
word outweigh the rest of a request that another tool has all of."""
INPUT_BONUS = 0.1
"""Bonus per word of the request (two at most) that names one of a tool's inputs and not
the tool: what to change, or what to filter by ("archive the repo": ``archived`` of the
repository's update)."""
DEPTH_PENALTY = 0.12
"""Penalty per path segment the request does not name, beyond the first."""
MEANING = 1.0
"""Bonus per unit of cosine similarity between the request's and the tool's vectors
(`_meaning`: what it says, beyond the words it shares)."""
MEANING_CHARS = 300
"""How much of a description's first sentence a tool's vector reads."""


_MAX_WRAPPERS = 32
"""How many wrappers deep `IndexEntry.of` looks for an OpenAPI tool."""


@dataclass(frozen=True, slots=True)
class Match:
    """One tool found for a request."""

    name: str
    """The tool's name."""
    summary: str
    """One line for the model: what the tool does."""
    why: str
    """Why it matched, short (``name: star; method PUT for 'bookmark'``)."""
    score: float
    """Higher is better; comparable only within one search."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What the index knows of one tool."""

    name: str
    """The tool's name."""
    description: str = ""
    """Summary and description, as the tool has them."""
    method: str | None = None
    """The HTTP method, for an OpenAPI tool (any case)."""
    path: str | None = None
    """The URL path template, for an OpenAPI tool."""
    tags: tuple[str, ...] = ()
    """The operation's tags."""
    summary: str = ""
    """The operation's one-line summary, when it has one apart from the description."""
    inputs: tuple[str, ...] = ()
    """What it takes, one text each: an OpenAPI operation's query, header and body
    parameters, by name, the first sentence of their description and the values their
    schema lists (``state Indicates the state... open closed all``). Path parameters are
    left out: the path has them."""

    @classmethod
    def of(cls, tool: Tool) -> IndexEntry:
        """The entry for ``tool``: an OpenAPI tool's operation (method, path, summary,
        tags) when it is one or wraps one (``prefixed``, ``renamed``...), else its name
        and description. Never builds the tool's declaration."""
        from toolsets.openapi._tool import RestApiTool

        inner: object = tool
        for _ in range(_MAX_WRAPPERS):
            if not isinstance(inner, ForwardingTool):
                break
            inner = inner.tool
        if not isinstance(inner, RestApiTool):
            return cls(name=tool.name, description=tool.description)
        op = inner.operation
        return cls(
            name=tool.name,
            description=tool.description,
            method=op.method,
            path=op.path,
            tags=tuple(op.tags),
            summary=op.summary,
            inputs=_inputs(op),
        )


INPUT_CHARS = 120
"""How much of a parameter's description an entry keeps: its first sentence, at most."""
ENUM_VALUES = 12
"""How many of an input's listed values an entry keeps."""


def _first_sentence(text: str) -> str:
    line = _TAG.sub("", text).strip().split("\n", 1)[0]
    end = line.find(". ")
    return line[: end if 0 < end < INPUT_CHARS else INPUT_CHARS]


def _input(name: str, description: object, schema: object) -> str:
    """One input's text: its name, its description's first sentence and the values its
    own schema lists (``state`` → open, closed, all)."""
    said = _first_sentence(description) if isinstance(description, str) else ""
    values = schema.get("enum") if isinstance(schema, Mapping) else None
    if isinstance(values, list):
        said += " " + " ".join(str(value) for value in values[:ENUM_VALUES])
    return f"{name} {said}".rstrip()


def _inputs(operation: Operation) -> tuple[str, ...]:
    """The operation's query, header and body parameters (a body schema's own top-level
    properties: one behind a ``$ref`` is not resolved, to keep building cheap)."""
    found = [
        _input(parameter.name, parameter.description, parameter.schema)
        for parameter in operation.parameters
        if parameter.location != "path"
    ]
    body = operation.body
    schema = body.media_types[0].schema if body is not None and body.media_types else None
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for name, node in properties.items():
            if isinstance(node, Mapping):
                found.append(_input(name, node.get("description"), node))
            else:
                found.append(name)
    return tuple(found)


def _bm25s() -> Any:
    """bm25s, checking that the search extra (bm25s, PyStemmer) is installed."""
    try:
        module = importlib.import_module("bm25s")  # untyped: imported by name
        importlib.import_module("Stemmer")
    except ImportError as exc:
        raise search_extra_missing(exc) from exc
    return module


_TAG = re.compile(r"<[^<>]*>")
"""An HTML tag, as some specs write descriptions (Stripe's ``<p>Create a refund.</p>``)."""
SUMMARY_CHARS = 160
"""The longest summary a match gives: a line for the model, not the documentation."""


def _meaning_text(entry: IndexEntry) -> str:
    """What a tool's vector is made of: its name's words, its summary and its
    description's first sentence, read across line breaks (unlike `_first_sentence`,
    which keeps an input's first line: a sentence a line break cut is half a meaning)
    and at least 20 characters long ("E.g. ..." is no sentence)."""
    description = " ".join(_TAG.sub("", entry.description).split())
    end = description.find(". ", 20, MEANING_CHARS)
    sentence = description[: end + 1 if end > 0 else MEANING_CHARS]
    parts = (" ".join(words(entry.name)), entry.summary, sentence)
    return ". ".join(part for part in parts if part)


def _summary_line(entry: IndexEntry) -> str:
    """The entry's summary, else the first sentence of its description (at most
    `SUMMARY_CHARS`), else its method and path."""
    for text in (entry.summary, entry.description):
        line = " ".join(_TAG.sub("", text).strip().split("\n", 1)[0].split())
        if len(line) > SUMMARY_CHARS:
            end = line.find(". ", 0, SUMMARY_CHARS)
            line = line[: end + 1] if end > 0 else line[: SUMMARY_CHARS - 1].rstrip() + "…"
        if line:
            return line
    if entry.method and entry.path:
        return f"{entry.method.upper()} {entry.path}"
    return ""


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the re-ranking reads of one entry."""

    name: frozenset[str]
    """The name's terms, the method's word left out (``PostCustomers`` → customer)."""
    segments: tuple[frozenset[str], ...]
    """The terms of each literal path segment, ``/v1``-like ones left out."""
    method: str
    collection: bool
    """Its path ends with a literal segment, not a parameter: it is about many things."""
    inputs: frozenset[str]
    """The terms of its inputs' names (``due_on`` → due), the name's left out."""


_PathShape = tuple[tuple[frozenset[str], ...], frozenset[str]]


def _path_shape(path: str, terms: Terms) -> _PathShape:
    """The terms of each literal segment of ``path`` (``/v1``-like ones left out), and
    the terms only its parameters have, that a name should not be judged by."""
    segments: list[frozenset[str]] = []
    parameters: set[str] = set()
    for part in path.split("/"):
        if part.startswith("{"):
            # A parameter's first word may name the thing (``{repo}``); the rest, and
            # ids, only say which (``{subscription_exposed_id}``).
            named = terms(part)
            parameters.update(term for n, term in enumerate(named) if n or term == "id")
        elif part and not (part[:1] == "v" and part[1:].isdigit()):
            found = frozenset(terms(part))
            if found:
                segments.append(found)
    parameters.difference_update(*segments)
    return tuple(segments), frozenset(parameters)


def _shape(entry: IndexEntry, terms: Terms, paths: dict[str, _PathShape]) -> _Shape:
    method = (entry.method or "").lower()
    path = entry.path or ""
    found = paths.get(path)
    if found is None:
        found = paths[path] = _path_shape(path, terms)
    segments, parameters = found
    # Words a name takes from path parameters ("SubscriptionExposedId") are not what the
    # tool does: left out, unless a literal segment has them too.
    name = frozenset(t for t in terms(entry.name) if t != method and t not in parameters)
    path = path.rstrip("/")
    inputs = frozenset(t for text in entry.inputs for t in terms(text.split(" ", 1)[0]))
    return _Shape(
        name=name,
        segments=segments,
        method=method,
        collection=bool(path) and not path.endswith("}"),
        inputs=inputs - name,
    )


@dataclass(frozen=True, slots=True)
class _Query:
    weights: dict[str, float]
    """Term → weight: the request's own terms 1, related terms less."""
    own: frozenset[str]
    known: frozenset[str]
    """Own and related terms."""
    methods: frozenset[str]
    """The methods the request's verbs ask for (none: no verb says)."""
    verbs: tuple[str, ...]
    first: str | None
    """The method the request's verb most likely means ("add" → post)."""
    plural: bool
    """It names things in the plural ("comments on issue 5"): a list, if it reads."""
    numbered: bool
    """It names one thing by number ("close issue 42")."""
    related_from: dict[str, str]
    """Related term → the request's words it came from, as written."""


class _Lexicon:
    """`RELATED` and `INTENTS` with their keys and words stemmed as the index's terms."""

    def __init__(self, terms: Terms) -> None:
        def key(phrase: str) -> tuple[str, ...]:
            return tuple(terms.stem(word) for word in phrase.split())

        self.related = {
            key(phrase): tuple(terms.stem(word) for word in related)
            for phrase, related in RELATED.items()
        }
        self.intents = {key(phrase): methods for phrase, methods in INTENTS.items()}
        self.words = {gram for gram in (*self.related, *self.intents) if len(gram) == 1}
        """Its one-word keys (stemmed): words it knows, never taken for typos."""
        self.spoken = {word for phrase in (*RELATED, *INTENTS) for word in phrase.split()}
        """The words of its keys as written, what a typo may be taken for."""


_QUESTIONS = frozenset(("how", "what", "which", "who", "where", "when", "whether", "way"))
"""Words that open a question: it reads ("who follows me") unless a verb follows ("how do
I add a collaborator")."""
_SUBJECTS = _QUESTIONS | {"i", "we", "let", "lets", "me", "go", "quickly", "also", "help"}
"""Words before the verb that leads a request ("I want to...", "let's...")."""
_ASKING = frozenset(
    (
        *("did", "does", "is", "are", "was", "were", "has", "have", "had"),
        *("didn", "doesn", "isn", "aren", "wasn", "hasn", "haven"),
    )
)
"""Words that open a yes-no question ("did the payout go through?", "is PR 5 merged"):
it reads unless a verb says otherwise, and the word right after is what it asks about,
no order ("did refund re_1 reach her": a refund's state, not a new refund). Not "is
there...", which asks for a way ("is there a tool that deletes a branch")."""


def _plural(word: str, terms: Terms) -> bool:
    """``comments``, ``repositories``: not ``status``, ``address``, ``bus``."""
    return (
        len(word) > 3
        and word.endswith("s")
        and not word.endswith("ss")
        and word != terms.stem(word)
    )


_PARTICLES = frozenset(("up", "away", "out", "off", "back", "down", "over", "in"))
"""The second word of a phrasal verb, which may come after the object ("sign the
customer up", "throw this book away")."""


def _phrasal(said: list[str], own: list[str], lexicon: _Lexicon) -> None:
    """Move each particle next to its verb when the two make a phrase the lexicon knows
    ("sign customer up" → "sign up customer"), in place."""
    for at in range(len(own) - 2):
        for later in range(at + 2, min(at + 4, len(own))):
            pair = (own[at], own[later])
            if said[later] in _PARTICLES and (pair in lexicon.related or pair in lexicon.intents):
                said.insert(at + 1, said.pop(later))
                own.insert(at + 1, own.pop(later))
                break


def _query(
    text: str, terms: Terms, lexicon: _Lexicon, correct: Callable[[str], str | None]
) -> _Query:
    spoken = words(text)
    said = [word for word in spoken if word not in STOPWORDS]
    own = [terms.stem(word) for word in said]
    typos: dict[str, str] = {}
    for at, term in enumerate(own):
        corrected = None if (term,) in lexicon.words else correct(said[at])
        if corrected is not None:
            own[at] = corrected
            typos[corrected] = said[at]
    _phrasal(said, own, lexicon)
    plural = any(_plural(word, terms) for word in said)
    weights = {term: TYPO_WEIGHT if term in typos else 1.0 for term in own}
    related_from: dict[str, str] = {}
    methods: set[str] = set()
    verbs: list[str] = []
    first: str | None = None
    yes_no = spoken[0] if spoken[:1] and spoken[0] in _ASKING and spoken[1:2] != ["there"] else None
    question: str | None = None
    late: tuple[tuple[str, ...], str] | None = None
    at = 0
    while at < len(own):
        # Two words that make a phrase ("money back") before each word alone.
        for gram, weight in ((tuple(own[at : at + 2]), PHRASE_WEIGHT), (own[at : at + 1], 0.0)):
            gram = tuple(gram)
            if weight and (
                len(gram) < 2 or (gram not in lexicon.related and gram not in lexicon.intents)
            ):
                continue
            # The verb leads a request ("comment on the issue"); further on, or with an
            # -s, a word that can be a verb too is a noun ("comments on issue 5",
            # "show me the open issues").
            leads = not (yes_no and at == 0) and not any(
                word not in _SUBJECTS for word in said[:at]
            )
            # Before the verb, "I" is who asks ("I want to..."); after it, whose things
            # ("the orgs I belong to": the authenticated user's).
            subject = leads and said[at] in ("i", "we")
            for term in () if subject else lexicon.related.get(gram, ()):
                if weights.get(term, 0.0) < (weight or RELATED_WEIGHT):
                    weights[term] = weight or RELATED_WEIGHT
                    related_from[term] = " ".join(said[at : at + len(gram)])
            if said[at] in _QUESTIONS and leads and question is None:
                question = said[at]
            elif gram in lexicon.intents and not methods and not _plural(said[at], terms):
                if leads:
                    methods.update(lexicon.intents[gram])
                    verbs.append(" ".join(said[at : at + len(gram)]))
                    first = lexicon.intents[gram][0]
                elif late is None and " ".join(said[at : at + len(gram)]) not in NOUNS_TOO:
                    late = gram, " ".join(said[at : at + len(gram)])
            at += len(gram)
            break
    if not methods and question is None and (yes_no or text.rstrip().endswith("?")):
        question = yes_no or "?"  # no verb leads, and it asks
    if not methods and question is not None:
        methods.add("get")
        verbs.append(question)
        first = "get"
    if not methods and late is not None:  # keywords, the verb last ("subscription cancel")
        methods.update(lexicon.intents[late[0]])
        verbs.append(late[1])
        first = lexicon.intents[late[0]][0]
    related_from.update(typos)
    return _Query(
        weights=weights,
        own=frozenset(own),
        known=frozenset(weights),
        methods=frozenset(methods),
        verbs=tuple(verbs),
        first=first,
        plural=plural,
        numbered=any(word.isdigit() for word in said),
        related_from=related_from,
    )


class ToolIndex:
    """A catalogue's tools, ranked for requests. Build it once per tool list."""

    def __init__(
        self,
        entries: Sequence[IndexEntry],
        head: Any,
        body: Any,
        shapes: Sequence[_Shape],
        terms: Terms,
        lexicon: _Lexicon,
        frequency: dict[str, int] | None,
        inputs: Any,
        meaning: Any,
    ) -> None:
        self._inputs = inputs
        self._meaning = meaning
        """Each tool's unit vector (`_meaning`), one row a tool; None where no vectors
        are installed (ranked by words alone)."""
        self._entries = entries
        self._frequency = frequency or {}
        self._spelling: Spelling | None = None
        self._terms = terms
        self._lexicon = lexicon
        self._head = head
        self._body = body
        self._shapes = shapes

    @classmethod
    def build(cls, entries: Iterable[IndexEntry]) -> ToolIndex:
        """The index of ``entries`` (in order; names should be unique)."""
        listed = tuple(entries)
        bm25s = _bm25s()
        terms = Terms()
        heads: list[list[str]] = []
        bodies: list[list[str]] = []
        inputs: list[list[str]] = []
        for entry in listed:
            # The summary, or the description's first sentence for a tool without one.
            summary = entry.summary or _summary_line(entry)
            head = [*terms(entry.name), *terms(entry.path or ""), *terms(summary)]
            for tag in entry.tags:
                head.extend(terms(tag))
            heads.append(head or [""])
            description = entry.description
            if entry.summary and description.startswith(entry.summary):
                description = description[len(entry.summary) :]
            bodies.append(list(terms(description)) or [""])
            inputs.append([term for text in entry.inputs for term in terms(text)] or [""])
        if not listed:
            return cls(listed, None, None, (), terms, _Lexicon(terms), None, None, None)
        head_index = bm25s.BM25(k1=HEAD_K1, b=HEAD_B)
        head_index.index(heads, show_progress=False)
        body_index = bm25s.BM25()
        body_index.index(bodies, show_progress=False)
        inputs_index = None
        if any(entry.inputs for entry in listed):
            inputs_index = bm25s.BM25()
            inputs_index.index(inputs, show_progress=False)
        vectors = embedding()
        meaning = None if vectors is None else vectors([_meaning_text(e) for e in listed])
        paths: dict[str, _PathShape] = {}
        shapes = [_shape(entry, terms, paths) for entry in listed]
        lexicon = _Lexicon(terms)
        terms.freeze()
        return cls(
            listed,
            head_index,
            body_index,
            shapes,
            terms,
            lexicon,
            frequencies(heads),
            inputs_index,
            meaning,
        )

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<ToolIndex of {len(self._entries)} tools>"

    def search(self, query: str, limit: int = 5) -> list[Match]:
        """The best ``limit`` tools for ``query``, best first; none when no word of it
        (nor a related one) is in any tool."""
        if self._head is None or limit <= 0:
            return []
        asked = _query(query, self._terms, self._lexicon, self._correct)
        found: dict[str, Any] = {}
        scores = self._bm25(self._head, asked, found)
        scores = scores + DESCRIPTION_WEIGHT * self._bm25(self._body, asked, found)
        if self._inputs is not None:
            scores = scores + INPUTS_WEIGHT * self._bm25(self._inputs, asked, found)
        covered = sum(found.values()) / len(asked.own) if found else None
        vectors = embedding() if self._meaning is not None else None
        meant = None if vectors is None else vectors([query])[0]
        ranked = self._ranked(scores, covered, asked, limit, meant)
        return [
            Match(
                name=self._entries[i].name,
                summary=_summary_line(self._entries[i]),
                why=self._why(i, asked),
                score=round(score, 4),
            )
            for score, i in ranked[:limit]
            if score > 0
        ]

    def _ranked(
        self, scores: Any, covered: Any, asked: _Query, limit: int, meant: Any
    ) -> list[tuple[float, int]]:
        """The best candidates of BM25's ``scores``, re-ranked; ``covered``: the share of
        the request's own words each tool has in some field (None: it has none);
        ``meant``: the request's vector (None: no vectors are installed)."""
        best = float(scores.max()) if len(scores) else 0.0
        if best <= 0:
            return []
        count = min(max(CANDIDATES, limit), len(scores))
        candidates = scores.argpartition(-count)[-count:]
        close = [0.0] * count if meant is None else self._meaning[candidates] @ meant
        return sorted(
            (
                (self._rerank(int(i), float(scores[i]), best, asked, covered, similar), int(i))
                for i, similar in zip(candidates, close, strict=True)
            ),
            key=lambda pair: (-pair[0], pair[1]),
        )

    def _correct(self, word: str) -> str | None:
        """The term of the word a tool has that ``word``, which no tool has, is a typo
        of; None when ``word`` is known, or near nothing known. The corrections are
        indexed on the first request that needs them."""
        term = self._terms.stem(word)
        if term in self._frequency or term in self._body.vocab_dict:
            return None
        if self._spelling is None:
            known = self._terms.known()
            heads = self._frequency
            self._spelling = Spelling(
                {
                    **{w: heads.get(t, 0) + 1 for w, t in known.items() if w not in STOPWORDS},
                    **dict.fromkeys(self._lexicon.spoken, 1),
                }
            )
        corrected = self._spelling.correct(word)
        return None if corrected is None else self._terms.stem(corrected)

    def _bm25(self, index: Any, asked: _Query, found: dict[str, Any]) -> Any:
        """The BM25 scores of ``index`` for ``asked``; marks in ``found`` (term → whether
        each tool has it) the tools that have each of the request's own terms."""
        vocabulary: dict[str, int] = index.vocab_dict
        total = None
        for term, weight in asked.weights.items():
            token = vocabulary.get(term)
            if token is None:
                continue
            part = index.get_scores_from_ids([token])
            if term in asked.own:
                has = part > 0
                found[term] = has if term not in found else found[term] | has
            part = part * weight
            total = part if total is None else total + part
        if total is None:
            import numpy

            return numpy.zeros(len(self._entries), dtype="float32")
        return total

    def _rerank(
        self, i: int, score: float, best: float, asked: _Query, covered: Any, similar: float
    ) -> float:
        shape = self._shapes[i]
        if score <= 0:
            return 0.0
        bonus = MEANING * float(similar)
        if covered is not None:
            bonus += COVERAGE * float(covered[i])
        if shape.name:
            bonus += NAME_COVERAGE * len(shape.name & asked.known) / len(shape.name)
        if asked.methods and shape.method:
            bonus += METHOD_BONUS if shape.method in asked.methods else -METHOD_BONUS
        reads = not asked.methods or "get" in asked.methods
        if shape.method and asked.plural and reads and shape.method == "get":
            bonus += COLLECTION_BONUS if shape.collection else -COLLECTION_BONUS
        if shape.method and asked.numbered and not asked.plural:
            bonus += COLLECTION_BONUS if not shape.collection else -COLLECTION_BONUS
        if shape.method == asked.first == "post":  # a new one goes to the collection
            bonus += COLLECTION_BONUS if shape.collection else -COLLECTION_BONUS
        elif shape.method == asked.first and shape.method in ("patch", "delete"):
            bonus += COLLECTION_BONUS if not shape.collection else -COLLECTION_BONUS
        if shape.inputs:
            taken = len((asked.own - shape.name) & shape.inputs)
            bonus += INPUT_BONUS * min(taken, 2)
        unnamed = sum(1 for segment in shape.segments[1:] if not segment & asked.known)
        bonus -= DEPTH_PENALTY * unnamed
        return max(score / best + bonus + 1.0, math.ulp(0))  # still found, if last

    def _why(self, i: int, asked: _Query) -> str:
        """The name's words the request has, or related words (with the request's words
        they came from), the inputs it names, and the verb that asked for the method: in
        the name's and inputs' words."""
        shape = self._shapes[i]
        stem = self._terms.stem
        named: dict[str, str] = {}
        for word in words(self._entries[i].name):
            named.setdefault(stem(word), word)
        parts: list[str] = []
        own = [word for term, word in named.items() if term in shape.name and term in asked.own]
        if own:
            parts.append("name: " + ", ".join(own))
        related = [
            f"{word} for {asked.related_from[term]!r}"
            for term, word in named.items()
            if term in shape.name and term in asked.related_from and term not in asked.own
        ]
        if related:
            parts.append("; ".join(related))
        taken = [
            text.split(" ", 1)[0]
            for text in self._entries[i].inputs
            if asked.own.intersection(self._terms(text.split(" ", 1)[0])) - shape.name
        ]
        if taken:
            parts.append("takes " + ", ".join(taken[:3]))
        if asked.methods and shape.method in asked.methods:
            parts.append(f"method {shape.method.upper()} for {asked.verbs[0]!r}")
        return "; ".join(parts) or "words of its description"
