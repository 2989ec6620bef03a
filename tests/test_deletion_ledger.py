"""A deletion stays a deletion: whatever a host replays later (a copy of the line, a fork under a new
session id, the transcript imported again into another project, an event submitted or imported again, a
line holding an identifier forgotten with ``delete --matching``) is not stored again, and the ledger that
remembers it (digests, no text) travels through export/import and backup/restore.

Hooks run as the hosts run them (a subprocess with the payload on standard input); the rest of the CLI runs
in-process against the same SQLite file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.deletions import WORD_RUN, copy_form, digest, holds_forgotten, identifier_entry
from yiji.domain.identifiers import Needle, is_word_char

from .hook_fixtures import cc_line, cc_payload, cc_turns, write_lines
from .inprocess import run_cli
from .mcp_helpers import memory_client, payload
from .test_hooks import hook, log_lines, project_id

S1 = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
S2 = "6a1d2f3b-9c8e-4d4f-8a21-b2c3d4e5f6a7"
S3 = "7b2e3a4c-0d9f-4e5a-9b32-c3d4e5f6a7b8"
SECRET = "My locker code is 4471-9902, keep it between us"
PAIRS = [
    ("Which database do we use for the cache?", "SQLite, kept local."),
    (SECRET, "Understood."),
    ("Next: the quarterly report charts", "Noted: charts for the quarterly report."),
]


def texts(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM events ORDER BY seq")]


def capture_cursor(db: Path, session: str) -> int:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT cursor FROM capture_cursors WHERE session_id = ?", (session,)).fetchone()
    return int(row[0])


def stop(home: dict[str, Any], session: str, transcript: Path) -> None:
    done = hook("claude-code", "Stop", cc_payload("Stop", session, transcript, home["project"]), home["env"])
    assert (done.returncode, done.stdout) == (0, "")


def scan_clean(cli: Any, *terms: str) -> bool:
    args = [a for t in terms for a in ("--scan-for", t)]
    report = cli("--json", "doctor", *args)
    return not any(str(p).startswith("term") for p in report.json()["problems"])


def secret_line(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return next(x for x in lines if x["message"]["content"] == SECRET)


def test_a_replayed_line_and_a_fork_do_not_bring_a_deleted_event_back(home: dict[str, Any], cli: Any) -> None:
    db, project = home["db"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS)
    write_lines(transcript, lines)
    stop(home, S1, transcript)
    assert SECRET in texts(db)
    secret = secret_line(lines)
    deleted = cli(
        "--json",
        "--project",
        project_id(project),
        "delete",
        "--event",
        f"claude-code:{S1}:{secret['uuid']}",
        "--yes",
    )
    assert deleted.code == 0, deleted.err
    assert SECRET not in texts(db) and scan_clean(cli, SECRET)

    # Claude Code appends a copy of the line (same uuid), then the conversation goes on
    write_lines(
        transcript, [secret, *cc_turns(S1, str(project), [("And the backup plan?", "Nightly.")], first=7)]
    )
    stop(home, S1, transcript)
    stored = texts(db)
    assert SECRET not in stored and "And the backup plan?" in stored and "Nightly." in stored
    assert capture_cursor(db, S1) == len(transcript.read_bytes())  # capture moved past the replay
    logged = log_lines(home)
    assert len(logged) == 1 and "1 message not stored" in logged[0]
    assert SECRET not in logged[0] and str(home["root"]) not in logged[0]

    # a fork repeats the parent's lines under a new session id (new uuids, spacing and case of a copy)
    fork = home["root"] / "s2.jsonl"
    copied = [dict(x, sessionId=S2, uuid=x["uuid"][:-12] + S2[-12:]) for x in lines]
    copied[[x["message"]["content"] for x in lines].index(SECRET)]["message"] = {
        "role": "user",
        "content": "  my LOCKER code is 4471-9902,\n keep it between us ",
    }
    write_lines(fork, copied)
    stop(home, S2, fork)
    with sqlite3.connect(db) as conn:
        forked = [r[0] for r in conn.execute("SELECT text FROM events WHERE session_id = ?", (S2,))]
    assert len(forked) == 5 and not any("4471" in t for t in forked)
    assert scan_clean(cli, SECRET, "4471-9902", f"claude-code:{S1}:{secret['uuid']}")


def test_import_again_into_another_project_keeps_the_deletion(home: dict[str, Any], cli: Any) -> None:
    db, project = home["db"], home["project"]
    one = home["root"] / "one.jsonl"
    write_lines(
        one,
        [
            cc_line(
                "user", "0000aaaa-0000-4000-8000-000000000001", SECRET, session=S1, cwd=str(project), second=0
            )
        ],
    )
    assert cli("--json", "import-transcripts", "claude-code", str(one)).code == 0
    assert texts(db) == [SECRET]
    done = cli("--json", "--project", project_id(project), "delete", "--matching", "4471-9902", "--yes")
    assert done.code == 0 and texts(db) == []

    again = cli("--json", "--project", "elsewhere", "import-transcripts", "claude-code", str(one))
    assert again.code == 0, again.err
    # the session keeps the scope it was captured in, where its cursor is already past the deleted line
    assert again.json()[0]["captured"] == 0 and again.json()[0]["project"] == project_id(project)
    assert texts(db) == []
    # the same message copied under another id and session, into yet another project
    other = home["root"] / "two.jsonl"
    write_lines(
        other,
        [cc_line("user", "1111aaaa-0000-4000-8000-000000000002", SECRET, session=S2, cwd="/x", second=0)],
    )
    third = cli("--project", "third", "import-transcripts", "claude-code", str(other))
    assert third.code == 0 and "1 not stored as deleted" in third.out
    assert texts(db) == [] and scan_clean(cli, SECRET)


def test_an_identifier_forgotten_with_matching_stays_out_of_later_lines(
    home: dict[str, Any], cli: Any
) -> None:
    db, project = home["db"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS[:1])
    write_lines(transcript, lines)
    stop(home, S1, transcript)
    # nothing holds it yet: the host has not handed the line over
    forgot = cli("--json", "--project", project_id(project), "delete", "--matching", "123-45-6789", "--yes")
    assert forgot.code == 0 and forgot.json()["event_ids"] == []
    later = [
        ("user", "my number is 123 45 6789 by the way"),
        ("assistant", "The order 1234567890 shipped."),
        ("user", "ok, and ＳＳＮ １２３４５６７８９ again"),
        ("user", "see you tomorrow"),
    ]
    write_lines(
        transcript,
        [
            cc_line(
                role,
                f"{n:04d}ffff-0000-4000-8000-{S1[-12:]}",
                text,
                session=S1,
                cwd=str(project),
                second=50 + n,
            )
            for n, (role, text) in enumerate(later)
        ],
    )
    stop(home, S1, transcript)
    stored = texts(db)
    assert "The order 1234567890 shipped." in stored and "see you tomorrow" in stored  # nothing wider
    assert [t for t in stored if t in (later[0][1], later[2][1])] == []
    assert capture_cursor(db, S1) == len(transcript.read_bytes())
    assert scan_clean(cli, "123-45-6789")
    # another scope never forgot it
    submit = ("event", "submit", "--session", "s", "--role", "user")
    elsewhere = cli("--json", "--project", "elsewhere", *submit, "ref 123-45-6789")
    assert elsewhere.code == 0 and elsewhere.json()["created"] is True


def test_host_ingest_acknowledges_a_replayed_deletion_and_moves_its_cursor(cli: Any, db_path: Path) -> None:
    def message(seq: int, event_id: str, text: str, second: int | None = None) -> str:
        line = {"event_id": event_id, "message_id": f"m{seq}", "session": "s1", "seq": seq, "role": "user"}
        at = f"2026-11-30T10:00:{seq if second is None else second:02d}Z"
        return json.dumps(line | {"text": text, "occurred_at": at}) + "\n"

    def ingest(expect: int, lines: str) -> Any:
        done = run_cli(
            "--db", str(db_path), "host-ingest", "--instance", "dsh1", "--session", "s1",
            "--expect-cursor", str(expect), input=lines,
        )  # fmt: skip
        assert done.code == 0, done.err
        return json.loads(done.out)

    assert ingest(-1, message(0, "dsh:s1:0", "hello") + message(1, "dsh:s1:1", SECRET)) == {
        "ok": True,
        "cursor": 1,
    }
    assert cli("delete", "--event", "dsh:s1:1", "--yes").code == 0
    # the line again, and a copy of it under a new id (the same moment)
    replayed = (
        message(2, "dsh:s1:1", SECRET) + message(3, "dsh:s1:3", SECRET, 1) + message(4, "dsh:s1:4", "bye")
    )
    assert ingest(1, replayed) == {"ok": True, "cursor": 4, "skipped_deleted": 2}
    assert texts(db_path) == ["hello", "bye"]


def test_submit_and_event_import_skip_what_was_deleted(cli: Any, tmp_path: Path, db_path: Path) -> None:
    at = ("--occurred-at", "2026-03-01T09:00:00+08:00")
    first = cli("--json", "event", "submit", "--id", "e1", "--session", "s", "--role", "user", *at, SECRET)
    assert first.code == 0
    assert cli("--json", "delete", "--event", "e1", "--yes").code == 0

    again = cli("--json", "event", "submit", "--id", "e1", "--session", "s", "--role", "user", SECRET)
    assert again.code == 0, again.err
    result = again.json()
    assert result["created"] is False and result["event"] is None and result["skipped"] == "deleted"
    assert "its id" in result["warnings"][0] and "4471" not in again.out
    # a copy of the message (the same moment, in another zone) under a new id and session
    copy = cli(
        "event", "submit", "--id", "e2", "--session", "t", "--role", "user",
        "--occurred-at", "2026-03-01T01:00:00Z", SECRET.upper() + "  ",
    )  # fmt: skip
    assert copy.code == 0 and "not stored" in copy.out and "4471" not in copy.out

    records = tmp_path / "events.jsonl"
    records.write_text(
        "\n".join(
            json.dumps(r)
            for r in (
                {"id": "e1", "session": "s", "role": "user", "text": "a new text under the old id"},
                {"session": "u", "role": "user", "text": SECRET, "occurred_at": "2026-03-01T01:00:00Z"},
                {"id": "e3", "session": "u", "role": "user", "text": "kept"},
            )
        ),
        encoding="utf-8",
    )
    summary = cli("--json", "event", "import", str(records)).json()
    assert (summary["inserted"], summary["skipped_deleted"], summary["rejected"]) == (1, 2, 0)
    assert texts(db_path) == ["kept"]
    assert scan_clean(cli, SECRET)


def test_the_same_words_said_again_later_are_a_new_message(home: dict[str, Any], cli: Any) -> None:
    """A deleted "ok" keeps its copies out, never every later "ok": a copy is the same words at the same
    moment; the same words at another moment were said again."""
    db, project = home["db"], home["project"]
    transcript = home["root"] / "s1.jsonl"
    lines = [
        cc_line("user", "0000bbbb-0000-4000-8000-000000000001", "ok", session=S1, cwd=str(project), second=0),
        cc_line(
            "user", "0000bbbb-0000-4000-8000-000000000002", "go on", session=S1, cwd=str(project), second=1
        ),
    ]
    write_lines(transcript, lines)
    stop(home, S1, transcript)
    assert texts(db) == ["ok", "go on"]
    gone = cli(
        "--json",
        "--project",
        project_id(project),
        "delete",
        "--event",
        f"claude-code:{S1}:{lines[0]['uuid']}",
        "--yes",
    )
    assert gone.code == 0, gone.err
    fork = home["root"] / "s2.jsonl"
    copied = [dict(x, sessionId=S2, uuid="1111" + x["uuid"][4:]) for x in lines]  # a fork: new uuids
    said_again = cc_line(
        "user", "0000bbbb-0000-4000-8000-000000000009", "OK", session=S2, cwd=str(project), second=9
    )
    write_lines(fork, [*copied, said_again])
    stop(home, S2, fork)
    with sqlite3.connect(db) as conn:
        forked = [r[0] for r in conn.execute("SELECT text FROM events WHERE session_id = ?", (S2,))]
    assert "ok" not in forked and "OK" in forked


@pytest.mark.anyio
async def test_mcp_event_submit_of_a_deleted_event_is_answered_not_stored(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        # A copy is the same words at the same moment: the moment is given, not the clock's (a second
        # may pass between the two calls).
        sent = {
            "id": "e1",
            "session": "s",
            "role": "user",
            "text": SECRET,
            "occurred_at": "2026-03-01T01:00:00Z",
        }
        assert payload(await client.call_tool("event_submit", sent))["created"] is True
        gone = payload(await client.call_tool("memory_delete", {"event_id": "e1", "confirm": True}))
        assert gone["event_ids"] == ["e1"]
        again = await client.call_tool("event_submit", sent)
        answer = payload(again)
        assert answer["skipped"] == "deleted" and "event" not in answer and answer["created"] is False
        assert "4471" not in json.dumps(answer)
        copy = payload(await client.call_tool("event_submit", dict(sent, id="e2", session="t")))
        assert copy["skipped"] == "deleted" and "its text" in copy["warnings"][0]
    assert texts(db_path) == []


def test_a_correction_that_repeats_a_deletion_is_a_conflict(service: Any) -> None:
    from yiji.errors import Conflict
    from yiji.models import EventIn
    from yiji.models.lifecycle import CorrectRequest, DeleteRequest
    from yiji.models.memories import DeriveRequest, MemoryIn

    service.event_submit(EventIn(id="a", session="s", role="user", text="I live in Hangzhou"))
    service.event_submit(EventIn(id="b", session="s", role="user", text=SECRET))
    derived = service.memory_derive(
        DeriveRequest(
            event_id="a",
            memories=[
                MemoryIn(
                    text="lives in Hangzhou",
                    quote="I live in Hangzhou",
                    kind="fact",
                    basis="user_statement",
                    confidence=0.9,
                )
            ],
        )
    )
    service.memory_delete(DeleteRequest(event_id="b"))
    with pytest.raises(Conflict, match="deleted event"):
        service.memory_correct(CorrectRequest(memory_id=derived.memory_ids[0], statement=SECRET))


def test_the_ledger_survives_export_import_and_backup_restore(home: dict[str, Any], cli: Any) -> None:
    db, project, root = home["db"], home["project"], home["root"]
    transcript = root / "s1.jsonl"
    lines = cc_turns(S1, str(project), PAIRS)
    write_lines(transcript, lines)
    stop(home, S1, transcript)
    uuid = secret_line(lines)["uuid"]
    assert (
        cli("--project", project_id(project), "delete", "--event", f"claude-code:{S1}:{uuid}", "--yes").code
        == 0
    )
    assert cli("--project", project_id(project), "delete", "--matching", "AB-1234", "--yes").code == 0
    with sqlite3.connect(db) as conn:
        ledger = conn.execute("SELECT kind, digest, span FROM deletion_ledger ORDER BY rowid").fetchall()
        dumped = "\n".join(conn.iterdump()).lower()
    assert sorted(k for k, _, _ in ledger) == ["event_id", "identifier", "text"]
    assert "locker" not in dumped and "plate" not in dumped  # digests, no text

    assert cli("export", str(root / "a.jsonl"), "--format", "jsonl").code == 0
    assert cli("backup", str(root / "b.db")).code == 0
    replay = root / "replay.jsonl"
    plate = cc_line(
        "user", "0000dddd-0000-4000-8000-000000000009", "plate ab 1234 seen", session=S3, cwd="/", second=90
    )
    write_lines(replay, [dict(x, sessionId=S3, uuid=x["uuid"][:-12] + S3[-12:]) for x in lines] + [plate])
    for name, command in (
        ("imported.db", ["import", str(root / "a.jsonl")]),
        ("restored.db", ["restore", str(root / "b.db")]),
    ):
        target = root / name
        done = cli("--db", str(target), "--json", *command)
        assert done.code == 0, done.err
        assert done.json()["counts"]["deletion_ledger"] == 3
        with sqlite3.connect(target) as conn:
            assert (
                conn.execute("SELECT kind, digest, span FROM deletion_ledger ORDER BY rowid").fetchall()
                == ledger
            )
        brought = cli(
            "--db",
            str(target),
            "--json",
            "--project",
            project_id(project),
            "import-transcripts",
            "claude-code",
            str(replay),
        )
        assert brought.code == 0, brought.err
        assert brought.json()[0]["skipped_deleted"] == 2
        assert not any("4471" in t or "1234" in t for t in texts(target))
        assert len(texts(target)) == 5 + 5  # the other messages, once more under new ids


def test_an_archive_with_a_bad_ledger_row_is_refused(cli: Any, tmp_path: Path) -> None:
    cli("event", "submit", "--id", "e1", "--session", "s", "--role", "user", "hello")
    assert cli("delete", "--event", "e1", "--yes").code == 0
    archive = tmp_path / "a.json"
    assert cli("export", str(archive)).code == 0
    data = json.loads(archive.read_text(encoding="utf-8"))
    rows = data["tables"]["deletion_ledger"]
    assert [r["kind"] for r in rows] == ["event_id", "text"]
    rows[0]["digest"] = "not-a-digest"
    rows[1]["span"] = 3
    archive.write_text(json.dumps(data), encoding="utf-8")
    refused = cli("--db", str(tmp_path / "new.db"), "import", str(archive))
    assert refused.code == 2
    assert "deletion_ledger[0].digest" in refused.err and "deletion_ledger[1]" in refused.err


@pytest.mark.parametrize(
    ("identifier", "text"),
    [
        ("123-45-6789", "SSN on file: 123-45-6789"),
        ("123-45-6789", "１２３ ４５ ６７８９"),
        ("123456789", "1234567890"),
        ("123456789", "0123456789"),
        ("alice@acme.io", "write to ALICE@acme.io!"),
        ("alice@acme.io", "alice.smith@acme.io"),
        ("Alice", "I met Alicia today"),
        ("AB-1234", "plate ab 1234 seen"),
        ("AB-1234", "plate ab-12345 seen"),
        ("new york", "Flights to New   York"),
        ("身份证", "用户的身份证号"),
        ("+1 555 0100", "call +1 (555) 0100 or +1 555 0100"),
        ("AB-1234!", "plate ab 1234! seen"),
        ("x", "x"),
        ("x", "xx x_x"),
        ("project_2024", "project_2024 budget is $500K."),
        ("project_2024", "project_2024_v2 budget is $750K."),
        ("project_2024", "see project_2024.v2 and v2-project_2024"),
        ("PROJECT-2024", "关于project_2024的预算"),
        ("project 2024", "(project_2024)"),
    ],
)
def test_a_forgotten_identifier_is_found_by_its_digest_exactly_as_matching_finds_it(
    identifier: str, text: str
) -> None:
    entry = identifier_entry(identifier)
    assert entry is not None
    span, bounded, value = entry
    forgotten = {(span, bounded): frozenset({value})}
    assert holds_forgotten([text], forgotten) is Needle.of(identifier).found_in(text)
    if "project" in identifier.casefold():  # the identifier boundary: a distinct identifier stays
        assert Needle.of(identifier).found_in(text) is ("v2" not in text), text


def test_the_word_runs_are_the_runs_of_the_identifier_rule() -> None:
    sample = "".join(chr(c) for c in range(0x20, 0x3_0000, 7) if not 0xD800 <= c <= 0xDFFF)
    expected = [ch for ch in sample if is_word_char(ch)]
    assert "".join(WORD_RUN.findall(sample)) == "".join(expected)


def test_digests_and_copy_form() -> None:
    assert copy_form("  Ｍy\tLOCKER\n code ") == "my locker code"
    assert digest("text", "x") != digest("event_id", "x")
    assert len(digest("text", "\ud83d lone")) == 64  # a lone surrogate is hashed, not an error
    assert identifier_entry(" -- ") is None
