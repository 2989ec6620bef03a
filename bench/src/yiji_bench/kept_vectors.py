"""Vectors kept across benchmark runs, by the SHA-256 of the text embedded.

A scaled LongMemEval archive repeats the same filler sessions across questions, so ``--mode semantic``
would embed most texts again for every question. :class:`CachedEmbedder` wraps an embedder and keeps
every vector it computes in a folder (one sub-folder per embedder fingerprint, so vectors of another
model are never reused); a text already seen is never embedded again, in this run or the next.

The folder holds shards (``<n>.keys.npy``: the texts' digests, ``<n>.vectors.npy``: float32 vectors),
written whole through a temporary name, so an interrupted run loses at most its unwritten vectors.
Only the benchmark's builds use it: recall embeds its query with the plain embedder, so recall latency
always includes the query's embedding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from yiji.providers.embeddings import Embedder

__all__ = ["CachedEmbedder"]

SHARD = 4096
"""Vectors gathered before a shard is written (and at :meth:`CachedEmbedder.flush`)."""


class CachedEmbedder:
    """An :class:`~yiji.providers.embeddings.Embedder` that embeds each distinct text once per folder."""

    def __init__(self, inner: Embedder, folder: Path) -> None:
        import numpy as np

        self.inner = inner
        self.folder = folder / hashlib.sha256(inner.fingerprint.encode()).hexdigest()[:16]
        self.folder.mkdir(parents=True, exist_ok=True)
        self._np = np
        self._rows: dict[bytes, Any] = {}
        self._pending: list[tuple[bytes, Any]] = []
        self.embedded = self.reused = 0
        """Texts embedded by the inner embedder, and texts answered from the folder."""
        for keys_path in sorted(self.folder.glob("*.keys.npy")):
            vectors = np.load(keys_path.with_name(keys_path.name.replace(".keys.", ".vectors.")))
            for key, row in zip(np.load(keys_path), vectors, strict=True):
                self._rows[bytes(key)] = row

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def is_local(self) -> bool:
        return self.inner.is_local

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [hashlib.sha256(t.encode()).digest() for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._rows}
        if missing:
            vectors = self._np.asarray(self.inner.embed(list(missing.values())), dtype=self._np.float32)
            for key, row in zip(missing, vectors, strict=True):
                self._rows[key] = row
                self._pending.append((key, row))
            if len(self._pending) >= SHARD:
                self.flush()
        self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        return [self._rows[k].tolist() for k in keys]

    def flush(self) -> None:
        """Write the vectors not yet in the folder as one shard."""
        if not self._pending:
            return
        np = self._np
        number = len(list(self.folder.glob("*.keys.npy")))
        while (self.folder / f"{number}.keys.npy").exists():
            number += 1
        keys = np.frombuffer(b"".join(k for k, _ in self._pending), dtype=np.uint8).reshape(-1, 32)
        vectors = np.stack([row for _, row in self._pending])
        for name, array in (("vectors", vectors), ("keys", keys)):  # keys last: they mark a whole shard
            tmp = self.folder / f"{number}.{name}.tmp.npy"
            np.save(tmp, array)
            tmp.replace(self.folder / f"{number}.{name}.npy")
        self._pending = []
