"""The review queue end to end: extraction proposes, a person accepts, edits or rejects.

A real SQLite file, a real loopback OpenAI-compatible server for extraction, the CLI as users run it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.config import Config, ExtractionConfig
from yiji.domain.review import arrival_state
from yiji.errors import Conflict, InvalidInput, NotFound
from yiji.models import EventIn, parse
from yiji.models.lifecycle import CorrectRequest, DeleteRequest
from yiji.models.memories import MemoryQuery, ReviewEdit
from yiji.models.recall import RecallQuery
from yiji.models.resume import ResumeRequest
from yiji.service import MemoryService, build_extractor
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import MOVED_TO_SHANGHAI, FakeProvider, chat_reply
from .inprocess import run_cli
from .lifecycle_helpers import derive, fact

KEY = "YIJI_REVIEW_TEST_KEY"

MOVED = MOVED_TO_SHANGHAI
RUNS = {
    "text": "用户每天早上沿着外滩跑步",
    "quote": "每天早上沿着外滩跑步",
    "kind": "episode",
    "basis": "user_statement",
    "confidence": 0.7,
}
EVENT_TEXT = "我最近搬到了上海，每天早上沿着外滩跑步。"

Open = Callable[..., MemoryService]


@pytest.fixture
def open_reviewing(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Open]:
    monkeypatch.setenv(KEY, "sk-local-review")
    opened: list[MemoryService] = []
    http = httpx.Client()

    def open_service(review: str = "facts") -> MemoryService:
        config = Config(
            db=db_path,
            extraction=ExtractionConfig(
                base_url=fake_provider.base_url,
                model="fake",
                api_key_env=KEY,
                timeout_seconds=5,
                review=review,
            ),
        )
        service = make_service(db_path, config, clock=clock, extractor=build_extractor(config, http))
        opened.append(service)
        return service

    yield open_service
    for service in opened:
        service.close()
    http.close()


def submit(service: MemoryService, eid: str, text: str, role: str = "user", **kw: Any) -> Any:
    return service.event_submit(parse(EventIn, {"id": eid, "session": "s", "role": role, "text": text, **kw}))


def recalled(service: MemoryService, query: str) -> list[tuple[str, str]]:
    items = service.memory_recall(parse(RecallQuery, {"query": query})).items
    return [(i.type, i.memory.id if i.memory else (i.event.id if i.event else "")) for i in items]


def listed(service: MemoryService, review: str = "accepted") -> list[str]:
    page = service.memory_page(MemoryQuery(review=review, view="history"))  # type: ignore[arg-type]
    return [m.text for m in page.memories]


@pytest.mark.parametrize(
    ("policy", "kind", "keyed", "state"),
    [
        ("none", "fact", True, "accepted"),
        ("none", "agreement", False, "accepted"),
        ("facts", "fact", True, "proposed"),
        ("facts", "preference", True, "proposed"),
        ("facts", "agreement", False, "proposed"),
        ("facts", "fact", False, "accepted"),
        ("facts", "episode", False, "accepted"),
        ("facts", "emotion", False, "accepted"),
        ("all", "episode", False, "proposed"),
        ("all", "growth", False, "proposed"),
    ],
)
def test_arrival_state_per_policy(policy: str, kind: str, keyed: bool, state: str) -> None:
    subject, key = ("user", "home.city") if keyed else (None, None)
    assert arrival_state(policy, kind, subject, key) == state


def test_facts_policy_proposes_keyed_facts_and_keeps_them_out_of_recall_until_accepted(
    open_reviewing: Open, fake_provider: FakeProvider
) -> None:
    service = open_reviewing("facts")
    fake_provider.script_chat(chat_reply({"memories": [MOVED, RUNS]}))
    result = submit(service, "e1", EVENT_TEXT)
    moved_id, runs_id = result.memory_ids
    assert result.extraction["proposed"] == [moved_id]
    assert service.memory_get(moved_id).review_state == "proposed"
    assert service.memory_get(runs_id).review_state == "accepted"
    assert listed(service) == [RUNS["text"]] and listed(service, "proposed") == [MOVED["text"]]
    assert ("memory", moved_id) not in recalled(service, "上海")
    assert service.fact_history("user", "home.city") == []
    queue = service.review_queue()
    assert queue["waiting"] == 1 and [m.id for m in queue["proposals"]] == [moved_id]
    assert service.doctor()["review"] == {"accepted": 1, "proposed": 1, "rejected": 0}
    assert any("waiting for review" in w for w in service.doctor()["warnings"])

    done = service.memory_review(moved_id, "accept", reviewer="tester", note="checked with the user")
    assert done.memory.review_state == "accepted" and done.memory.reviewed_by == "tester"
    assert done.memory.reviewed_at is not None and done.memory.review_note == "checked with the user"
    assert ("memory", moved_id) in recalled(service, "上海")
    assert [m.id for m in service.fact_history("user", "home.city")] == [moved_id]
    assert service.review_queue()["waiting"] == 0


def test_a_waiting_proposal_leaves_its_event_searchable_as_a_raw_event(
    open_reviewing: Open, fake_provider: FakeProvider
) -> None:
    service = open_reviewing("all")
    fake_provider.script_chat(chat_reply({"memories": [MOVED, RUNS]}))
    result = submit(service, "e1", EVENT_TEXT)
    assert set(result.extraction["proposed"]) == set(result.memory_ids)
    assert recalled(service, "外滩") == [("raw_event", "e1")]
    service.memory_review(result.memory_ids[1], "reject", reviewer="tester", note="small talk")
    assert recalled(service, "外滩") == [("raw_event", "e1")]
    service.memory_review(result.memory_ids[0], "accept", reviewer="tester")
    assert recalled(service, "上海") == [("memory", result.memory_ids[0])]
    service.reindex()  # a rebuilt index agrees with the one kept in step
    assert recalled(service, "上海") == [("memory", result.memory_ids[0])]
    # the accepted memory now stands for its event (its index row holds the source text)
    assert recalled(service, "外滩") == [("memory", result.memory_ids[0])]


def test_accepting_closes_the_previous_interval_at_its_own_valid_at(
    open_reviewing: Open, fake_provider: FakeProvider, clock: FixedClock
) -> None:
    service = open_reviewing("facts")
    submit(service, "e0", "我住在杭州。", occurred_at="2026-01-01T00:00:00+00:00")
    # a manual derivation is always accepted
    (hangzhou,) = derive(service, "e0", fact("用户住在杭州", "我住在杭州"))
    fake_provider.script_chat(chat_reply({"memories": [MOVED]}))
    moved_id = submit(service, "e1", EVENT_TEXT, occurred_at="2026-03-01T00:00:00+00:00").memory_ids[0]
    assert service.memory_get(hangzhou).invalid_at is None  # a proposal closes nothing
    current = service.memory_list(kinds=["fact"])[1]
    assert [m.id for m in current] == [hangzhou]
    clock.advance(timedelta(days=30))
    service.memory_review(moved_id, "accept", reviewer="tester")
    moved = service.memory_get(moved_id)
    assert service.memory_get(hangzhou).invalid_at == moved.valid_at
    assert moved.valid_at.isoformat().startswith("2026-03-01")
    assert [m.id for m in service.memory_list(kinds=["fact"])[1]] == [moved_id]


def test_proposed_agreements_and_emotions_stay_out_of_resume_and_current_emotion(
    open_reviewing: Open, fake_provider: FakeProvider
) -> None:
    service = open_reviewing("all")
    agreement = {
        "text": "我们约好每周日一起复盘",
        "quote": "每周日一起复盘",
        "kind": "agreement",
        "basis": "user_statement",
        "confidence": 0.9,
    }
    feeling = {
        "text": "助手为用户感到开心",
        "quote": "真为你开心",
        "kind": "emotion",
        "basis": "assistant_expression",
        "confidence": 0.9,
        "valence": 0.8,
        "arousal": 0.6,
    }
    fake_provider.script_chat(chat_reply({"memories": [agreement]}), chat_reply({"memories": [feeling]}))
    agreed = submit(service, "e1", "那就说定了，每周日一起复盘。").memory_ids[0]
    felt = submit(service, "e2", "真为你开心！", role="assistant").memory_ids[0]
    pack = service.session_resume(ResumeRequest(query="复盘", budget=100_000))
    assert agreement["text"] not in pack.context
    assert service.current_emotion().emotion is None
    service.memory_review(agreed, "accept", reviewer="tester")
    service.memory_review(felt, "accept", reviewer="tester")
    assert agreement["text"] in service.session_resume(ResumeRequest(query="复盘", budget=100_000)).context
    assert service.current_emotion().emotion is not None


def test_a_rejected_claim_is_not_proposed_again_when_the_event_is_retried(
    open_reviewing: Open, fake_provider: FakeProvider, db_path: Path
) -> None:
    service = open_reviewing("facts")
    fake_provider.script_chat(chat_reply({"memories": [MOVED]}))
    moved_id = submit(service, "e1", EVENT_TEXT).memory_ids[0]
    rejected = service.memory_review(moved_id, "reject", reviewer="tester", note="moved back already")
    assert rejected.memory.review_state == "rejected" and rejected.memory.review_note == "moved back already"
    assert listed(service, "rejected") == [MOVED["text"]] and listed(service) == []
    # an interrupted run leaves the event pending again: the retry gets the same claim, worded anew
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE events SET extraction_state = 'pending' WHERE id = 'e1'")
    conn.close()
    fake_provider.script_chat(chat_reply({"memories": [{**MOVED, "text": "用户最近搬到了上海"}, RUNS]}))
    outcome = service.extraction_retry("e1")["results"][0]
    assert outcome["state"] == "done"
    assert [service.memory_get(i).text for i in outcome["memory_ids"]] == [RUNS["text"]]
    assert service.review_counts() == {"accepted": 1, "proposed": 0, "rejected": 1}


def test_editing_a_proposal_is_checked_like_derive_and_bad_input_changes_nothing(
    open_reviewing: Open, fake_provider: FakeProvider
) -> None:
    service = open_reviewing("facts")
    fake_provider.script_chat(chat_reply({"memories": [MOVED]}))
    moved_id = submit(service, "e1", EVENT_TEXT).memory_ids[0]
    before = service.memory_get(moved_id)

    with pytest.raises(InvalidInput) as bad:  # a user statement cannot be a role emotion
        service.memory_review(
            moved_id, "edit", reviewer="t", edit=parse(ReviewEdit, {"kind": "emotion"}), accept=True
        )
    assert "emotion" in bad.value.message and bad.value.exit_code == 2
    with pytest.raises(InvalidInput, match="fact_key"):
        service.memory_review(moved_id, "edit", reviewer="t", edit=parse(ReviewEdit, {"kind": "episode"}))
    with pytest.raises(InvalidInput, match="edit"):
        service.memory_review(moved_id, "edit", reviewer="t", edit=parse(ReviewEdit, {}))
    with pytest.raises(NotFound):
        service.memory_review("mem_unknown", "accept", reviewer="t")
    assert service.memory_get(moved_id) == before

    edit = parse(ReviewEdit, {"text": "用户住在上海", "valid_at": "2026-05-01T08:00:00+08:00"})
    done = service.memory_review(moved_id, "edit", reviewer="t", edit=edit)
    assert done.memory.text == "用户住在上海" and done.memory.review_state == "proposed"
    assert done.memory.valid_at.isoformat().startswith("2026-05-01T00:00")
    service.memory_review(moved_id, "accept", reviewer="t")
    for action in ("accept", "reject", "edit"):
        with pytest.raises(Conflict) as conflict:
            service.memory_review(moved_id, action, reviewer="t", edit=edit)  # type: ignore[arg-type]
        assert conflict.value.exit_code == 3 and "accepted, not proposed" in conflict.value.message
    after = service.memory_get(moved_id)
    assert after.text == "用户住在上海" and after.review_state == "accepted"


def test_a_proposal_cannot_be_corrected_and_deletion_takes_every_state(
    open_reviewing: Open, fake_provider: FakeProvider, db_path: Path
) -> None:
    service = open_reviewing("all")
    fake_provider.script_chat(chat_reply({"memories": [MOVED, RUNS]}))
    moved_id, runs_id = submit(service, "e1", EVENT_TEXT).memory_ids
    with pytest.raises(Conflict, match="proposed, not accepted"):
        service.memory_correct(
            parse(
                CorrectRequest,
                {"memory_id": moved_id, "statement": "不对，我没搬家", "text": "x", "quote": "x"},
            )
        )
    service.memory_review(runs_id, "reject", reviewer="t")
    done = service.memory_delete(DeleteRequest(event_id="e1"))
    assert sorted(done.memory_ids) == sorted([moved_id, runs_id])
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    finally:
        conn.close()
    assert service.doctor(scan_for=["外滩", moved_id, runs_id])["ok"]  # no residue in any table or index


def test_exported_review_states_survive_import(
    open_reviewing: Open, fake_provider: FakeProvider, tmp_path: Path, clock: FixedClock
) -> None:
    service = open_reviewing("all")
    fake_provider.script_chat(chat_reply({"memories": [MOVED, RUNS]}))
    moved_id, runs_id = submit(service, "e1", EVENT_TEXT).memory_ids
    service.memory_review(runs_id, "reject", reviewer="tester", note="not worth keeping")
    archive = tmp_path / "out.jsonl"
    service.archive_export(archive, "jsonl")
    backup = tmp_path / "copy.db"
    service.backup_create(backup)
    for name, load in (("from-archive", "archive_import"), ("from-backup", "backup_restore")):
        target = make_service(tmp_path / f"{name}.db", clock=clock)
        getattr(target, load)(archive if load == "archive_import" else backup)
        assert target.memory_get(moved_id).review_state == "proposed"
        rejected = target.memory_get(runs_id)
        assert (rejected.review_state, rejected.reviewed_by, rejected.review_note) == (
            "rejected",
            "tester",
            "not worth keeping",
        )
        assert recalled(target, "外滩") == [("raw_event", "e1")]
        target.close()


# -- the CLI ----------------------------------------------------------------------------------------


def _config_file(tmp_path: Path, fake_provider: FakeProvider) -> Path:
    path = tmp_path / "yiji.toml"
    path.write_text(
        f'[extraction]\nbase_url = "{fake_provider.base_url}"\nmodel = "fake"\napi_key_env = "{KEY}"\n'
        'review = "facts"\n',
        "utf-8",
    )
    return path


def test_cli_review_lists_decides_and_refuses_bad_input(
    tmp_path: Path, fake_provider: FakeProvider, open_reviewing: Open
) -> None:
    db = tmp_path / "cli.db"
    config = _config_file(tmp_path, fake_provider)
    env = {KEY: "sk-local-review"}
    base = ("--db", str(db), "--config", str(config))
    fake_provider.script_chat(*(chat_reply({"memories": [MOVED, RUNS]}) for _ in range(3)))
    for i in range(3):
        sent = run_cli(
            *base, "event", "submit", "--id", f"e{i}", "--session", "s", "--role", "user", EVENT_TEXT, env=env
        )
        assert sent.code == 0, sent.err
    listing = run_cli(*base, "review", "--json", env=env)
    assert listing.code == 0, listing.err
    queue = json.loads(listing.out)
    ids = [m["id"] for m in queue["proposals"]]
    assert queue["waiting"] == 3 and len(ids) == 3
    human = run_cli(*base, "review", env=env)
    assert "3 waiting" in human.out and "PROPOSED" in human.out and MOVED["quote"] in human.out
    listed_json = json.loads(run_cli(*base, "memory", "list", "--review", "proposed", "--json", env=env).out)
    assert [m["id"] for m in listed_json["memories"]] == ids

    accepted = run_cli(*base, "review", "accept", ids[0], "--by", "ann", "--json", env=env)
    assert accepted.code == 0 and json.loads(accepted.out)["memory"]["reviewed_by"] == "ann"
    again = run_cli(*base, "review", "accept", ids[0], env=env)
    assert again.code == 3 and "not proposed" in again.err
    unknown = run_cli(*base, "review", "reject", "mem_nope", env=env)
    assert unknown.code == 2 and "memory" in unknown.err
    invalid = run_cli(*base, "review", "edit", ids[1], "--kind", "emotion", env=env)
    assert (
        invalid.code == 2
        and "basis: an emotion and its values need basis assistant_expression" in invalid.err
    )
    edited = run_cli(*base, "review", "edit", ids[1], "--text", "用户住在上海", "--accept", "--json", env=env)
    assert edited.code == 0, edited.err
    assert json.loads(edited.out)["memory"]["review_state"] == "accepted"

    # a flag that means nothing for the decision is refused by name, as MCP refuses the argument
    for action, flag in (("accept", "--text"), ("accept", "--valid-at"), ("reject", "--accept")):
        meaningless = run_cli(*base, "review", action, ids[2], flag, "用户住在杭州", env=env)
        assert meaningless.code == 2 and flag in meaningless.err and "杭州" not in meaningless.err
    refused = run_cli(*base, "review", "reject", "--all", env=env, input="")
    assert refused.code == 2
    assert refused.err == (
        "yiji: invalid input: --yes: is required to reject every proposal: "
        "there is no terminal to confirm on\n"
    )
    assert json.loads(run_cli(*base, "review", "--json", env=env).out)["waiting"] == 1
    bulk = run_cli(*base, "review", "reject", "--all", "--yes", "--note", "bulk", "--json", env=env)
    assert bulk.code == 0 and json.loads(bulk.out)["memory_ids"] == [ids[2]]
    doctor = json.loads(run_cli(*base, "doctor", "--json", env=env).out)
    assert doctor["review"] == {"accepted": 5, "proposed": 0, "rejected": 1}
    assert "review          accepted=5, proposed=0, rejected=1" in run_cli(*base, "doctor", env=env).out


def test_an_unknown_review_policy_is_refused_by_name(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[extraction]\nreview = "sometimes"\n', "utf-8")
    refused = run_cli("--db", str(tmp_path / "x.db"), "--config", str(config), "review")
    assert refused.code == 2 and "extraction.review" in refused.err and "sometimes" not in refused.err
