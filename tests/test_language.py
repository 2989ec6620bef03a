"""The language of plain CLI output: ``[display] language`` (``auto``, ``zh``, ``en``;
``$YIJI_DISPLAY_LANGUAGE``), ``auto`` reading the locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``); the words
are the ones the review UI shows (one table, :mod:`yiji.domain.wording`); ``--json`` never changes. The CLI
runs through its entry point in each locale's environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yiji.demo import DEMO_MEMORIES
from yiji.domain.wording import LANGUAGES, language_of, padded, shared_words, shown_width

from .conftest import CliResult, config_env
from .inprocess import run_cli

ZH = {"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
EN = {"LANG": "C.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}


@pytest.mark.parametrize(
    ("setting", "environ", "language"),
    [
        ("auto", {"LANG": "zh_CN.UTF-8"}, "zh"),
        ("auto", {"LANG": "zh_TW.UTF-8"}, "zh"),
        ("auto", {"LANG": "en_US.UTF-8"}, "en"),
        ("auto", {"LANG": "C"}, "en"),
        ("auto", {}, "en"),
        ("auto", {"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "en_GB.UTF-8"}, "en"),
        ("auto", {"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, "zh"),
        ("auto", {"LC_ALL": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}, "zh"),
        ("auto", {"LC_ALL": "", "LANG": "zh_CN.UTF-8"}, "zh"),  # an empty variable is unset
        ("en", {"LANG": "zh_CN.UTF-8"}, "en"),
        ("zh", {"LANG": "en_US.UTF-8"}, "zh"),
    ],
)
def test_the_language_is_the_setting_else_the_locale(
    setting: str, environ: dict[str, str], language: str
) -> None:
    assert language_of(setting, environ) == language


def test_the_ui_and_the_cli_read_one_table() -> None:
    from yiji.ui.i18n import MESSAGES

    for language in LANGUAGES:
        shared = shared_words(language)
        assert shared.keys() == shared_words("en").keys()
        assert {k: MESSAGES[language][k] for k in shared} == shared


def test_wide_characters_take_two_columns() -> None:
    assert shown_width("人设") == 4 and shown_width("persona") == 7
    assert padded("人设", 6) == "人设  " and padded("3", 3, right=True) == "  3"


def _scenario(tmp_path: Path) -> str:
    """A database with a remembered fact, a proposal waiting, and a raw reply beside the fact's turn."""
    db = str(tmp_path / "l.db")
    said = [
        ("e1", "user", "我住在杭州，每天早上沿着西湖跑步。"),
        ("e2", "assistant", "西湖边跑步一定很舒服。"),
    ]
    for event_id, role, text in said:
        submitted = run_cli(
            "--db", db, "event", "submit", "--id", event_id, "--session", "s1", "--role", role, text
        )
        assert submitted.code == 0, submitted.err
    # the demo's first two memories, without the confidence and gist it gives them
    fact, habit = ({k: v for k, v in m.items() if k not in ("confidence", "gist")} for m in DEMO_MEMORIES[1])
    for memories, flags in (([fact], ()), ([habit], ("--propose",))):
        path = tmp_path / "m.json"
        path.write_text(json.dumps(memories, ensure_ascii=False), encoding="utf-8")
        derived = run_cli("--db", db, "memory", "derive", "--event", "e1", "--input", str(path), *flags)
        assert derived.code == 0, derived.err
    return db


COMMANDS = {
    "recall": ("recall", "杭州"),
    "recall_none": ("recall", "冲浪"),
    "list": ("memory", "list"),
    "proposed": ("memory", "list", "--review", "proposed"),
    "review": ("review",),
    "scopes": ("scopes",),
    "doctor": ("doctor",),
    "events": ("event", "list", "--offset", "9"),
}


def _outputs(db: str, env: dict[str, str], *flags: str) -> dict[str, CliResult]:
    return {name: run_cli("--db", db, *flags, *args, env=env) for name, args in COMMANDS.items()}


