"""Capture that no transcript can stop, and Codex's transcript formats as its releases write them.

Run as the hosts run the hooks (``yiji hook HOST EVENT`` as a subprocess with the payload on standard
input); ``yiji import-transcripts``, ``doctor`` and ``scopes`` through the CLI's entry point. The Codex
rollouts under ``tests/data/transcripts`` were written by the real releases named in their file names
(``codex exec`` and ``codex exec resume --last`` against a loopback Responses API server), trimmed: long
strings of lines that are not conversation are cut, the conversation lines are as written.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from yiji.domain import transcripts

from .hook_fixtures import cc_payload, cc_turns, codex_payload, write_lines
from .inprocess import run_cli
from .test_hooks import PAIRS_ZH_EN, S1, S2, cursor, events, hook, log_lines, project_id

DATA = Path(__file__).parent / "data" / "transcripts"
RELEASES = ("0.147.0", "0.171.0")
"""Codex releases whose rollouts are kept: the last with ``user_message``/``agent_message`` lines and a
current one with ``item_completed`` ``UserMessage``/``AgentMessage`` items (the change came in 0.148)."""
CODEX_TURNS = [
    ("user", "我喜欢用 SQLite 做本地存储 REPLY: 好的，本地存储就用 SQLite。"),
    ("assistant", "好的，本地存储就用 SQLite。"),
    (
        "user",
        "What did we decide about the cache layer? REPLY: We decided to keep the cache in memory for now.",
    ),
    ("assistant", "We decided to keep the cache in memory for now."),
]


def fresh(home: dict[str, Any], name: str = "other.db") -> dict[str, str]:
    return dict(home["env"], YIJI_DB=str(home["root"] / name))


def rollout(home: dict[str, Any], release: str) -> tuple[Path, str, str]:
    """A copy of a real release's rollout, with its session id and working directory."""
    path = home["root"] / f"rollout-{release}.jsonl"
    shutil.copy(DATA / f"codex-{release}.jsonl", path)
    meta = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["payload"]
    return path, meta["id"], meta["cwd"]


# -- Codex: the format of each release -------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_a_real_codex_rollout_is_read_whole(release: str) -> None:
    data = (DATA / f"codex-{release}.jsonl").read_bytes()
    read = transcripts.read_transcript("codex", data)
    assert [(m.role, m.text) for m in read.messages] == CODEX_TURNS
    assert read.end == len(data) and not read.unread
    meta = json.loads(data.splitlines()[0])["payload"]
    assert (read.session, read.cwd) == (meta["id"], meta["cwd"])
    assert meta["cli_version"] == release


