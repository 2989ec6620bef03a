"""Secrets are replaced before an event is stored, on every write path, and never reach the file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.secrets import Redactor, default_redactor, load_rules, marker, parse_rules
from yiji_bench.secrets import run_secrets_bench

from .hook_fixtures import cc_payload, cc_turns, write_lines
from .inprocess import run_cli
from .mcp_helpers import memory_client, payload

DATA = Path(__file__).parent / "data" / "secrets"
SESSION = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
# random, in the providers' published formats; none is a real credential
OPENAI = (
    "sk-proj-" + "Xq7bT2mN9vL4kP8wR3sY6hJ1dF5gZ0aC" * 2 + "T3BlbkFJ" + "pW4eR7tY2uI9oP3aS6dF1gH8jK5lZ0xC" * 2
)
GITHUB = "ghp_" + "R8kD2mX7qL4vN9bT3wY6hJ1cF5gZ0aPs1E2u"
AWS = "AKIA" + "QW3ERT7YUIOPL2KJ"
EVENT = ("--session", "s1", "--role", "user")


def test_the_labelled_set_meets_its_targets() -> None:
    result = run_secrets_bench(DATA)
    print(json.dumps(result, ensure_ascii=False))  # the figures docs/reliability.md quotes
    assert result["secrets"] >= 300 and result["lookalikes"] >= 240
    assert result["caught_rate"] >= 0.95
    assert result["lookalike_redacted_rate"] <= 0.01


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {OPENAI} ok", f"key {marker('openai-api-key')} ok"),
        (f"export GITHUB_TOKEN={GITHUB}", f"export GITHUB_TOKEN={marker('github-token')}"),
        (f"id {AWS}", f"id {marker('aws-access-key-id')}"),
        ("password: hunter22", f"password: {marker('secret-assignment')}"),
        ('{"api_key": "a8Fk2LmQ9z"}', f'{{"api_key": "{marker("secret-assignment")}"}}'),
        ("postgres://bob:s3cretPw@db:5432/x", f"postgres://bob:{marker('url-password')}@db:5432/x"),
        ("Authorization: Bearer abcdef0123456789ABCDEF", f"Authorization: Bearer {marker('bearer-token')}"),
        ("密码：abc12345", f"密码：{marker('secret-assignment')}"),
        ("İ PASSWORD: Hunter22x", f"İ PASSWORD: {marker('secret-assignment')}"),  # lower() changes the length
        ("wifi 密码是 qwe123rty", f"wifi 密码是 {marker('password-in-prose')}"),
        (f'api_key = "{OPENAI}"', f'api_key = "{marker("openai-api-key")}"'),  # the provider rule wins
        ('password = os.environ["DB_PASSWORD"]', 'password = os.environ["DB_PASSWORD"]'),
        ("max_tokens: 100000", "max_tokens: 100000"),
        (
            "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        ),
        ("我的订单号是2024052012345678", "我的订单号是2024052012345678"),
    ],
)
def test_rules_replace_the_secret_only(text: str, expected: str) -> None:
    redacted = default_redactor().redact(text)
    assert redacted.text == expected
    assert redacted.changed == (text != expected)
    assert default_redactor().redact(redacted.text) == (redacted.text, ())  # a marker matches no rule


def test_every_rule_has_a_description_and_a_keyword_and_catches_its_set() -> None:
    rules, _ = load_rules()
    assert len({r.id for r in rules}) == len(rules)
    assert all(r.description and r.keywords for r in rules)
    secrets = [json.loads(line) for line in (DATA / "secrets.jsonl").read_text("utf-8").splitlines()]
    fired = {rule for item in secrets for rule in default_redactor().redact(item["text"]).rules}
    assert fired == {r.id for r in rules}  # the labelled set exercises every rule


def test_text_without_a_keyword_compiles_nothing() -> None:
    data = (Path(__file__).parents[1] / "src/yiji/domain/data/secrets.json").read_text("utf-8")
    rules, placeholder = parse_rules(json.loads(data), "secrets.json")
    fresh = Redactor(tuple(rules), placeholder)
    assert fresh.redact("我们明天下午三点在会议室见，带上 2024 年的报告").changed is False
    assert all(r._compiled is None for r in rules)
    fresh.redact(f"here {GITHUB}")
    assert [r.id for r in rules if r._compiled is not None] == ["github-token"]


def _file_bytes(db: Path) -> bytes:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = db.read_bytes()
    for suffix in ("-wal", "-shm", "-journal"):
        extra = db.with_name(db.name + suffix)
        if extra.exists():
            data += extra.read_bytes()
    return data


def test_a_captured_claude_code_session_leaves_no_secret_in_the_database_file(
    tmp_path: Path, home: dict[str, Any]
) -> None:
    project, db, env = home["project"], home["db"], home["env"]
    pairs = [
        (f"here is my OpenAI key {OPENAI}, put it in .env", "Done: OPENAI_API_KEY is set in .env."),
        (f"and the GitHub token {GITHUB} for the release job", "I added it as a repository secret."),
        (f"AWS access key id {AWS}，区域 ap-east-1", "好的，已经配置到 ~/.aws/credentials。"),
    ]
    transcript = tmp_path / "s1.jsonl"
    write_lines(transcript, cc_turns(SESSION, str(project), pairs))
    payload = cc_payload("Stop", SESSION, transcript, project, stop_hook_active=False)
    done = subprocess.run(
        [sys.executable, "-m", "yiji", "hook", "claude-code", "Stop"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT role, text, redacted FROM events ORDER BY seq").fetchall()
    assert [r[2] for r in rows] == [1, 0, 1, 0, 1, 0]
    assert marker("openai-api-key") in rows[0][1] and marker("github-token") in rows[2][1]
    assert rows[4][1] == f"AWS access key id {marker('aws-access-key-id')}，区域 ap-east-1"
    data = _file_bytes(db)
    assert marker("github-token").encode() in data  # the file was read after the checkpoint
    for secret in (OPENAI, GITHUB, AWS):
        assert secret.encode() not in data
        assert secret[-12:].encode() not in data  # nor any indexed piece of it


def test_event_submit_and_import_store_redacted_text_and_say_so(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    text = f"deploy with {GITHUB} tonight"
    first = run_cli("--db", db, "event", "submit", *EVENT, "--id", "e1", text, "--json")
    assert first.code == 0, first.err
    event = json.loads(first.out)["event"]
    assert event["text"] == f"deploy with {marker('github-token')} tonight" and event["redacted"] is True
    again = json.loads(run_cli("--db", db, "event", "submit", *EVENT, "--id", "e1", text, "--json").out)
    assert again["created"] is False  # the same event again: redaction is deterministic
    source = tmp_path / "events.jsonl"
    source.write_text(
        json.dumps({"id": "e2", "session": "s", "role": "user", "text": f"token={OPENAI}"})
        + "\n"
        + json.dumps({"id": "e3", "session": "s", "role": "user", "text": "no secret here"})
        + "\n",
        encoding="utf-8",
    )
    assert run_cli("--db", db, "event", "import", str(source)).code == 0
    with sqlite3.connect(db) as conn:
        rows = dict(conn.execute("SELECT id, redacted FROM events").fetchall())
        body = " ".join(r[0] for r in conn.execute("SELECT text FROM events"))
    assert rows == {"e1": 1, "e2": 1, "e3": 0}
    assert GITHUB not in body and OPENAI not in body


def test_redaction_can_be_turned_off(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[redaction]\nenabled = false\n", encoding="utf-8")
    db = str(tmp_path / "y.db")
    done = run_cli("--config", str(config), "--db", db, "event", "submit", *EVENT, f"x {GITHUB}", "--json")
    event = json.loads(done.out)["event"]
    assert event["text"] == f"x {GITHUB}" and event["redacted"] is False


def test_an_unknown_redaction_key_is_named(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[redaction]\nenable = false\n", encoding="utf-8")
    done = run_cli("--config", str(config), "--db", str(tmp_path / "y.db"), "event", "list")
    assert done.code != 0 and "redaction.enable" in done.err and "enabled" in done.err


def test_extra_rules_from_a_file_apply_after_yiji_s_own(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        "[[rules]]\nid = \"acme-key\"\ndescription = \"Acme\"\nregex = '''acme_[0-9a-f]{16}'''\n"
        'keywords = ["acme_"]\n',
        encoding="utf-8",
    )
    config = tmp_path / "config.toml"
    config.write_text(f"[redaction]\nrules = {json.dumps(str(rules))}\n", encoding="utf-8")
    db = str(tmp_path / "y.db")
    done = run_cli(
        "--config", str(config), "--db", db, "event", "submit", *EVENT, "k acme_0123456789abcdef", "--json"
    )
    assert json.loads(done.out)["event"]["text"] == f"k {marker('acme-key')}"
    rules.write_text("[[rules]]\nid = \"bad\"\nregex = '''(unclosed'''\n", encoding="utf-8")
    broken = run_cli("--config", str(config), "--db", db, "event", "submit", *EVENT, "x")
    assert broken.code != 0 and "redaction.rules" in broken.err and "(unclosed" not in broken.err


def test_the_flag_survives_export_and_import(tmp_path: Path) -> None:
    db, copy = str(tmp_path / "y.db"), str(tmp_path / "copy.db")
    run_cli("--db", db, "event", "submit", *EVENT, "--id", "e1", f"key {GITHUB}")
    run_cli("--db", db, "event", "submit", *EVENT, "--id", "e2", "plain")
    archive = tmp_path / "a.jsonl"
    assert run_cli("--db", db, "export", str(archive)).code == 0
    assert run_cli("--db", copy, "import", str(archive)).code == 0, "import"
    with sqlite3.connect(copy) as conn:
        assert dict(conn.execute("SELECT id, redacted FROM events").fetchall()) == {"e1": 1, "e2": 0}


def test_a_derived_quote_copied_from_the_submitted_text_still_grounds(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    statement = f"My deploy token for the staging cluster is {GITHUB}"
    run_cli("--db", db, "event", "submit", *EVENT, "--id", "e1", statement)
    memories = tmp_path / "m.json"
    memories.write_text(
        json.dumps(
            {
                "event_id": "e1",
                "memories": [
                    {
                        "text": f"deploy token is {GITHUB}",
                        "quote": statement,
                        "kind": "fact",
                        "basis": "user_statement",
                        "confidence": 0.9,
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    done = run_cli("--db", db, "memory", "derive", "--event", "e1", "--input", str(memories), "--json")
    assert done.code == 0, done.err
    with sqlite3.connect(db) as conn:
        text, quote = conn.execute("SELECT text, quote FROM memories").fetchone()
    assert GITHUB not in text + quote and quote.endswith(marker("github-token"))


def test_host_ingest_redacts_and_a_replay_of_the_same_message_is_no_conflict(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    line = {
        "event_id": "dsh:i1:s1:1",
        "message_id": "m1",
        "session": "s1",
        "seq": 1,
        "role": "user",
        "text": f"the key is {OPENAI}",
        "occurred_at": "2026-11-30T10:00:01+08:00",
    }
    args = ("--db", db, "host-ingest", "--instance", "i1", "--session", "s1", "--expect-cursor")
    first = run_cli(*args, "-1", "--json", input=json.dumps(line) + "\n")
    assert first.code == 0, first.err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT text, redacted FROM events").fetchone() == (
            f"the key is {marker('openai-api-key')}",
            1,
        )
    # the host lost the acknowledgement and sends the same message again from the old cursor
    replay = run_cli(*args, "-1", "--json", input=json.dumps(line) + "\n")
    assert json.loads(replay.out)["conflict"] != "event"


def test_import_transcripts_redacts(tmp_path: Path) -> None:
    project = tmp_path / "atlas"
    (project / ".git").mkdir(parents=True)
    transcript = tmp_path / "s.jsonl"
    write_lines(transcript, cc_turns(SESSION, str(project), [(f"token {GITHUB}", "noted")]))
    env = {"YIJI_DB": str(tmp_path / "y.db"), "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".c")}
    assert run_cli("import-transcripts", "claude-code", str(transcript), env=env).code == 0
    with sqlite3.connect(tmp_path / "y.db") as conn:
        texts = [r[0] for r in conn.execute("SELECT text FROM events ORDER BY seq")]
    assert texts == [f"token {marker('github-token')}", "noted"]


def test_memory_correct_redacts_its_statement(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    assert run_cli("--db", db, "remember", "My staging password is in the vault").code == 0
    memory_id = run_cli("--db", db, "memory", "list", "--ids").out.strip()
    statement = f"My staging token is {GITHUB} now"
    done = run_cli("--db", db, "memory", "correct", memory_id, statement, "--json")
    assert done.code == 0, done.err
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT e.text, m.quote FROM memories m JOIN events e ON e.id = m.event_id"
        ).fetchall()
    assert (f"My staging token is {marker('github-token')} now",) * 2 in rows
    assert GITHUB not in json.dumps(rows)


@pytest.mark.anyio
async def test_mcp_event_submit_redacts(tmp_path: Path) -> None:
    async with memory_client(tmp_path / "m.db") as client:
        result = payload(
            await client.call_tool("event_submit", {"session": "s", "role": "user", "text": f"aws {AWS} ok"})
        )
    assert result["event"]["text"] == f"aws {marker('aws-access-key-id')} ok" and result["event"]["redacted"]


def test_a_cue_label_is_redacted_too(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    cue = f"text:note-1=deploy key {GITHUB}"
    done = run_cli("--db", db, "event", "submit", *EVENT, "--cue", cue, "see the note", "--json")
    assert done.code == 0, done.err
    event = json.loads(done.out)["event"]
    assert event["redacted"] is True and event["text"] == "see the note"
    assert event["cues"][0]["label"] == f"deploy key {marker('github-token')}"