def _assert_chinese(out: dict[str, CliResult]) -> None:
    assert all(r.code in (0, 1) for r in out.values()), {k: r.err for k, r in out.items()}
    recall = out["recall"].out
    assert "── 所问的事实" in recall or "── " + shared_words("zh")["recall.tier.hit"] in recall, recall
    assert "用户住在杭州" in recall
    assert out["recall_none"].out.startswith("（没有回忆到任何内容：default/default 中没有"), out[
        "recall_none"
    ].out
    assert out["list"].out.splitlines()[-1] == "第 1-1 条，共 1 条记忆", out["list"].out
    assert " 待审: 用户每天早上沿着西湖跑步" in out["proposed"].out, out["proposed"].out
    review = out["review"].out
    assert "1 条待审" in review and "原文引用: 每天早上沿着西湖跑步" in review and "确认: " in review, review
    scopes = out["scopes"].out.splitlines()
    assert scopes[0].split() == ["人设", "项目", "事件", "会话", "记忆", "待抽取", "最新事件"], scopes
    assert scopes[1].index("default") == scopes[0].index("人设")  # wide characters kept the columns
    assert scopes[-1].startswith("* = 命令当前使用的范围（default/default）"), scopes
    doctor = out["doctor"].out
    assert doctor.startswith("数据库") and "外键            0 处违反" in doctor, doctor
    assert out["events"].out.strip() == "（偏移 9 处没有事件；共 2 个）"


def _assert_english(out: dict[str, CliResult]) -> None:
    assert all(r.code in (0, 1) for r in out.values()), {k: r.err for k, r in out.items()}
    assert "── " in out["recall"].out and not any(
        "\u4e00" <= c <= "\u9fff" for c in out["recall"].out.split("──")[1].split("\n")[0]
    )
    assert out["recall_none"].out.startswith(
        "(nothing recalled: no evidence for this query in default/default; "
    )
    assert out["list"].out.splitlines()[-1] == "1-1 of 1 memory"
    assert " PROPOSED: 用户每天早上沿着西湖跑步" in out["proposed"].out
    assert "1 waiting" in out["review"].out and "quote: 每天早上" in out["review"].out
    assert out["scopes"].out.splitlines()[0].split()[:2] == ["persona", "project"]
    assert out["doctor"].out.startswith("database") and "0 violations" in out["doctor"].out
    assert out["events"].out.strip() == "(no events at offset 9; 2 in all)"


def test_a_chinese_locale_gets_chinese_and_language_en_overrides_it(tmp_path: Path) -> None:
    db = _scenario(tmp_path)
    _assert_chinese(_outputs(db, ZH))
    _assert_english(_outputs(db, {**ZH, **config_env(tmp_path, '[display]\nlanguage = "en"\n')}))
    _assert_english(_outputs(db, {**ZH, "YIJI_DISPLAY_LANGUAGE": "en"}))


def test_an_english_locale_gets_english_and_language_zh_overrides_it(tmp_path: Path) -> None:
    db = _scenario(tmp_path)
    _assert_english(_outputs(db, EN))
    _assert_chinese(_outputs(db, {**EN, **config_env(tmp_path, '[display]\nlanguage = "zh"\n')}))
    _assert_chinese(_outputs(db, {**EN, "LC_MESSAGES": "zh_CN.UTF-8"}))


def _rounded(value: Any) -> Any:
    """JSON with its fractions to 3 places: a score's freshness moves with the clock between two runs."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_json_never_changes_with_the_language(tmp_path: Path) -> None:
    db = _scenario(tmp_path)
    zh, en = _outputs(db, ZH, "--json"), _outputs(db, EN, "--json")
    for name in COMMANDS:
        zh_json, en_json = json.loads(zh[name].out), json.loads(en[name].out)
        if name == "doctor":  # doctor's JSON says how long its checks took
            assert zh_json.keys() == en_json.keys()
        else:
            assert _rounded(zh_json) == _rounded(en_json), name


def test_an_unknown_language_is_refused_naming_the_key(tmp_path: Path) -> None:
    refused = run_cli("doctor", env={**EN, **config_env(tmp_path, '[display]\nlanguage = "fr"\n')})
    assert refused.code == 2 and "display.language" in refused.err and "fr" not in refused.err, refused.err
    from_env = run_cli("doctor", env={**EN, "YIJI_DISPLAY_LANGUAGE": "jp", "YIJI_DB": str(tmp_path / "x.db")})
    assert (
        from_env.code == 2 and "display.language" in from_env.err and "YIJI_DISPLAY_LANGUAGE" in from_env.err
    )