@pytest.mark.parametrize("release", RELEASES)
def test_codex_hooks_and_import_capture_every_turn_of_each_release(
    home: dict[str, Any], release: str
) -> None:
    env = home["env"]
    path, session, cwd = rollout(home, release)
    lines = path.read_bytes().splitlines(keepends=True)
    first_turn = next(i for i, line in enumerate(lines) if b"task_complete" in line) + 1
    path.write_bytes(b"".join(lines[:first_turn]))  # the first `codex exec`
    stop = codex_payload("Stop", session, path, cwd, stop_hook_active=False, last_assistant_message=None)
    assert hook("codex", "Stop", stop, env).returncode == 0
    assert [(e[1], e[2]) for e in events(env["YIJI_DB"])] == CODEX_TURNS[:2]
    with path.open("ab") as file:  # `codex exec resume --last` appends to the same rollout
        file.write(b"".join(lines[first_turn:]))
    assert hook("codex", "Stop", stop, env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert [(e[1], e[2]) for e in stored] == CODEX_TURNS
    assert {e[3] for e in stored} == {session}
    assert cursor(env["YIJI_DB"], "codex", session) is not None
    assert log_lines(home) == []

    other = fresh(home)
    done = run_cli("--json", "import-transcripts", "codex", str(path), env=other)
    assert done.code == 0, done.err
    assert done.json()[0]["captured"] == 4 and not done.json()[0]["unread"]
    assert events(other["YIJI_DB"]) == stored


def test_a_transcript_in_a_shape_yiji_does_not_read_is_logged_once_and_reported(
    home: dict[str, Any],
) -> None:
    """A future format (here 0.171's items renamed): the model answered, nothing was read."""
    env = home["env"]
    path, session, cwd = rollout(home, "0.171.0")
    path.write_text(path.read_text(encoding="utf-8").replace('"item_completed"', '"item_finished"'), "utf-8")
    stop = codex_payload("Stop", session, path, cwd, stop_hook_active=False, last_assistant_message=None)
    for _ in range(3):
        assert hook("codex", "Stop", stop, env).returncode == 0
    assert events(env["YIJI_DB"]) == []
    logged = log_lines(home)
    assert len(logged) == 1 and "no conversation yiji reads" in logged[0]
    assert str(path) not in logged[0] and "/" not in logged[0].partition(": ")[2]

    doctor = run_cli("--json", "doctor", env=env)
    assert doctor.json()["unread_transcripts"] == {"codex": 1}
    assert any("1 codex transcript showed the model answered" in w for w in doctor.json()["warnings"])
    assert "held no conversation yiji reads" in run_cli("doctor", env=env).out
    scopes = run_cli("--json", "scopes", env=env).json()
    assert scopes["unread_transcripts"] == {"codex": 1}
    assert "1 codex transcript held no conversation yiji reads" in run_cli("scopes", env=env).out

    imported = run_cli("import-transcripts", "codex", str(path), env=env)
    assert imported.code == 0 and "no conversation yiji reads was found" in imported.out
    # an empty rollout, or one where the model never answered, is not such a transcript
    quiet = home["root"] / "rollout-quiet.jsonl"
    quiet.write_bytes(path.read_bytes().splitlines(keepends=True)[0])
    assert hook("codex", "Stop", dict(stop, session_id=S2, transcript_path=str(quiet)), env).returncode == 0
    assert run_cli("--json", "doctor", env=env).json()["unread_transcripts"] == {"codex": 1}


def test_only_a_conversation_the_model_answered_in_can_be_unread() -> None:
    """A sub-agent's transcript (side-chain lines only), a session with only a slash command, or an
    empty one hold no conversation, and that is no sign of a format yiji does not read."""
    lines = cc_turns(S1, "/w", PAIRS_ZH_EN[:1])
    side = [dict(line, isSidechain=True) for line in lines]
    command = [dict(lines[0], message={"role": "user", "content": "<command-name>/help</command-name>"})]
    for case in (side, command, []):
        data = "".join(json.dumps(line) + "\n" for line in case).encode()
        read = transcripts.read_transcript("claude-code", data)
        assert not read.messages and not read.unread
    reshaped = [  # text blocks renamed: the model answered, nothing is read
        dict(line, message={"role": line["type"], "content": [{"type": "said", "said": "x"}]})
        for line in lines
    ]
    data = "".join(json.dumps(line) + "\n" for line in reshaped).encode()
    assert transcripts.read_transcript("claude-code", data).unread


# -- capture that no transcript can stop -------------------------------------------------------------


def test_a_repeated_line_is_a_no_op_and_the_rest_is_captured(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS_ZH_EN)
    write_lines(transcript, [lines[0], lines[0], *lines[1:6]])  # the host wrote the prompt twice
    payload = cc_payload("Stop", S1, transcript, project)
    assert hook("claude-code", "Stop", payload, env).returncode == 0
    assert [e[2] for e in events(env["YIJI_DB"])] == [t for pair in PAIRS_ZH_EN[:2] for t in pair][:3]
    write_lines(transcript, [lines[5], *lines[6:]])  # and a later copy of a captured line
    assert hook("claude-code", "Stop", payload, env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert [e[2] for e in stored] == [t for pair in PAIRS_ZH_EN for t in pair]
    assert cursor(env["YIJI_DB"], "claude-code", S1) == len(transcript.read_bytes())
    assert log_lines(home) == []

    later = home["root"] / "z-later.jsonl"  # a file after it in the folder is imported too
    write_lines(later, cc_turns(S2, str(project), PAIRS_ZH_EN[:1]))
    other = fresh(home)
    done = run_cli("--json", "import-transcripts", "claude-code", str(home["root"]), env=other)
    assert done.code == 0, done.err
    assert [r["captured"] for r in done.json()] == [6, 2]
    assert events(other["YIJI_DB"])[:6] == stored


def test_a_lone_surrogate_is_repaired_and_the_rest_commits(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS_ZH_EN)
    lines[4]["message"]["content"][0]["text"] = "cut \ud83d here"
    with transcript.open("w", encoding="utf-8") as file:  # json writes the lone surrogate as an escape
        file.writelines(json.dumps(line) + "\n" for line in lines)
    assert b"cut \\ud83d here" in transcript.read_bytes()
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project), env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert [e[2] for e in stored] == [
        PAIRS_ZH_EN[0][0],
        "cut \ufffd here",
        PAIRS_ZH_EN[1][0],
        PAIRS_ZH_EN[1][1],
        PAIRS_ZH_EN[2][0],
        PAIRS_ZH_EN[2][1],
    ]
    logged = log_lines(home)
    assert len(logged) == 1 and "lone surrogate" in logged[0] and "U+FFFD" in logged[0]
    other = fresh(home)
    done = run_cli("--json", "import-transcripts", "claude-code", str(transcript), env=other)
    assert done.code == 0, done.err
    assert done.json()[0]["repaired"] == 1
    assert events(other["YIJI_DB"]) == stored


def test_a_session_resumed_from_a_moved_folder_keeps_capturing(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS_ZH_EN[:2])
    write_lines(transcript, lines)
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project), env).returncode == 0
    moved = project.with_name("atlas-renamed")
    project.rename(moved)
    write_lines(transcript, cc_turns(S1, str(moved), PAIRS_ZH_EN[2:], first=10))
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, moved), env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert [e[2] for e in stored] == [t for pair in PAIRS_ZH_EN for t in pair]
    assert {(e[3], e[4]) for e in stored} == {(S1, project_id(project))}  # the session stays whole
    assert cursor(env["YIJI_DB"], "claude-code", S1) == len(transcript.read_bytes())
    assert log_lines(home) == []
    # importing the moved session again, into any project, stores nothing twice
    again = run_cli(
        "--json", "--project", "elsewhere", "import-transcripts", "claude-code", str(transcript), env=env
    )
    assert again.code == 0 and again.json()[0]["project"] == project_id(project)
    assert events(env["YIJI_DB"]) == stored


