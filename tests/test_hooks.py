"""``yiji hook claude-code|codex EVENT`` run as the hosts run them: a subprocess with the JSON payload on
standard input and the host's timeout; then recall and resume (the other commands through the CLI's
entry point). Transcripts and payloads are in the hosts' documented shapes (:mod:`tests.hook_fixtures`)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from yiji.cli import hook as hook_cli
from yiji.domain import hook_settings, transcripts

from .hook_fixtures import (
    cc_compaction,
    cc_payload,
    cc_turns,
    codex_compacted,
    codex_meta,
    codex_payload,
    codex_turns,
    write_lines,
)
from .inprocess import run_cli

S1 = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
S2 = "6a1d2f3b-9c8e-4d4f-8a21-b2c3d4e5f6a7"
HOST_TIMEOUT = 20  # seconds, as yiji's installed entries give the capture hooks

PAIRS_ZH_EN = [
    ("我喜欢用 SQLite 做本地存储，别用 Postgres", "好的，本地存储就用 SQLite。"),
    ("What did we decide about the cache layer?", "We decided to keep the cache in memory for now."),
    ("下周三要交季度报告，提醒我准备图表", "记下了：下周三交季度报告，需要准备图表。"),
]


def project_id(path: Path) -> str:
    return f"{path.name}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def hook(
    host: str,
    event: str,
    payload: dict[str, Any] | str,
    env: dict[str, str],
    *extra: str,
    timeout: float = HOST_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return subprocess.run(
        [sys.executable, "-m", "yiji", "hook", host, event, *extra],
        input=data,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=timeout,
        check=False,
    )


def events(db: str | Path) -> list[tuple[str, str, str, str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT id, role, text, session_id, project_id FROM events ORDER BY seq"
        ).fetchall()


def cursor(db: str | Path, instance: str, session: str) -> int | None:
    """The stored cursor; ``None`` before the first capture (also in a database a killed process created
    before its first migration committed)."""
    with sqlite3.connect(db) as conn:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'capture_cursors'").fetchone() is None:
            return None
        row = conn.execute(
            "SELECT cursor FROM capture_cursors WHERE instance_id = ? AND session_id = ?", (instance, session)
        ).fetchone()
    return None if row is None else int(row[0])


def checkpoints(db: str | Path, session: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(
            conn.execute("SELECT count(*) FROM checkpoints WHERE session_id = ?", (session,)).fetchone()[0]
        )


def log_lines(home: dict[str, Any]) -> list[str]:
    path: Path = home["log"]
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- the transcript rules (pure) ---------------------------------------------------------------------


def test_hosts_and_events_restated_in_the_command_module_agree() -> None:
    assert hook_cli.HOSTS == transcripts.HOSTS
    assert hook_cli.EVENTS == hook_settings.EVENTS


def test_claude_code_lines_keep_conversation_and_stop_before_a_partial_line(tmp_path: Path) -> None:
    cwd = "/home/me/atlas"
    lines = cc_turns(S1, cwd, PAIRS_ZH_EN[:2])
    lines.insert(0, {"type": "summary", "summary": "Storage choices", "leafUuid": "x"})
    side = dict(lines[1], uuid="7777aaaa-0000-4000-8000-000000000001", isSidechain=True)
    meta = dict(lines[1], uuid="7777aaaa-0000-4000-8000-000000000002", isMeta=True)
    command = dict(
        lines[1],
        uuid="7777aaaa-0000-4000-8000-000000000003",
        message={"role": "user", "content": "<command-name>/clear</command-name>"},
    )
    path = tmp_path / "t.jsonl"
    write_lines(
        path,
        [*lines, side, meta, command, *cc_compaction(S1, cwd, 100)],
        partial='{"type":"user","message":{"content":"半',
    )
    data = path.read_bytes()
    read = transcripts.read_transcript("claude-code", data)
    assert [(m.role, m.text) for m in read.messages] == [
        ("user", PAIRS_ZH_EN[0][0]),
        ("assistant", PAIRS_ZH_EN[0][1]),
        ("user", PAIRS_ZH_EN[1][0]),
        ("assistant", PAIRS_ZH_EN[1][1]),
    ]
    assert read.session == S1 and read.cwd == cwd
    assert read.end == data.rindex(b"\n") + 1  # the partial line is not consumed
    assert data[read.messages[0].start : read.messages[0].end].endswith(b"\n")
    # read again from the middle: the same messages with the same offsets
    again = transcripts.read_transcript("claude-code", data[read.messages[2].start :], read.messages[2].start)
    assert again.messages[:2] == read.messages[2:]
    # the line completed without a newline is complete: a JSON object cut anywhere never decodes
    whole = data[: read.end] + json.dumps(lines[1]).encode()
    assert transcripts.read_transcript("claude-code", whole).end == len(whole)


def test_codex_rollout_keeps_the_visible_messages(tmp_path: Path) -> None:
    cwd = "/home/me/atlas"
    path = tmp_path / "rollout.jsonl"
    write_lines(path, [codex_meta(S2, cwd), *codex_turns(cwd, PAIRS_ZH_EN[:2]), codex_compacted(50)])
    read = transcripts.read_transcript("codex", path.read_bytes())
    assert [(m.role, m.text) for m in read.messages] == [
        ("user", PAIRS_ZH_EN[0][0]),
        ("assistant", PAIRS_ZH_EN[0][1]),
        ("user", PAIRS_ZH_EN[1][0]),
        ("assistant", PAIRS_ZH_EN[1][1]),
    ]
    assert (read.session, read.cwd) == (S2, cwd)
    assert [m.message_id for m in read.messages] == [str(m.start) for m in read.messages]


@pytest.mark.parametrize(
    ("root", "rule", "expected"),
    [
        ("/home/me/atlas", "git-root", "atlas-" + hashlib.sha256(b"/home/me/atlas").hexdigest()[:8]),
        ("/home/me/atlas/", "cwd", "atlas-" + hashlib.sha256(b"/home/me/atlas").hexdigest()[:8]),
        (
            "/home/me/my app (v2)",
            "git-root",
            "my-app-v2-" + hashlib.sha256(b"/home/me/my app (v2)").hexdigest()[:8],
        ),
        ("/home/me/记忆", "git-root", "project-" + hashlib.sha256("/home/me/记忆".encode()).hexdigest()[:8]),
        ("/home/me/atlas", "configured", "mine"),
    ],
)
def test_project_rule(root: str, rule: str, expected: str) -> None:
    assert transcripts.scope_project(root, rule, "mine") == expected


# -- end to end, as the host runs the hooks ----------------------------------------------------------


def test_claude_code_stop_captures_incrementally_then_recall_and_resume(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    all_lines = cc_turns(S1, str(project), PAIRS_ZH_EN)
    first, rest = all_lines[:7], all_lines[7:]
    cut = json.dumps(rest[0], ensure_ascii=False)
    write_lines(transcript, first, partial=cut[:40])  # the host is writing the next line
    payload = cc_payload("Stop", S1, transcript, project / "src", stop_hook_active=False)

    done = hook("claude-code", "Stop", payload, env)
    assert (done.returncode, done.stdout) == (0, "")
    stored = events(env["YIJI_DB"])
    assert [(e[1], e[2]) for e in stored] == [
        ("user", PAIRS_ZH_EN[0][0]),
        ("assistant", PAIRS_ZH_EN[0][1]),
        ("user", PAIRS_ZH_EN[1][0]),
    ]
    assert {e[3] for e in stored} == {S1} and {e[4] for e in stored} == {project_id(project)}
    assert stored[0][0] == f"claude-code:{S1}:{first[0]['uuid']}"
    last_message_end = sum(len(json.dumps(x, ensure_ascii=False).encode()) + 1 for x in first[:6])
    assert cursor(env["YIJI_DB"], "claude-code", S1) == last_message_end  # thinking after it is read again

    with transcript.open("a", encoding="utf-8") as file:  # the line is finished, more follow
        file.write(cut[40:] + "\n")
    write_lines(transcript, rest[1:])
    assert hook("claude-code", "Stop", payload, env).returncode == 0
    assert (
        hook(
            "claude-code", "SessionEnd", dict(payload, hook_event_name="SessionEnd", reason="exit"), env
        ).returncode
        == 0
    )
    stored = events(env["YIJI_DB"])
    assert len(stored) == 6 and len({e[0] for e in stored}) == 6
    assert cursor(env["YIJI_DB"], "claude-code", S1) == len(transcript.read_bytes())
    assert log_lines(home) == []

    found = run_cli("--json", "recall", "季度报告", "--project", project_id(project), env=env)
    assert found.code == 0, found.err
    assert any("季度报告" in json.dumps(i, ensure_ascii=False) for i in found.json()["items"])

    start = hook(
        "claude-code",
        "SessionStart",
        cc_payload("SessionStart", S2, home["root"] / "new.jsonl", project, source="startup"),
        env,
    )
    assert start.returncode == 0 and start.stderr == ""
    header, _, pack = start.stdout.partition("\n")
    assert header.startswith("Long-term memory from yiji")
    assert "季度报告" in pack
    assert len(json.dumps(start.stdout, ensure_ascii=False)) - 2 <= 8000  # as the host sends it on


def test_a_folders_project_is_named_and_listed_so_recall_reaches_it(home: dict[str, Any]) -> None:
    """The newcomer's path: the hooks filed a folder's sessions under ``atlas-<hash>``; a plain recall in
    the default scope finds nothing, ``hook project`` names the project and ``scopes`` lists it."""
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN))
    stop = cc_payload("Stop", S1, transcript, project / "src")
    assert hook("claude-code", "Stop", stop, env).returncode == 0
    plain = run_cli(
        "recall", "季度报告", env=env, cwd=project
    )  # the default scope: says which, and where to look
    assert plain.out.startswith("(nothing recalled: no evidence for this query in default/default; ")
    assert plain.out.rstrip().endswith(" scopes)")

    named = run_cli("hook", "project", env=env, cwd=project / "src")
    assert named.code == 0, named.err
    assert named.out == project_id(project) + "\n"
    assert run_cli("hook", "project", "--dir", str(project / "src"), env=env).out == named.out
    detail = run_cli("--json", "hook", "project", env=env, cwd=project).json()
    assert detail == {
        "project": project_id(project),
        "persona": "default",
        "folder": str(project),
        "rule": "git-root",
    }
    found = run_cli("--project", named.out.strip(), "recall", "季度报告", env=env, cwd=project)
    assert found.code == 0 and "季度报告" in found.out, found.err

    listed = run_cli("--json", "scopes", env=env).json()
    assert [(s["project"], s["events"], s["sessions"]) for s in listed["scopes"]] == [
        (project_id(project), 6, 1)
    ]
    plain = run_cli("scopes", env=env).out
    assert project_id(project) in plain and f"--project {project_id(project)} recall ..." in plain
    # not a folder: refused, naming the flag
    missing = run_cli("hook", "project", "--dir", str(home["root"] / "nowhere"), env=env)
    assert missing.code == 2 and "dir: must be an existing folder" in missing.err


def test_codex_hooks_capture_and_resume(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    rollout = home["root"] / "rollout-2026-11-30T10-00-00-x.jsonl"
    write_lines(rollout, [codex_meta(S2, str(project)), *codex_turns(str(project), PAIRS_ZH_EN[:2])])
    stop = codex_payload(
        "Stop", S2, rollout, project, stop_hook_active=False, last_assistant_message=PAIRS_ZH_EN[1][1]
    )
    done = hook("codex", "Stop", stop, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert [e[2] for e in events(env["YIJI_DB"])] == [t for pair in PAIRS_ZH_EN[:2] for t in pair]

    write_lines(rollout, [codex_compacted(40), *codex_turns(str(project), PAIRS_ZH_EN[2:], first=5)])
    pre = hook("codex", "PreCompact", codex_payload("PreCompact", S2, rollout, project, trigger="auto"), env)
    assert (pre.returncode, pre.stdout) == (0, "")
    assert len(events(env["YIJI_DB"])) == 6
    compacted = hook(
        "codex", "SessionStart", codex_payload("SessionStart", S2, rollout, project, source="compact"), env
    )
    assert (compacted.returncode, compacted.stdout) == (0, "")  # the session holds all there is
    start = hook(
        "codex", "SessionStart", codex_payload("SessionStart", S1, rollout, project, source="startup"), env
    )
    assert start.returncode == 0
    assert not start.stdout.lstrip().startswith(
        ("{", "[")
    )  # Codex takes plain text; JSON-looking text must be hook JSON
    assert "季度报告" in start.stdout
    assert log_lines(home) == []


def test_compacted_claude_session_checkpoint_and_resume_of_the_same_session(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN[:2]))
    payload = cc_payload("Stop", S1, transcript, project, stop_hook_active=False)
    assert hook("claude-code", "Stop", payload, env).returncode == 0
    before = checkpoints(env["YIJI_DB"], S1)
    pre = cc_payload(
        "PreCompact",
        S1,
        transcript,
        project,
        trigger="manual",
        custom_instructions="keep the storage decision",
    )
    assert hook("claude-code", "PreCompact", pre, env).returncode == 0
    assert checkpoints(env["YIJI_DB"], S1) == before + 1  # recorded though nothing was new
    write_lines(
        transcript,
        [*cc_compaction(S1, str(project), 200), *cc_turns(S1, str(project), PAIRS_ZH_EN[2:], first=50)],
    )
    assert hook("claude-code", "Stop", payload, env).returncode == 0
    texts = [e[2] for e in events(env["YIJI_DB"])]
    assert texts == [t for pair in PAIRS_ZH_EN for t in pair]  # the host's summary is not conversation
    start = hook(
        "claude-code",
        "SessionStart",
        cc_payload("SessionStart", S1, transcript, project, source="compact"),
        env,
    )
    # nothing new since the session's last capture: its own turns are what it summarized
    assert (start.returncode, start.stdout) == (0, "")


def test_two_sessions_at_once(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    paths = {S1: home["root"] / "a.jsonl", S2: home["root"] / "b.jsonl"}
    write_lines(paths[S1], cc_turns(S1, str(project), PAIRS_ZH_EN))
    write_lines(paths[S2], cc_turns(S2, str(project), list(reversed(PAIRS_ZH_EN))))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "yiji", "hook", "claude-code", "Stop"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        for _ in paths
    ]
    for proc, (session, path) in zip(procs, paths.items(), strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(cc_payload("Stop", session, path, project)).encode())
        proc.stdin.close()
    assert [p.wait(timeout=HOST_TIMEOUT) for p in procs] == [0, 0]
    stored = events(env["YIJI_DB"])
    assert sorted(e[3] for e in stored) == [S1] * 6 + [S2] * 6
    for session, path in paths.items():
        assert cursor(env["YIJI_DB"], "claude-code", session) == len(path.read_bytes())


def test_two_hooks_of_one_session_at_once_advance_the_cursor_once(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN * 20))
    payload = json.dumps(cc_payload("Stop", S1, transcript, project)).encode()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "yiji", "hook", "claude-code", event],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        for event in ("Stop", "SessionEnd")
    ]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.close()
    assert [p.wait(timeout=HOST_TIMEOUT) for p in procs] == [0, 0]
    stored = events(env["YIJI_DB"])
    assert len(stored) == 120 and len({e[0] for e in stored}) == 120
    assert checkpoints(env["YIJI_DB"], S1) == 1  # one commit moved the cursor; the other found nothing new
    assert cursor(env["YIJI_DB"], "claude-code", S1) == len(transcript.read_bytes())
    assert log_lines(home) == []


@pytest.mark.parametrize("delay", [0.3, 0.6, 0.9])
def test_a_hook_killed_midway_loses_and_duplicates_nothing(home: dict[str, Any], delay: float) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN * 300))
    payload = json.dumps(cc_payload("Stop", S1, transcript, project))
    proc = subprocess.Popen(
        [sys.executable, "-m", "yiji", "hook", "claude-code", "Stop"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    assert proc.stdin is not None
    proc.stdin.write(payload.encode())
    proc.stdin.close()
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=HOST_TIMEOUT)
    db = Path(env["YIJI_DB"])
    acknowledged = cursor(db, "claude-code", S1) if db.exists() else None
    if acknowledged is not None:  # what was committed is all there
        assert len(events(db)) == 1800
    assert hook("claude-code", "Stop", payload, env, timeout=60).returncode == 0
    stored = events(db)
    assert len(stored) == 1800 and len({e[0] for e in stored}) == 1800
    assert cursor(db, "claude-code", S1) == len(transcript.read_bytes())


def test_the_same_transcript_by_hooks_and_by_import_gives_identical_events(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS_ZH_EN)
    write_lines(transcript, lines[:6])
    assert (
        hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project / "src"), env).returncode == 0
    )
    write_lines(transcript, lines[6:])
    # the rest of the session is imported: the hooks' part is not stored again
    done = run_cli("--json", "import-transcripts", "claude-code", str(transcript), env=env)
    assert done.code == 0, done.err
    assert done.json()[0]["project"] == project_id(project)
    # a Stop after the import finds nothing new
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project), env).returncode == 0
    by_hooks = events(env["YIJI_DB"])
    fresh = dict(env, YIJI_DB=str(home["root"] / "other.db"))
    assert run_cli("import-transcripts", "claude-code", str(home["root"]), env=fresh).code == 0
    assert run_cli("import-transcripts", "claude-code", str(transcript), env=fresh).code == 0  # again: no-op
    assert events(fresh["YIJI_DB"]) == by_hooks
    assert len(by_hooks) == 6


def test_import_says_how_many_messages_in_the_right_number(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    one, six = home["root"] / "one.jsonl", home["root"] / "six.jsonl"
    write_lines(one, cc_turns(S1, str(project), PAIRS_ZH_EN)[:1])
    write_lines(six, cc_turns(S2, str(project), PAIRS_ZH_EN))
    done = run_cli("import-transcripts", "claude-code", str(one), str(six), env=env)
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        f"{one}: 1 message, session {S1}, project {project_id(project)}",
        f"{six}: 6 messages, session {S2}, project {project_id(project)}",
    ]


def test_codex_import_matches_the_hooks(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    rollout = home["root"] / "rollout-x.jsonl"
    write_lines(rollout, [codex_meta(S2, str(project)), *codex_turns(str(project), PAIRS_ZH_EN)])
    assert (
        hook(
            "codex",
            "Stop",
            codex_payload("Stop", S2, rollout, project, stop_hook_active=False, last_assistant_message=None),
            env,
        ).returncode
        == 0
    )
    fresh = dict(env, YIJI_DB=str(home["root"] / "other.db"))
    assert run_cli("import-transcripts", "codex", str(rollout), env=fresh).code == 0
    assert events(fresh["YIJI_DB"]) == events(env["YIJI_DB"])
    assert len(events(env["YIJI_DB"])) == 6


def test_user_prompt_submit_recalls_only_when_asked(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN))
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project), env).returncode == 0
    prompt = cc_payload("UserPromptSubmit", S2, transcript, project, prompt="季度报告是哪天交？")
    off = hook("claude-code", "UserPromptSubmit", prompt, env)
    assert (off.returncode, off.stdout, off.stderr) == (0, "", "")
    on = hook("claude-code", "UserPromptSubmit", prompt, env, "--recall")
    assert on.returncode == 0
    assert on.stdout.startswith("Memories yiji recalled") and "季度报告" in on.stdout
    none = hook("codex", "UserPromptSubmit", dict(prompt, prompt="zzqx unrelated"), env, "--recall")
    assert (none.returncode, none.stdout) == (0, "")


# -- a broken, missing, locked or slow database: exit 0, one log line, nothing printed -------------


def test_missing_database(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    start = hook(
        "claude-code",
        "SessionStart",
        cc_payload("SessionStart", S1, home["root"] / "t.jsonl", project, source="startup"),
        env,
    )
    assert (start.returncode, start.stdout, start.stderr) == (0, "", "")
    assert not Path(env["YIJI_DB"]).exists()
    assert len(log_lines(home)) == 1 and "no database" in log_lines(home)[0]
    blocked = home["root"] / "a-file"
    blocked.write_text("not a folder")
    bad = dict(env, YIJI_DB=str(blocked / "yiji.db"))
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN[:1]))
    stop = hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project), bad)
    assert (stop.returncode, stop.stdout) == (0, "")
    assert len(log_lines(home)) == 2


def test_corrupt_database_and_unreadable_payload(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    db = Path(env["YIJI_DB"])
    db.parent.mkdir(parents=True)
    db.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN[:1]))
    for event, extra in (
        ("SessionStart", {"source": "resume"}),
        ("Stop", {}),
        ("PreCompact", {"trigger": "auto"}),
    ):
        done = hook("claude-code", event, cc_payload(event, S1, transcript, project, **extra), env)
        assert (done.returncode, done.stdout) == (0, "")
    garbage = hook("codex", "Stop", "not json {", env)
    assert (garbage.returncode, garbage.stdout) == (0, "")
    unknown = hook("codex", "PostToolUse-secret-word", "{}", env)
    assert (unknown.returncode, unknown.stdout) == (0, "")
    lines = log_lines(home)
    assert len(lines) == 5 and "secret-word" not in lines[-1]
    assert all(S1 not in line and str(transcript) not in line for line in lines)  # sanitized


def test_locked_database_meets_the_time_limit(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN))
    payload = cc_payload("Stop", S1, transcript, project)
    assert hook("claude-code", "Stop", payload, env).returncode == 0  # creates the database
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN, first=10))
    holder = sqlite3.connect(env["YIJI_DB"], isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        done = hook("claude-code", "Stop", payload, dict(env, YIJI_HOOK_TIME_LIMIT="1.5"))
        took = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (done.returncode, done.stdout) == (0, "")
    assert took < 10
    assert len(log_lines(home)) == 1 and "time limit" in log_lines(home)[0]
    assert len(events(env["YIJI_DB"])) == 6
    assert hook("claude-code", "Stop", payload, env).returncode == 0  # the next hook catches up
    assert len(events(env["YIJI_DB"])) == 12


_MODULES_PROBE = """
import json, sys
from yiji.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_hooks_start_without_pydantic_http_or_the_whole_service(home: dict[str, Any]) -> None:
    """Hosts kill slow hooks: Stop loads only the capture path (the segmenter for the Chinese it indexes),
    SessionStart only the pack's reads."""
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN))
    for event, extra in (
        ("Stop", {}),
        ("UserPromptSubmit", {"prompt": "季度报告"}),
        ("SessionStart", {"source": "startup"}),
    ):
        done = subprocess.run(
            [sys.executable, "-c", _MODULES_PROBE, "hook", "claude-code", event],
            input=json.dumps(cc_payload(event, S1, transcript, project, **extra)),
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            check=True,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        modules = set(result["modules"])
        assert result["code"] == 0
        heavy = ["pydantic", "httpx", "mcp", "numpy", "yiji.models", "yiji.service.compose", "yiji.providers"]
        assert [m for m in heavy if m in modules] == [], event
        assert (event == "SessionStart") == ("季度报告" in done.stdout)
    assert len(events(env["YIJI_DB"])) == 6
    assert log_lines(home) == []


def test_bench_hooks_reports_both_hooks(tmp_path: Path) -> None:
    done = run_cli(
        "--json",
        "bench",
        "hooks",
        "--events",
        "60",
        "--runs",
        "2",
        "--lines",
        "20",
        "--incremental-runs",
        "2",
        cwd=tmp_path,
    )
    assert done.code == 0, done.err
    result = done.json()
    start, stop = result["session_start"], result["stop"]
    assert start["events"] == 60 and start["runs"] == 2 and start["p95_ms"] >= start["median_ms"] > 0
    assert 0 < start["printed_chars"] <= start["sent_chars"] <= start["sent_limit"] == 8000
    assert start["target_p95_ms"] == 300 and start["cpu"]["median_ms"] > 0
    assert (stop["lines"], stop["messages"], stop["incremental_runs"]) == (20, 8, 2)
    assert stop["first_ms"] > 0 and stop["incremental"]["p95_ms"] > 0
    prompt = result["prompt_recall"]
    assert prompt["runs"] == 2 and prompt["p95_ms"] >= prompt["median_ms"] > 0
    assert prompt["cpu"]["median_ms"] > 0
