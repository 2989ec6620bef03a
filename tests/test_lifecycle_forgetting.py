"""Ordinary forgetting as presentation in listings, and the companion's decaying emotion.

The time math is table-tested in test_forgetting.py and test_emotion.py; these tests check the wiring:
configuration thresholds, the injected clock, listings, ``memory_read`` and the CLI.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config, ForgettingConfig
from yiji.domain.forgetting import CUES_LABEL, GIST_LABEL
from yiji.models import parse
from yiji.models.lifecycle import CorrectRequest
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service
from .inprocess import run_cli
from .lifecycle_helpers import derive, fact, note, submit

NOW = datetime(2026, 7, 1, tzinfo=UTC)


def listed(service: MemoryService) -> dict[str, Any]:
    _, rows = service.memory_list(include_history=True)
    return {m.text: m for m in rows}


@pytest.fixture
def aged(service: MemoryService, clock: FixedClock) -> MemoryService:
    clock.set(NOW)
    submit(service, "old", "那年夏天我们在青岛的海边看日出，还捡了很多贝壳。", "2023-06-01T00:00:00Z")
    derive(
        service,
        "old",
        note("在青岛海边看日出、捡贝壳", "我们在青岛的海边看日出，还捡了很多贝壳", gist="青岛看日出"),
        note("夏天在青岛的海边捡了很多贝壳", "捡了很多贝壳"),
        fact("喜欢海边", "在青岛的海边", key="likes.place", kind="preference"),
    )
    submit(service, "mid", "上周日我去了苏州博物馆，看了很多宋代瓷器。", "2025-11-01T00:00:00Z")
    derive(service, "mid", note("去苏州博物馆看宋代瓷器", "我去了苏州博物馆，看了很多宋代瓷器"))
    submit(service, "new", "今天去爬了香山。", "2026-06-20T00:00:00Z")
    derive(service, "new", note("去爬了香山", "今天去爬了香山"))
    return service


def test_listing_fades_old_episodes_and_keeps_stable_kinds_detailed(aged: MemoryService) -> None:
    rows = listed(aged)
    gist = rows["在青岛海边看日出、捡贝壳"].presentation
    assert (gist.mode, gist.text, gist.label, gist.time_label) == ("gist", "青岛看日出", GIST_LABEL, "2020s")
    assert gist.faded and gist.time_coarsened
    cues = rows["夏天在青岛的海边捡了很多贝壳"].presentation
    assert cues.mode == "topic_cues" and cues.label == CUES_LABEL and cues.cues
    assert all(c in "夏天在青岛的海边捡了很多贝壳" for c in cues.cues)
    museum = rows["去苏州博物馆看宋代瓷器"].presentation
    assert museum.mode == "topic_cues" and museum.time_label == "2025-11-01" and not museum.time_coarsened
    assert rows["去爬了香山"].presentation.mode == "detailed"
    stable = rows["喜欢海边"].presentation
    assert (stable.mode, stable.text, stable.time_label) == ("detailed", "喜欢海边", "2023-06-01T00:00:00Z")


def test_memory_read_always_returns_the_exact_original(aged: MemoryService) -> None:
    faded = listed(aged)["在青岛海边看日出、捡贝壳"]
    read = aged.memory_read(faded.id)
    assert read["memory"].text == "在青岛海边看日出、捡贝壳"
    assert read["memory"].quote == "我们在青岛的海边看日出，还捡了很多贝壳"
    assert read["memory"].valid_at == datetime(2023, 6, 1, tzinfo=UTC)
    assert read["text"]["content"] == "那年夏天我们在青岛的海边看日出，还捡了很多贝壳。"
    assert not hasattr(read["memory"], "presentation")


def test_thresholds_come_from_configuration(db_path: Path, clock: FixedClock) -> None:
    clock.set(NOW)
    config = Config(db=db_path, forgetting=ForgettingConfig(gist_after_days=7, coarsen_after_days=10))
    service = make_service(db_path, config, clock=clock)
    try:
        submit(service, "new", "今天去爬了香山。", "2026-06-20T00:00:00Z")
        derive(service, "new", note("去爬了香山", "今天去爬了香山"))
        shown = listed(service)["去爬了香山"].presentation
        assert shown.faded and shown.time_coarsened and shown.time_label == "2020s"
    finally:
        service.close()


def test_cli_list_shows_faded_memories_with_their_label(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    text = "那年夏天我们在青岛的海边看日出。"
    assert (
        run_cli(
            "--db",
            db,
            "event",
            "submit",
            "--id",
            "old",
            "--session",
            "s",
            "--role",
            "user",
            "--occurred-at",
            "2019-06-01T00:00:00Z",
            text,
        ).code
        == 0
    )
    items = tmp_path / "items.json"
    memory = note("在青岛海边看日出", "我们在青岛的海边看日出", gist="青岛看日出")
    items.write_text(json.dumps([memory], ensure_ascii=False), encoding="utf-8")
    assert run_cli("--db", db, "memory", "derive", "--event", "old", "--input", str(items)).code == 0
    human = run_cli("--db", db, "memory", "list")
    assert human.code == 0 and f"2010s [{GIST_LABEL}]: 青岛看日出" in human.out
    data = json.loads(run_cli("--db", db, "--json", "memory", "list").out)["memories"][0]
    assert data["text"] == "在青岛海边看日出" and data["presentation"]["mode"] == "gist"


def expressed(service: MemoryService, eid: str, when: str, valence: float, arousal: float) -> str:
    submit(service, eid, "太好了，我真为你高兴！", when, role="assistant")
    (memory,) = derive(
        service,
        eid,
        {
            "text": "为用户高兴",
            "quote": "我真为你高兴",
            "kind": "emotion",
            "basis": "assistant_expression",
            "valence": valence,
            "arousal": arousal,
        },
    )
    return memory


def test_current_emotion_decays_and_disappears(service: MemoryService, clock: FixedClock) -> None:
    clock.set(NOW)
    assert service.current_emotion().emotion is None
    persona_versions = len(service.persona_history())
    first = expressed(service, "a1", "2026-07-01T00:00:00Z", -0.4, 0.2)
    second = expressed(service, "a2", "2026-07-01T00:00:00Z", 0.8, 0.6)  # same time: the later wins
    clock.set(NOW)
    now = service.current_emotion().emotion
    assert now is not None and now.memory_id == second and now.factor == 1.0
    assert (now.valence, now.arousal) == (0.8, 0.6)
    clock.set(NOW + timedelta(hours=6))
    half = service.current_emotion().emotion
    assert half is not None and half.factor == pytest.approx(0.5)
    assert (half.valence, half.arousal) == (pytest.approx(0.4), pytest.approx(0.3))
    assert (half.expressed_valence, half.expressed_arousal) == (0.8, 0.6)
    clock.set(NOW + timedelta(hours=40))  # 0.5 ** (40 / 6) < 0.01
    assert service.current_emotion().emotion is None
    # never an older expression as a fallback; history and persona untouched
    assert service.memory_get(first).valence == -0.4
    assert len(service.persona_history()) == persona_versions


def test_a_future_or_revoked_expression_is_not_current(service: MemoryService, clock: FixedClock) -> None:
    clock.set(NOW)
    calm = expressed(service, "a1", "2026-06-30T23:00:00Z", 0.2, 0.1)
    expressed(service, "later", "2026-07-02T00:00:00Z", -0.9, 0.9)
    clock.set(NOW)
    state = service.current_emotion().emotion
    assert state is not None and state.memory_id == calm
    fixed = service.memory_correct(
        parse(CorrectRequest, {"memory_id": calm, "statement": "我只是有点累", "role": "assistant"})
    )
    clock.set(NOW)
    state = service.current_emotion().emotion
    assert state is not None and state.memory_id == fixed.corrected_memory_id


def test_cli_emotion(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    assert run_cli("--db", db, "emotion").code == 2  # reads only: no database is created
    assert run_cli("--db", db, "persona", "show").code == 0
    assert run_cli("--db", db, "emotion").out.strip() == "no current emotion"
    assert (
        run_cli(
            "--db",
            db,
            "event",
            "submit",
            "--id",
            "a1",
            "--session",
            "s",
            "--role",
            "assistant",
            "太好了，我真为你高兴！",
        ).code
        == 0
    )
    items = tmp_path / "items.json"
    feeling = {
        "text": "为用户高兴",
        "quote": "我真为你高兴",
        "kind": "emotion",
        "basis": "assistant_expression",
        "valence": 0.8,
        "arousal": 0.6,
    }
    items.write_text(json.dumps([feeling], ensure_ascii=False), encoding="utf-8")
    assert run_cli("--db", db, "memory", "derive", "--event", "a1", "--input", str(items)).code == 0
    human = run_cli("--db", db, "emotion")
    assert human.code == 0 and human.out.startswith("valence +0.")
    data = json.loads(run_cli("--db", db, "--json", "emotion").out)
    assert data["scope"] == {"persona": "default", "project": "default"}
    assert 0.99 < data["emotion"]["factor"] <= 1.0 and data["emotion"]["expressed_valence"] == 0.8