@pytest.mark.parametrize("length", [80, 100, 128])
def test_a_long_session_id_gives_event_ids_that_fit(home: dict[str, Any], length: int) -> None:
    env, project = home["env"], home["project"]
    session = ("s" + "0123456789abcdef" * 8)[:length]
    transcript = home["root"] / "long.jsonl"
    write_lines(transcript, cc_turns(session, str(project), PAIRS_ZH_EN))
    assert hook("claude-code", "Stop", cc_payload("Stop", session, transcript, project), env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert len(stored) == 6 and all(len(e[0]) <= 128 for e in stored)
    assert {e[3] for e in stored} == {session}
    assert len({e[0] for e in stored}) == 6
    other = fresh(home)
    assert run_cli("import-transcripts", "claude-code", str(transcript), env=other).code == 0
    assert events(other["YIJI_DB"]) == stored  # the same ids whoever reads the transcript
    assert log_lines(home) == []


def test_a_fifo_named_like_a_transcript_is_skipped_not_waited_on(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    folder = home["root"] / "transcripts"
    folder.mkdir()
    os.mkfifo(folder / "a.jsonl")
    write_lines(folder / "b.jsonl", cc_turns(S1, str(project), PAIRS_ZH_EN))
    started = time.monotonic()
    done = run_cli("--json", "import-transcripts", "claude-code", str(folder), env=env)
    assert done.code == 0, done.err
    assert time.monotonic() - started < 30
    result = done.json()
    assert result[0]["path"].endswith("a.jsonl") and "regular file" in result[0]["skipped"]
    assert result[1]["captured"] == 6
    missing = run_cli("--json", "import-transcripts", "claude-code", str(folder / "gone.jsonl"), env=env)
    assert missing.code == 0 and missing.json()[0]["skipped"] == "the file does not exist"
    stop = cc_payload("Stop", S2, folder / "a.jsonl", project)
    blocked = hook("claude-code", "Stop", stop, env, timeout=30)
    assert (blocked.returncode, blocked.stdout) == (0, "")
    assert "regular file" in log_lines(home)[-1] and "time limit" not in log_lines(home)[-1]


def test_hook_log_lines_never_name_a_path(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    db = Path(env["YIJI_DB"])
    db.parent.mkdir(parents=True)
    db.write_bytes(b"not a database at all, " * 100)
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN[:1]))
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, project), env).returncode == 0
    logged = log_lines(home)
    assert len(logged) == 1 and "is not a SQLite database" in logged[0]
    assert str(db) not in logged[0] and str(home["root"]) not in logged[0]
    assert "[path]" in logged[0]


def test_a_hook_time_limit_that_is_not_a_number_is_refused_as_such(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(project), PAIRS_ZH_EN[:1]))
    payload = cc_payload("Stop", S1, transcript, project)
    for value in ("nan", "inf"):
        done = hook("claude-code", "Stop", payload, dict(env, YIJI_HOOK_TIME_LIMIT=value))
        assert (done.returncode, done.stdout) == (0, "")
        logged = done.stderr  # the configuration names the log file: unread, the line goes to stderr
        assert "hooks.time_limit_seconds: Input should be a finite number" in logged and "600" not in logged


