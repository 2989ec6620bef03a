"""``yiji extraction check`` and ``yiji extraction retry`` as users run them, against loopback fake endpoints:
healthy, silent, malformed, one that answers the same memory for every turn, one that is down and one that
answers HTTP 500."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from yiji.evaluation.extraction_check import check_data
from yiji.evaluation.labelled import load_labelled

from .conftest import config_env
from .fakeprovider import FAKE_SECRET, FakeProvider, chat_reply, content_not_json, server_error
from .inprocess import run_cli


def item(text: str, quote: str, kind: str, **kw: Any) -> dict[str, Any]:
    return {"text": text, "quote": quote, "kind": kind, "basis": "user_statement", "confidence": 0.9, **kw}


HEALTHY = [
    {"memories": []},  # the assistant's greeting
    {
        "memories": [
            item(
                "用户不吃香菜",
                "我不吃香菜",
                "preference",
                subject="user",
                fact_key="food.dislike",
                value="香菜",
            )
        ]
    },
    {"memories": [item("用户三月搬到了杭州", "我三月搬到了杭州", "episode")]},
    {"memories": []},  # a request: nothing to remember
    {"memories": []},  # thanks
    {
        "memories": [
            item(
                "The user went to a support group yesterday", "I went to a support group yesterday", "episode"
            )
        ]
    },
    {"memories": [item("The user's cat is called Miso", "My cat is called Miso", "fact")]},
    {"memories": []},  # a request
    {"memories": []},  # thanks
]


def env_for(fake: FakeProvider, tmp_path: Path, response_format: str = "json_schema") -> dict[str, str]:
    return config_env(
        tmp_path,
        f'timezone = "Asia/Shanghai"\n[extraction]\nbase_url = "{fake.base_url}"\nmodel = "fake"\n'
        f'timeout_seconds = 60\nresponse_format = "{response_format}"\n',
    )


def test_the_built_in_turns_cover_both_languages_and_small_talk() -> None:
    turns = load_labelled(check_data())
    assert len(turns) == len(HEALTHY)
    assert any(t.expect and any("\u4e00" <= ch <= "\u9fff" for ch in t.text) for t in turns)
    assert any(t.expect and t.text.isascii() for t in turns)
    assert any(not t.expect for t in turns if t.role == "user")


def checked(env: dict[str, str], code: int) -> dict[str, Any]:
    """``yiji --json extraction check`` with ``env``: it exits ``code``; its JSON report."""
    result = run_cli("--json", "extraction", "check", env=env)
    assert result.code == code, result.out + result.err
    report: dict[str, Any] = json.loads(result.out)
    return report


def test_a_healthy_endpoint_passes(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(*(chat_reply(answer) for answer in HEALTHY))
    env = env_for(fake_provider, tmp_path)
    report = checked(env, 0)
    assert report["verdict"] == "ok" and report["fixes"] == []
    assert report["checks"] == {
        "reachable": True,
        "answers_valid": True,
        "not_silent": True,
        "grounded": True,
        "latency": True,
    }
    assert report["recall"] == 1.0 and report["precision"] == 1.0 and report["silent_turns"] == 0
    assert report["in_speakers_words"] == 0 and report["failures"] == []
    assert len(fake_provider.requests) == len(HEALTHY)
    assert not Path(env["YIJI_DB"]).exists()  # the user's database is never opened


def test_a_silent_model_gets_the_setting_to_change(fake_provider: FakeProvider, tmp_path: Path) -> None:
    # no script: the fake answers {"memories": []} to every turn
    env = env_for(fake_provider, tmp_path, "json_object_schema")
    result = run_cli("extraction", "check", env=env)
    assert result.code == 1
    assert "FAIL not_silent" in result.out and "verdict: silent model" in result.out
    assert 'set response_format = "json_object" (now "json_object_schema")' in result.out

    report = checked(env_for(fake_provider, tmp_path, "json_object"), 1)
    assert report["verdict"] == "silent model"
    assert "max_tokens" in report["fixes"][0] and "response_format" not in report["fixes"][0]


def test_a_malformed_endpoint_is_named_without_its_body(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(*(content_not_json() for _ in HEALTHY))
    result = run_cli("--json", "extraction", "check", env=env_for(fake_provider, tmp_path))
    assert result.code == 1
    report = json.loads(result.out)
    assert report["verdict"] == "invalid answers" and report["checks"]["answers_valid"] is False
    assert report["checks"]["reachable"] is True and report["checks"]["not_silent"] is None
    assert report["fixes"][0].startswith(
        'the endpoint\'s answers were not {"memories": [...]} on 9 of 9 calls'
    )
    assert "json_object" in report["fixes"][0]
    assert FAKE_SECRET not in result.out + result.err
    assert {t["state"] for t in report["turns"]} == {"pending"}


def test_the_check_needs_an_endpoint(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    result = run_cli(
        "extraction", "check", env={"YIJI_DB": str(tmp_path / "y.db"), "YIJI_CONFIG": str(empty)}
    )
    assert result.code == 2 and "extraction" in result.err


CONSTANT = {
    "memories": [
        {
            "clause": 1,
            "kind": "preference",
            "text": "用户喜欢喝乌龙茶",
            "basis": "user_statement",
            "confidence": 0.9,
        }
    ]
}
"""A model that ignores its input: the same memory, of the first clause, for every turn."""


def test_a_model_that_ignores_its_input_fails(fake_provider: FakeProvider, tmp_path: Path) -> None:
    # yiji keeps the speaker's words of the quoted clause where a statement says more than its quote, so
    # on the turns that state something this model scores as if it had read them; the requests, which
    # hold nothing to remember, give it away
    fake_provider.script_chat(*(chat_reply(CONSTANT) for _ in HEALTHY))
    env = env_for(fake_provider, tmp_path)
    report = checked(env, 1)
    assert report["verdict"] == "weak" and report["checks"]["grounded"] is False
    assert report["stored_on_turns_without_memories"] == 2
    assert report["precision"] is not None and report["precision"] < 1.0
    assert report["in_speakers_words"] >= 4
    assert "turns that hold nothing to remember" in report["fixes"][0]
    stored = {t["turn"]: t["stored"] for t in report["turns"]}
    assert stored["Please write me a short poem about autumn."]

    fake_provider.script_chat(*(chat_reply(CONSTANT) for _ in HEALTHY))
    plain = run_cli("extraction", "check", env=env)
    assert plain.code == 1
    assert "FAIL grounded" in plain.out and "verdict: weak" in plain.out
    assert "stored from turns that hold nothing to remember: 2" in plain.out


def test_an_endpoint_that_is_down_is_named_first(fake_provider: FakeProvider, tmp_path: Path) -> None:
    env = env_for(fake_provider, tmp_path)
    url = fake_provider.base_url
    fake_provider.stop()
    result = run_cli("extraction", "check", env=env)
    assert result.code == 1, result.err
    lines = result.out.splitlines()
    assert lines[1:6] == [
        "FAIL reachable",
        "n/a  answers_valid",
        "n/a  not_silent",
        "n/a  grounded",
        "ok   latency",
    ]
    assert "no call of 9 was answered: nothing about the model could be judged" in lines
    fixes = [line for line in lines if line.startswith("fix: ")]
    assert fixes == [
        f"fix: could not reach base_url {url} on 9 of 9 calls: start the server, or correct base_url"
    ]
    assert lines[-1] == "verdict: endpoint failed"
    assert "ok   not_silent" not in result.out and "precision None" not in result.out

    report = json.loads(run_cli("--json", "extraction", "check", env=env).out)
    assert report["checks"]["not_silent"] is None and report["ok"] is False
    assert report["answered"] == 0 and report["recall"] is None and report["precision"] is None
    assert report["failures"] == [{"reason": "unreachable", "events": 9}]


def test_an_endpoint_answering_http_500_is_named_by_status_only(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.script_chat(*(server_error() for _ in HEALTHY))
    result = run_cli("extraction", "check", env=env_for(fake_provider, tmp_path))
    assert result.code == 1
    assert "FAIL reachable" in result.out and "verdict: endpoint failed" in result.out
    assert (
        "fix: the endpoint answered HTTP 500 on 9 of 9 calls: look at the server's log, and check model"
        in (result.out)
    )
    assert "answers are not" not in result.out and "answers were not" not in result.out
    assert FAKE_SECRET not in result.out + result.err and "Internal error" not in result.out


def test_some_calls_failing_is_said_with_the_share(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(
        *(server_error() if i % 3 == 0 else chat_reply(a) for i, a in enumerate(HEALTHY))
    )
    result = run_cli("--json", "extraction", "check", env=env_for(fake_provider, tmp_path))
    assert result.code == 1
    report = json.loads(result.out)
    assert report["verdict"] == "endpoint failed" and report["answered"] == 6
    assert report["checks"]["answers_valid"] is True
    assert report["fixes"][0].startswith("the endpoint answered HTTP 500 on 3 of 9 calls")


def _submit_three(env: dict[str, str]) -> None:
    for i in range(3):
        submitted = run_cli(
            "event",
            "submit",
            "--id",
            f"x{i}",
            "--session",
            "s",
            "--role",
            "user",
            f"我第{i}次搬家了。",
            env=env,
        )
        assert submitted.code == 0, submitted.err


def test_retry_with_the_endpoint_down_exits_1_and_says_why(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    env = env_for(fake_provider, tmp_path)
    fake_provider.stop()
    _submit_three(env)
    retried = run_cli("extraction", "retry", env=env)
    assert retried.code == 1, retried.err
    assert retried.out.splitlines()[-1] == "completed 0, still pending 3 (the endpoint could not be reached)"
    every = run_cli("extraction", "retry", "--all", env=env)
    assert every.code == 1
    assert every.out.strip() == "tried 3: completed 0, still pending 3 (the endpoint could not be reached)"
    one = run_cli("--json", "extraction", "retry", "--event", "x1", env=env)
    assert one.code == 1
    report = json.loads(one.out)
    assert report["failures"] == [{"reason": "unreachable", "events": 1}]
    assert report["results"][0]["reason"] == "unreachable"


def test_retry_names_the_http_status_never_the_body(fake_provider: FakeProvider, tmp_path: Path) -> None:
    env = env_for(fake_provider, tmp_path)
    fake_provider.script_chat(*(server_error() for _ in range(3)))
    _submit_three(env)
    fake_provider.script_chat(*(server_error() for _ in range(3)))
    retried = run_cli("extraction", "retry", env=env)
    assert retried.code == 1
    assert retried.out.splitlines()[-1] == "completed 0, still pending 3 (the endpoint answered HTTP 500)"
    assert FAKE_SECRET not in retried.out + retried.err
    # the endpoint mends: the same retry completes every event and exits 0
    mended = run_cli("extraction", "retry", env=env)
    assert mended.code == 0, mended.err
    assert mended.out.splitlines()[-1] == "completed 3, still pending 0"
