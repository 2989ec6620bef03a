"""The packed copy of a scope's vectors: the approximate scan keeps the exact top items, the pack follows
writes and deletions in the same transaction, and a deleted item never comes back from it.

Real SQLite files, the real offline model, and the loopback OpenAI-compatible server for the API path.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.config import Config, EmbeddingConfig, ExtractionConfig, RecallConfig
from yiji.db import Database
from yiji.models import EventIn, parse
from yiji.models.lifecycle import DeleteRequest
from yiji.models.recall import RecallQuery
from yiji.providers.embeddings import LocalEmbedder, OpenAIEmbedder
from yiji.providers.extraction import OpenAIExtractor
from yiji.service import MemoryService
from yiji.service.vectors import APPROX_MARGIN, OVERFETCH, approximate_cosines, quantize
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import FakeProvider, chat_reply
from .lifecycle_helpers import connect, submit, tables_holding

TEXTS = {
    "pet": "我家柯基很可爱，每天早上带它去公园",
    "nurse": "我在医院当护士，经常上夜班",
    "cook": "周末我喜欢做红烧肉",
    "trip": "下个月打算去云南旅行，想看洱海",
}


def _unit(rows: Any) -> Any:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(50, 3000),
    dim=st.sampled_from([8, 64, 512]),
    clusters=st.integers(0, 30),
    k=st.integers(1, 50),
)
def test_the_int8_scan_keeps_the_exact_top_k(seed: int, rows: int, dim: int, clusters: int, k: int) -> None:
    """Property: the ``OVERFETCH * k`` best approximate cosines hold the ``k`` best exact float32 ones
    (so exact scoring of them gives the exhaustive top k), and no approximate cosine is off by as much
    as ``APPROX_MARGIN``. Data: isotropic, or clustered like sentence vectors (topics plus noise)."""
    rng = np.random.default_rng(seed)
    if clusters:
        centers = rng.normal(size=(clusters, dim))
        matrix = centers[rng.integers(0, clusters, rows)] + rng.normal(scale=0.6, size=(rows, dim))
    else:
        matrix = rng.normal(size=(rows, dim))
    matrix = _unit(matrix).astype(np.float32)
    query = _unit(matrix[rng.integers(0, rows)] + rng.normal(scale=0.5, size=dim)).astype(np.float32)
    exact = matrix @ query
    codes, scales = quantize(matrix)
    approx = approximate_cosines(codes, scales, query)
    assert float(np.max(np.abs(approx - exact))) < APPROX_MARGIN
    k = min(k, rows)
    take = min(rows, OVERFETCH * k)
    best = set(np.argsort(-exact, kind="stable")[:k].tolist())
    near = set(np.argsort(-approx, kind="stable")[:take].tolist())
    assert best <= near
    start = rows // 3  # a scan of the most recent rows only: the same cosines, offset
    assert np.allclose(approximate_cosines(codes, scales, query, start), approx[start:], atol=1e-6)


def _packs(db_path: Path) -> list[tuple[Any, ...]]:
    with contextlib.closing(connect(db_path)) as conn:
        return conn.execute("SELECT rows, through FROM vector_packs").fetchall()


def _packed_keys(db_path: Path) -> list[str]:
    with contextlib.closing(connect(db_path)) as conn:
        return [k for (keys,) in conn.execute("SELECT keys FROM vector_blocks") for k in json.loads(keys)]


def _scored(service: MemoryService, query: str, mode: str = "semantic") -> list[tuple[str, float]]:
    result = service.memory_recall(RecallQuery(query=query, mode=mode))  # type: ignore[arg-type]
    return [(item.id, item.score) for item in result.items]


def _same(a: dict[str, list[tuple[str, float]]], b: dict[str, list[tuple[str, float]]]) -> bool:
    """The same items in the same order with the same scores (to float rounding of BLAS kernels)."""
    return a.keys() == b.keys() and all(
        [i for i, _ in a[q]] == [i for i, _ in b[q]]
        and all(abs(x - y) < 1e-9 for (_, x), (_, y) in zip(a[q], b[q], strict=True))
        for q in a
    )


def test_the_pack_gives_the_results_of_the_row_by_row_read(db_path: Path, clock: FixedClock) -> None:
    config = Config(db=db_path, recall=RecallConfig())
    service = make_service(
        Database(db_path, busy_timeout_ms=200), config, clock=clock, embedder=LocalEmbedder()
    )
    try:
        for day, (eid, text) in enumerate([*TEXTS.items(), ("late", "明天要交报告")], start=1):
            submit(service, eid, text, f"2026-05-0{day}T09:00:00+08:00")
        built = service.vectors_reindex()
        assert _packs(db_path) == [(5, _packs(db_path)[0][1])] and built["vectors"] == 5
        service.memory_delete(DeleteRequest(event_id="late"))
        assert _packs(db_path) == []  # the deletion dropped the pack in its transaction
        blocker = sqlite3.connect(db_path, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")  # no pack can be written: recall reads row by row
            unpacked = {q: _scored(service, q) for q in ("宠物", "旅游", "工作")}
            assert _packs(db_path) == []
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        packed = {q: _scored(service, q) for q in ("宠物", "旅游", "工作")}
        assert [rows for rows, _ in _packs(db_path)] == [4]  # the recall built the pack
        assert _same(packed, unpacked) and packed["宠物"][0][0] == "pet" and packed["旅游"][0][0] == "trip"
        restarted = make_service(db_path, config, clock=clock, embedder=LocalEmbedder())
        try:  # another process reads the stored pack
            assert _same({q: _scored(restarted, q) for q in packed}, packed)
        finally:
            restarted.close()
    finally:
        service.close()


@pytest.fixture
def api_service(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider
) -> Iterator[tuple[MemoryService, FakeProvider]]:
    """A service that extracts (nothing) and embeds every new event through the loopback server."""
    with httpx.Client() as http:
        extractor = OpenAIExtractor(ExtractionConfig(base_url=fake_provider.base_url, model="x"), http)
        embedder = OpenAIEmbedder(EmbeddingConfig(base_url=fake_provider.base_url, model="e"), http)
        service = make_service(db_path, clock=clock, extractor=extractor, embedder=embedder)
        yield service, fake_provider
        service.close()


def _say(service: MemoryService, provider: FakeProvider, eid: str, text: str) -> None:
    provider.script_chat(chat_reply({"memories": []}))
    done = service.event_submit(parse(EventIn, {"id": eid, "session": "s", "role": "user", "text": text}))
    assert done.extraction is not None and done.extraction["vectors"] == {"state": "done", "vectors": 1}


def _found(service: MemoryService, text: str) -> dict[str, int]:
    """Raw events recalled for ``text`` (the loopback model gives equal texts equal vectors): id -> seq."""
    result = service.memory_recall(RecallQuery(query=text, mode="semantic", limit=50))
    return {item.id: item.event.seq for item in result.items if item.event is not None}


def test_new_vectors_join_the_pack_and_a_deleted_one_never_comes_back(
    db_path: Path, clock: FixedClock, api_service: tuple[MemoryService, FakeProvider]
) -> None:
    service, provider = api_service
    for eid, text in TEXTS.items():
        _say(service, provider, eid, text)
    assert [rows for rows, _ in _packs(db_path)] == [1]  # built at the first write; later ones are its delta
    nurse_seq = _found(service, TEXTS["nurse"])["nurse"]
    _say(service, provider, "gym", "晚上去健身房练了一个小时")  # written after the process read the pack
    assert "gym" in _found(service, "晚上去健身房练了一个小时")

    service.memory_delete(DeleteRequest(event_id="nurse"))
    assert "nurse" not in _found(service, TEXTS["nurse"])  # the process copy
    assert f"e:{nurse_seq}" not in _packed_keys(db_path)  # the recall rebuilt the pack without it
    assert sorted(_packed_keys(db_path)) == sorted(f"e:{s}" for s in _found(service, "云南").values())
    assert tables_holding(db_path, TEXTS["nurse"]) == []
    report = service.doctor(scan_for=["nurse", TEXTS["nurse"]])
    assert report["ok"]

    restarted = make_service(db_path, clock=clock, embedder=service.embedder)
    try:  # a new process: the stored pack only
        assert "nurse" not in _found(restarted, TEXTS["nurse"])
        assert "gym" in _found(restarted, "晚上去健身房练了一个小时")
        rebuilt = restarted.vectors_reindex()
        assert rebuilt["vectors"] == 4 and [rows for rows, _ in _packs(db_path)] == [4]
        assert "nurse" not in _found(restarted, TEXTS["nurse"])
    finally:
        restarted.close()


def test_a_large_delta_rebuilds_the_pack(db_path: Path, clock: FixedClock) -> None:
    """Vectors written in bulk (over ``REPACK_MIN`` after the pack) are folded into a new pack."""
    from yiji.service.vectors import REPACK_MIN

    service = make_service(db_path, clock=clock, embedder=LocalEmbedder())
    try:
        submit(service, "first", TEXTS["pet"], "2026-05-01T09:00:00+08:00")
        service.vectors_reindex()
        assert [rows for rows, _ in _packs(db_path)] == [1]
        count = REPACK_MIN + 1
        for i in range(count):
            submit(service, f"e{i}", f"第{i}次散步的记录", "2026-05-02T09:00:00+08:00")
        scope = service.scope(None, None)
        with service.db.read() as conn:
            sources = service.vector_index.sources(conn, scope, None, [f"e{i}" for i in range(count)])
        rows = np.tile(_unit(np.ones(512, dtype=np.float32)), (count, 1))
        service.vector_index.commit_vectors(
            scope, service.embedder.fingerprint, sources, rows, replace_scope=False
        )
        assert [rows for rows, _ in _packs(db_path)] == [count + 1]
    finally:
        service.close()


def test_resume_recalls_without_a_pack_and_writes_none_inside_its_read(
    db_path: Path, clock: FixedClock
) -> None:
    from yiji.models.resume import ResumeRequest

    service = make_service(db_path, clock=clock, embedder=LocalEmbedder())
    try:
        for day, (eid, text) in enumerate(TEXTS.items(), start=1):
            submit(service, eid, text, f"2026-05-0{day}T09:00:00+08:00")
        for hour in range(10, 16):  # the pet turn is not among the pack's recent events
            submit(service, f"w{hour}", f"{hour}点开了一个会，讨论季度预算", f"2026-05-06T{hour}:00:00+08:00")
        service.vectors_reindex()
        service.memory_delete(DeleteRequest(event_id="cook"))
        assert _packs(db_path) == []
        resumed = service.session_resume(ResumeRequest(query="宠物"))
        assert TEXTS["pet"] in resumed.context and TEXTS["cook"] not in resumed.context
        fast = service.memory_recall(RecallQuery(query="宠物", mode="fast"))
        assert fast.items == []  # found by meaning only
        assert _packs(db_path) == []  # read row by row: no write inside the resume's read transaction
        assert _scored(service, "宠物")[0][0] == "pet"
        assert [rows for rows, _ in _packs(db_path)] == [9]
    finally:
        service.close()


class _WritesWhileEmbedding(LocalEmbedder):
    """The offline embedder, which, once armed, stores a turn through another connection while it embeds:
    whether a resume's pack shows that turn says whether the pack's snapshot began before the embedding."""

    def __init__(self, db_path: Path, clock: FixedClock) -> None:
        super().__init__()
        self.db_path = db_path
        self.clock = clock
        self.armed = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.armed:
            self.armed = False
            other = make_service(self.db_path, clock=self.clock)
            try:
                submit(other, "late", "刚才又说起了柯基", "2026-05-07T09:00:00+08:00")
            finally:
                other.close()
        return super().embed(texts)


def test_resume_embeds_its_query_before_its_snapshot(db_path: Path, clock: FixedClock) -> None:
    """No network call inside the pack's read snapshot: the query is embedded first, so what was written
    while it was embedded is in the pack."""
    from yiji.models.resume import ResumeRequest

    embedder = _WritesWhileEmbedding(db_path, clock)
    service = make_service(db_path, clock=clock, embedder=embedder)
    try:
        for day, (eid, text) in enumerate(TEXTS.items(), start=1):
            submit(service, eid, text, f"2026-05-0{day}T09:00:00+08:00")
        service.vectors_reindex()
        embedder.armed = True
        resumed = service.session_resume(ResumeRequest(query="宠物"))
        assert not embedder.armed  # the query was embedded (semantic recall)
        assert "刚才又说起了柯基" in resumed.context
        assert TEXTS["pet"] in resumed.context
    finally:
        service.close()
