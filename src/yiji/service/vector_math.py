"""The numbers behind semantic recall: int8 quantization of unit vectors, the approximate scan, unit
rows from float32 BLOBs and the separation of a scope's conversations. numpy is imported only when one of
these runs (never by ``yiji --help``)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from yiji.domain import semantic
from yiji.errors import InvalidInput

__all__ = [
    "SCAN_ROWS",
    "approximate_cosines",
    "np_module",
    "one_blas_thread",
    "quantize",
    "separation",
    "unit_rows",
]

SCAN_ROWS = 1024
"""Rows converted from int8 to float32 at a time by the scan: 2 MiB at 512 dimensions, which stays in
the CPU cache (measured at 20,000 x 512 on one thread: 1.6 ms, against 4.5 ms with 4,096 rows and 3.6 ms
for the float32 product itself)."""


def quantize(matrix: Any) -> tuple[Any, Any]:
    """int8 codes and float32 per-row scales of the rows of ``matrix``: ``row ~= codes * scale``, each
    row's largest value taking code 127 (an all-zero row keeps scale 1)."""
    np = np_module()
    peak = np.abs(matrix).max(axis=1) if len(matrix) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(matrix / scales[:, None]).astype(np.int8)
    return codes, scales


def approximate_cosines(codes: Any, scales: Any, query: Any, start: int = 0) -> Any:
    """``rows[start:] @ query`` from the int8 codes, :data:`SCAN_ROWS` rows at a time (float32)."""
    np = np_module()
    total = len(codes)
    out = np.empty(max(0, total - start), dtype=np.float32)
    with one_blas_thread():
        for first in range(start, total, SCAN_ROWS):
            last = min(total, first + SCAN_ROWS)
            out[first - start : last - start] = codes[first:last].astype(np.float32) @ query
    out *= scales[start:]
    return out


def unit_rows(blobs: Sequence[bytes], dim: int) -> Any:
    """float32 unit rows from little-endian float32 BLOBs, row by row (no second copy of every BLOB)."""
    np = np_module()
    matrix = np.empty((len(blobs), dim), dtype=np.float32)
    for index, blob in enumerate(blobs):
        matrix[index] = np.frombuffer(blob, dtype="<f4")
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    matrix /= norms[:, None]
    return matrix


SEPARATION_SAMPLE = 20_000
"""The separation of a scope's conversations is measured over its most recent turns, at most this many."""


def separation(matrix: Any, sessions: Sequence[str | None]) -> float | None:
    """:func:`yiji.domain.semantic.separation` of the most recent event rows of ``matrix`` (unit rows; a
    row's session is ``None`` for a memory), from the sums of each session's vectors."""
    np = np_module()
    rows: dict[str, list[int]] = {}
    taken = 0
    for index in range(len(sessions) - 1, -1, -1):
        session = sessions[index]
        if session is not None:
            rows.setdefault(session, []).append(index)
            taken += 1
            if taken >= SEPARATION_SAMPLE:
                break
    if not rows:
        return None
    total = np.zeros(matrix.shape[1], dtype=np.float64)
    parts: list[tuple[int, float]] = []
    for indexes in rows.values():
        summed = matrix[np.asarray(indexes, dtype=np.int64)].sum(axis=0, dtype=np.float64)
        total += summed
        parts.append((len(indexes), float(summed @ summed)))
    return semantic.separation(float(total @ total), taken, parts)


_blas: list[Any] = []


def one_blas_thread() -> Any:
    """A context that runs numpy's BLAS on one thread (threadpoolctl, from the embed extra).

    Measured on a shared two-core machine: a 2,000 x 512 product took 24 ms with BLAS's default threads
    (they wait for each other under load) and 0.15 ms on one thread.
    """
    if not _blas:
        try:
            from threadpoolctl import ThreadpoolController

            _blas.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - depends on the installation
            _blas.append(None)
    controller = _blas[0]
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")


def np_module() -> Any:
    try:
        import numpy
    except ImportError:  # pragma: no cover - depends on the installation
        from yiji.invocation import install_hint

        raise InvalidInput(
            "mode", f"semantic recall needs numpy (the embed extra: {install_hint('embed')})"
        ) from None
    return numpy
