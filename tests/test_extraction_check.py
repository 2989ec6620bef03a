"""``yiji extraction check`` as users run it, against loopback fake endpoints: healthy, silent, malformed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from yiji.bench.check import check_data
from yiji.bench.extraction import load_labelled

from .conftest import config_env, run_yiji
from .fakeprovider import FAKE_SECRET, FakeProvider, chat_reply, content_not_json


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
    {"memories": []},  # thanks
    {
        "memories": [
            item(
                "The user went to a support group yesterday", "I went to a support group yesterday", "episode"
            )
        ]
    },
    {"memories": [item("The user's cat is called Miso", "My cat is called Miso", "fact")]},
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


def test_a_healthy_endpoint_passes(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(*(chat_reply(answer) for answer in HEALTHY))
    env = env_for(fake_provider, tmp_path)
    result = run_yiji("--json", "extraction", "check", env=env)
    assert result.code == 0, result.out + result.err
    report = json.loads(result.out)
    assert report["verdict"] == "ok" and report["fixes"] == []
    assert report["checks"] == {"answers_valid": True, "not_silent": True, "grounded": True, "latency": True}
    assert report["recall"] == 1.0 and report["silent_turns"] == 0
    assert len(fake_provider.requests) == len(HEALTHY)
    assert not Path(env["YIJI_DB"]).exists()  # the user's database is never opened


def test_a_silent_model_gets_the_setting_to_change(fake_provider: FakeProvider, tmp_path: Path) -> None:
    # no script: the fake answers {"memories": []} to every turn
    env = env_for(fake_provider, tmp_path, "json_object_schema")
    result = run_yiji("extraction", "check", env=env)
    assert result.code == 1
    assert "FAIL not_silent" in result.out and "verdict: silent model" in result.out
    assert 'set response_format = "json_object" (now "json_object_schema")' in result.out

    plain = run_yiji("--json", "extraction", "check", env=env_for(fake_provider, tmp_path, "json_object"))
    assert plain.code == 1
    report = json.loads(plain.out)
    assert report["verdict"] == "silent model"
    assert "max_tokens" in report["fixes"][0] and "response_format" not in report["fixes"][0]


def test_a_malformed_endpoint_is_named_without_its_body(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(*(content_not_json() for _ in HEALTHY))
    result = run_yiji("--json", "extraction", "check", env=env_for(fake_provider, tmp_path))
    assert result.code == 1
    report = json.loads(result.out)
    assert report["verdict"] == "invalid answers" and report["checks"]["answers_valid"] is False
    assert "json_object" in report["fixes"][0]
    assert FAKE_SECRET not in result.out + result.err
    assert {t["state"] for t in report["turns"]} == {"pending"}


def test_the_check_needs_an_endpoint(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    result = run_yiji(
        "extraction", "check", env={"YIJI_DB": str(tmp_path / "y.db"), "YIJI_CONFIG": str(empty)}
    )
    assert result.code == 2 and "extraction" in result.err
