"""``yiji bench extraction`` and ``yiji extraction retry --all`` as users run them, against a loopback
fake model."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from yiji_bench.extraction import SHIPPED_SETS, Expected, Turn, default_data, load_labelled, score_turn

from .conftest import config_env, run_yiji
from .fakeprovider import FakeProvider, chat_reply, server_error

LABELLED = {
    "sessions": [
        {
            "id": "s1",
            "turns": [
                {
                    "role": "user",
                    "text": "我三月搬到了杭州。",
                    "at": "2025-06-10T20:00:00+08:00",
                    "expect": [{"kinds": ["fact"], "must": ["杭州"], "key": "home.city"}],
                },
                {
                    "role": "assistant",
                    "text": "你喜欢杭州吗？",
                    "at": "2025-06-10T20:01:00+08:00",
                    "tags": ["q"],
                },
                {
                    "role": "user",
                    "text": "如果我住在北京的话就好了。我不吃香菜。周末下雨了。",
                    "at": "2025-06-10T20:02:00+08:00",
                    "expect": [{"kinds": ["preference"], "must": ["香菜"], "key": "food.dislike"}],
                    "tags": ["hypothetical"],
                },
            ],
        }
    ]
}


def item(text: str, quote: str, **kw: Any) -> dict[str, Any]:
    return {"text": text, "quote": quote, "kind": "fact", "basis": "user_statement", "confidence": 0.9, **kw}


def env_for(fake: FakeProvider, tmp_path: Path) -> dict[str, str]:
    return config_env(
        tmp_path,
        f'timezone = "Asia/Shanghai"\n[extraction]\nbase_url = "{fake.base_url}"\nmodel = "fake"\n'
        "timeout_seconds = 10\n",
    )


def test_the_shipped_labelled_set_covers_the_rules() -> None:
    turns = load_labelled(default_data())
    assert len(turns) >= 60
    tags = set().union(*(t.tags for t in turns))
    assert {
        "hypothetical",
        "question",
        "third_party",
        "plan",
        "sarcasm",
        "book_quote",
        "relative_date",
    } <= tags
    kinds = {k for t in turns for e in t.expect for k in e.kinds}
    assert {"fact", "preference", "episode", "emotion", "agreement", "growth"} <= kinds
    assert {t.role for t in turns} == {"user", "assistant"}
    assert sum(1 for t in turns if any("\u4e00" <= ch <= "\u9fff" for ch in t.text)) > len(turns) / 2


@pytest.mark.parametrize("name", [n for n in SHIPPED_SETS if n != "labelled"])
def test_the_other_shipped_sets_share_no_turn_with_the_first(name: str) -> None:
    turns = load_labelled(default_data(name))
    assert len(turns) >= 30 and {t.role for t in turns} == {"user", "assistant"}
    assert all(not e.key for t in turns for e in t.also)  # extra faithful memories are never keyed
    others = [n for n in SHIPPED_SETS if n != name]
    assert not {t.text for t in turns} & {t.text for n in others for t in load_labelled(default_data(n))}


def test_bench_scores_precision_recall_and_forbidden_keys(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    data = tmp_path / "labelled.json"
    data.write_text(json.dumps(LABELLED, ensure_ascii=False), encoding="utf-8")
    fake_provider.script_chat(
        chat_reply(
            {
                "memories": [
                    item(
                        "用户住在杭州", "我三月搬到了杭州", subject="user", fact_key="home.city", value="杭州"
                    ),
                    item("用户住在杭州。", "搬到了杭州"),  # a duplicate, dropped
                ]
            }
        ),
        chat_reply({"memories": []}),
        chat_reply(
            {
                "memories": [
                    item("用户住在北京", "我住在北京", subject="user", fact_key="home.city", value="北京"),
                    item("用户讨厌做饭", "周末下雨了", kind="observation"),  # stored, not expected
                ]
            }
        ),
    )
    result = run_yiji(
        "--json", "bench", "extraction", "--data", str(data), env=env_for(fake_provider, tmp_path)
    )
    assert result.code == 0, result.stderr
    report = json.loads(result.out)
    assert report["turns"] == 3
    assert (report["accepted"], report["faithful"], report["precision"]) == (2, 1, 0.5)
    assert (report["expected"], report["recalled"], report["recall"]) == (2, 1, 0.5)
    assert report["duplicates"] == 1
    assert report["rejections_by_rule"] == {"duplicate": 1, "conditional_or_question_not_fact": 1}
    assert report["assistant_as_user_fact"] == 0 and report["user_key_on_forbidden"] == 0
    # "讨厌做饭" is not in its quote: the memory keeps the user's own words instead
    assert report["unfaithful"][0]["memory"] == "用户说：“周末下雨了”"
    # The event's local time was sent in the configured timezone.
    assert ", Asia/Shanghai, UTC+0800" in fake_provider.requests[0].json()["messages"][1]["content"]


class _Stored(SimpleNamespace):
    def __or__(self, more: dict[str, Any]) -> _Stored:
        return _Stored(**(vars(self) | more))


def _stored(text: str, kind: str, key: str | None = None) -> Any:
    return _Stored(
        text=text,
        kind=kind,
        basis="user_statement",
        fact_key=key,
        subject="user" if key else None,
        quote=text,
    )


def test_also_entries_count_as_faithful_but_not_as_recall() -> None:
    turn = Turn(
        session="s",
        role="user",
        text="我三月搬到了杭州，现在住在西湖边上。",
        at="2025-06-10T20:00:00+08:00",
        expect=(Expected(("fact",), ("杭州",), "home.city"),),
        tags=frozenset(),
        also=(Expected(("fact", "observation"), ("西湖",)),),
    )
    score = score_turn(
        turn,
        [
            _stored("用户现在住在西湖边上", "observation"),  # faithful, not required
            _stored("用户住在西湖边上", "fact", "home.city"),  # a key where none is expected
            _stored("用户在西湖边上散步", "episode"),  # a kind the entry does not accept
        ],
    )
    assert (score.accepted, score.faithful, score.faithful_expected) == (3, 1, 0)
    assert (score.expected, score.recalled) == (1, 0)
    again = score_turn(turn, [_stored("用户搬到了杭州", "fact", "home.city"), _stored("住在西湖边", "fact")])
    assert (again.faithful, again.faithful_expected, again.recalled, again.duplicates) == (2, 1, 1, 0)


def test_bench_runs_a_shipped_set_by_name(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(chat_reply({"memories": []}))
    result = run_yiji(
        "--json",
        "bench",
        "extraction",
        "--data",
        "heldout",
        "--limit",
        "1",
        env=env_for(fake_provider, tmp_path),
    )
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["turns"] == 1 and report["data"].endswith("extraction_heldout.json")


def test_bench_scores_several_sets_each_and_pooled(fake_provider: FakeProvider, tmp_path: Path) -> None:
    data = tmp_path / "labelled.json"
    data.write_text(json.dumps(LABELLED, ensure_ascii=False), encoding="utf-8")
    moved = item("用户住在杭州", "我三月搬到了杭州", subject="user", fact_key="home.city", value="杭州")
    rained = item("用户讨厌做饭", "周末下雨了", kind="observation")  # stored, not expected
    fake_provider.script_chat(
        chat_reply({"memories": [moved]}),
        chat_reply({"memories": []}),
        chat_reply({"memories": [rained]}),
    )
    log = tmp_path / "turns.jsonl"
    args = [
        "bench",
        "extraction",
        "--data",
        str(data),
        "--data",
        "heldout",
        "--limit",
        "3",
        "--log",
        str(log),
    ]
    result = run_yiji("--json", *args, env=env_for(fake_provider, tmp_path))
    assert result.code == 0, result.err
    report = json.loads(result.out)
    first, second = report["sets"]
    assert (first["turns"], first["accepted"], first["faithful"], first["recalled"]) == (3, 2, 1, 1)
    assert second["data"].endswith("extraction_heldout.json") and second["turns"] == 3
    pooled = report["pooled"]
    assert pooled["turns"] == 6 and pooled["data"] == "labelled, heldout"
    assert (pooled["accepted"], pooled["faithful"], pooled["precision"]) == (2, 1, 0.5)
    assert pooled["expected"] == first["expected"] + second["expected"]
    assert pooled["recall"] == round(1 / pooled["expected"], 3)
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [Path(t["data"]).name for t in logged] == ["labelled.json"] * 3 + ["extraction_heldout.json"] * 3

    shown = run_yiji(
        "bench", "extraction", "--data", "all", "--limit", "1", env=env_for(fake_provider, tmp_path)
    )
    assert shown.code == 0, shown.err
    assert [line.split()[0] for line in shown.out.splitlines()[: len(SHIPPED_SETS)]] == list(SHIPPED_SETS)
    assert f"pooled: {len(SHIPPED_SETS)} turns" in shown.out


def test_bench_needs_an_endpoint(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    result = run_yiji(
        "bench", "extraction", env={"YIJI_DB": str(tmp_path / "y.db"), "YIJI_CONFIG": str(empty)}
    )
    assert result.code == 2
    assert "extraction" in result.err


def test_retry_all_works_through_the_backlog(fake_provider: FakeProvider, tmp_path: Path) -> None:
    env = env_for(fake_provider, tmp_path)
    fake_provider.script_chat(*[server_error() for _ in range(5)])
    for i in range(5):
        submitted = run_yiji("event", "submit", "--session", "s", "--role", "user", f"第{i}条", env=env)
        assert submitted.code == 0, submitted.err
    first = run_yiji("--json", "extraction", "retry", "--all", "--batch-size", "2", env=env)
    assert first.code == 0, first.err
    assert json.loads(first.out)["completed"] == 5
    again = run_yiji("--json", "extraction", "retry", "--all", env=env)
    assert json.loads(again.out) | {"scope": None} == {
        "scope": None,
        "tried": 0,
        "completed": 0,
        "still_pending": 0,
        "failures": [],
    }
    both = run_yiji("extraction", "retry", "--all", "--event", "x", env=env)
    assert both.code == 2 and "--all" in both.err


def test_kept_answers_are_replayed_without_the_endpoint(fake_provider: FakeProvider, tmp_path: Path) -> None:
    data = tmp_path / "labelled.json"
    data.write_text(json.dumps(LABELLED, ensure_ascii=False), encoding="utf-8")
    answers = tmp_path / "answers"
    moved = item("用户住在杭州", "我三月搬到了杭州", subject="user", fact_key="home.city", value="杭州")
    fake_provider.script_chat(chat_reply({"memories": [moved]}), server_error(), chat_reply({"memories": []}))
    env = env_for(fake_provider, tmp_path) | {"YIJI_TEST_KEY": "sk-test-0123456789abcdef"}
    config = env["YIJI_CONFIG"]
    Path(config).write_text(
        Path(config)
        .read_text(encoding="utf-8")
        .replace("[extraction]\n", '[extraction]\napi_key_env = "YIJI_TEST_KEY"\n'),
        encoding="utf-8",
    )
    args = ("--json", "bench", "extraction", "--data", str(data), "--answers", str(answers))
    first = run_yiji(*args, env=env)
    assert first.code == 0, first.stderr
    asked = len(fake_provider.requests)
    report = json.loads(first.out)
    assert report["answers"] == {"replayed": 0, "asked": asked}
    assert report["still_pending"] == 1  # the failed answer is not kept
    kept = sorted(answers.iterdir())
    assert len(kept) == asked - 1 and not any(p.name.endswith(".part") for p in kept)
    assert not any(b"sk-test" in p.read_bytes() for p in kept)  # headers are never kept

    fake_provider.script_chat(chat_reply({"memories": []}))
    again = run_yiji(*args, env=env)
    assert again.code == 0, again.stderr
    replayed = json.loads(again.out)
    assert len(fake_provider.requests) == asked + 1  # only the turn that failed asks again
    assert replayed["answers"] == {"replayed": asked - 1, "asked": 1}
    assert (replayed["accepted"], replayed["faithful"]) == (report["accepted"], report["faithful"])
    assert "answers: 3 replayed, 0 asked of the endpoint" in run_yiji(*args[1:], env=env).out


def test_ablation_replays_kept_answers_with_each_rule_off(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    data = tmp_path / "labelled.json"
    data.write_text(json.dumps(LABELLED, ensure_ascii=False), encoding="utf-8")
    answers = tmp_path / "answers"
    moved = item("用户住在杭州", "我三月搬到了杭州", subject="user", fact_key="home.city", value="杭州")
    again = item("用户住在杭州。", "搬到了杭州")  # a duplicate while the rule runs
    fake_provider.script_chat(
        chat_reply({"memories": [moved, again]}),
        chat_reply({"memories": []}),
        chat_reply({"memories": [item("好", "周末下雨了", kind="observation")]}),
    )
    env = env_for(fake_provider, tmp_path)
    kept = run_yiji("--json", "bench", "extraction", "--data", str(data), "--answers", str(answers), env=env)
    assert kept.code == 0, kept.err
    asked = len(fake_provider.requests)

    args = ["bench", "extraction", "--data", str(data), "--answers", str(answers), "--ablate"]
    result = run_yiji("--json", *args, "--rule", "duplicate", "--rule", "small_talk", env=env)
    assert result.code == 0, result.err
    assert len(fake_provider.requests) == asked  # every answer replayed
    report = json.loads(result.out)
    assert report["with_all_rules"] | {"small_talk_stored": 0} == {
        "accepted": 2,
        "precision": 0.5,
        "recall": 0.5,
        "safety": 0,
        "small_talk_stored": 0,
    }
    by_rule = {row["rule"]: row for row in report["rules"]}
    duplicate = by_rule["duplicate"]
    assert duplicate["fired"] == 1  # the first turn stores the repeat too
    assert duplicate["all_sets"]["without"]["accepted"] == 3
    assert duplicate["unseen_sets"] == []  # a file of one's own is no shipped set written after the rule
    assert duplicate["all_sets"]["without"]["precision"] == 0.333  # the repeat stored matches nothing
    assert duplicate["keep"] is True
    assert by_rule["small_talk"]["fired"] == 0
    assert report["answers"] == {"replayed": asked, "asked": 0}

    shown = run_yiji(*args, "--rule", "duplicate", env=env)
    assert shown.code == 0, shown.err
    assert "duplicate" in shown.out and "P 0.5 R 0.5 S 0 -> P 0.333 R 0.5 S 0" in shown.out
    unknown = run_yiji(*args, "--rule", "no_such_rule", env=env)
    assert unknown.code == 2 and "rules" in unknown.err
    needs = run_yiji("bench", "extraction", "--data", str(data), "--ablate", env=env)
    assert needs.code == 2 and "--answers" in needs.err


def test_the_rule_history_names_a_shipped_set_for_every_switchable_rule() -> None:
    from yiji.domain.rule_plan import SWITCHABLE
    from yiji_bench.extraction import rule_history

    history = rule_history()
    assert set(history) == set(SWITCHABLE)
    assert set(history.values()) <= set(SHIPPED_SETS)


def test_response_formats_side_by_side(fake_provider: FakeProvider, tmp_path: Path) -> None:
    data = tmp_path / "labelled.json"
    data.write_text(json.dumps(LABELLED, ensure_ascii=False), encoding="utf-8")
    moved = item("用户住在杭州", "我三月搬到了杭州", subject="user", fact_key="home.city", value="杭州")
    fake_provider.script_chat(chat_reply({"memories": [moved]}))  # the first format's first turn
    args = ["bench", "extraction", "--data", str(data), "--response-format", "json_object"]
    result = run_yiji(
        "--json", *args, "--response-format", "json_object_schema", env=env_for(fake_provider, tmp_path)
    )
    assert result.code == 0, result.err
    formats = json.loads(result.out)["formats"]
    assert list(formats) == ["json_object", "json_object_schema"]
    assert formats["json_object"]["recalled"] == 1 and formats["json_object_schema"]["recalled"] == 0
    sent = [r.json()["response_format"]["type"] for r in fake_provider.requests]
    assert sent == ["json_object"] * 3 + ["json_object"] * 3  # the schema rides inside json_object
    assert "schema" in fake_provider.requests[3].json()["response_format"]
    assert "schema" not in fake_provider.requests[0].json()["response_format"]


def test_reviewer_scores_beside_precision() -> None:
    turn = Turn(
        session="s",
        role="user",
        text="谢谢你！我三月搬到了杭州。",
        at="2025-06-10T20:00:00+08:00",
        expect=(Expected(("fact",), ("杭州",), "home.city"),),
        tags=frozenset({"thanks"}),
        also=(Expected(("episode",), ("搬",)),),
    )
    score = score_turn(
        turn,
        [
            _stored("用户住在杭州", "fact", "home.city") | {"quote": "我三月搬到了杭州"},  # waits
            _stored("用户说：“我三月搬到了杭州”", "observation") | {"quote": "我三月搬到了杭州"},
            _stored("谢谢你", "observation") | {"quote": "谢谢你"},
        ],
    )
    assert (score.accepted, score.faithful) == (3, 1)
    assert score.small_talk_stored == 2  # on a thanks turn, matching nothing
    assert score.restates_quote == 2  # the wrapped quote and the bare one
    assert (score.kind_judged, score.kind_right) == (2, 1)  # the wrapper matches the move under a wrong kind
    assert (score.waiting, score.waiting_faithful) == (1, 1)


@pytest.mark.parametrize("name", list(SHIPPED_SETS))
def test_greetings_thanks_and_comfort_expect_nothing(name: str) -> None:
    from yiji_bench.extraction import SMALL_TALK_TAGS

    assert not [t.text for t in load_labelled(default_data(name)) if t.tags & SMALL_TALK_TAGS and t.expect]