def test_a_very_long_working_directory_still_captures(home: dict[str, Any]) -> None:
    env, project = home["env"], home["project"]
    cwd = str(project) + "/" + "/".join(["d" * 200] * 50)  # about 10 KB
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, cwd, PAIRS_ZH_EN))
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, transcript, cwd), env).returncode == 0
    assert len(events(env["YIJI_DB"])) == 6
    assert log_lines(home) == []
    assert run_cli("import-transcripts", "claude-code", str(transcript), env=fresh(home)).code == 0


def _forked(lines: list[dict[str, Any]], parent: str, child: str, *, new_uuids: bool) -> list[dict[str, Any]]:
    """Claude Code's copies of a parent's lines in a fork: the new session id, ``forkedFrom`` naming the
    origin; ``--fork-session`` keeps each uuid, the SDK's fork gives new ones."""
    out = []
    for n, line in enumerate(lines):
        uuid = f"{n:08d}-1111-4000-8000-{child[-12:]}" if new_uuids else line["uuid"]
        origin = {"sessionId": parent, "messageUuid": line["uuid"]}
        out.append(dict(line, sessionId=child, uuid=uuid, forkedFrom=origin))
    return out


@pytest.mark.parametrize("new_uuids", [False, True])
def test_a_forks_inherited_lines_are_not_stored_again(home: dict[str, Any], new_uuids: bool) -> None:
    env, project = home["env"], home["project"]
    parent, child = home["root"] / "parent.jsonl", home["root"] / "child.jsonl"
    inherited = cc_turns(S1, str(project), PAIRS_ZH_EN[:2])
    write_lines(parent, inherited)
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, parent, project), env).returncode == 0
    write_lines(
        child,
        [
            *_forked(inherited, S1, S2, new_uuids=new_uuids),
            *cc_turns(S2, str(project), PAIRS_ZH_EN[2:], first=7),
        ],
    )
    assert hook("claude-code", "Stop", cc_payload("Stop", S2, child, project), env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert [e[2] for e in stored] == [t for pair in PAIRS_ZH_EN for t in pair]
    assert [e[3] for e in stored] == [S1] * 4 + [S2] * 2
    assert cursor(env["YIJI_DB"], "claude-code", S2) == len(child.read_bytes())
    assert log_lines(home) == []
    # the fork imported alone keeps its origin's ids; the parent imported after it adds nothing
    other = fresh(home)
    assert run_cli("import-transcripts", "claude-code", str(child), env=other).code == 0
    assert run_cli("import-transcripts", "claude-code", str(parent), env=other).code == 0
    assert sorted(e[0] for e in events(other["YIJI_DB"])) == sorted(e[0] for e in stored)
    with sqlite3.connect(other["YIJI_DB"]) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 6


def test_a_forks_copies_without_an_origin_are_not_stored_again(home: dict[str, Any]) -> None:
    """Claude Code 2.1's ``--fork-session`` copies the parent's lines with their uuids and times under the
    new session id and names no origin: a copy is the same host message (uuid), role and words at the same
    moment in the scope."""
    env, project = home["env"], home["project"]
    parent, child = home["root"] / "parent.jsonl", home["root"] / "child.jsonl"
    inherited = cc_turns(S1, str(project), PAIRS_ZH_EN[:2])
    write_lines(parent, inherited)
    assert hook("claude-code", "Stop", cc_payload("Stop", S1, parent, project), env).returncode == 0
    copies = [dict(line, sessionId=S2) for line in inherited]
    write_lines(child, [*copies, *cc_turns(S2, str(project), PAIRS_ZH_EN[2:], first=7)])
    assert hook("claude-code", "Stop", cc_payload("Stop", S2, child, project), env).returncode == 0
    stored = events(env["YIJI_DB"])
    assert [e[2] for e in stored] == [t for pair in PAIRS_ZH_EN for t in pair]
    assert [e[3] for e in stored] == [S1] * 4 + [S2] * 2
    assert cursor(env["YIJI_DB"], "claude-code", S2) == len(child.read_bytes())
    # imported in either order, each turn is stored once
    other = fresh(home)
    assert run_cli("import-transcripts", "claude-code", str(child), env=other).code == 0
    assert run_cli("import-transcripts", "claude-code", str(parent), env=other).code == 0
    assert sorted(e[2] for e in events(other["YIJI_DB"])) == sorted(e[2] for e in stored)
