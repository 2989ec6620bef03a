"""``yiji host-ingest``: the compare-and-set capture cursor, replays, conflicts and deletion that survives
replay, export/import and backup/restore. The CLI runs as users run it (in-process runner with a real
stdin stream, and a subprocess for exit codes)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from yiji.cli import main as cli_main
from yiji.db import Database
from yiji.domain.limits import SCOPE_RULE
from yiji.models import EventFilter

from .conftest import CliResult, run_yiji
from .factory import make_service
from .fakeprovider import FakeProvider
from .inprocess import run_cli

SECRET = "我的猫叫米索 secret-text-7731"


def line(seq: int, text: str | None = None, *, instance: str = "dsh1", session: str = "s1") -> dict[str, Any]:
    return {
        "event_id": f"dsh:{instance}:{session}:{seq}",
        "message_id": f"msg-{seq}",
        "session": session,
        "seq": seq,
        "role": "user" if seq % 2 == 0 else "assistant",
        "text": text or f"message {seq}",
        "occurred_at": f"2026-11-30T10:00:{seq:02d}+08:00",
    }


Ingest = Callable[..., CliResult]


@pytest.fixture
def ingest(db_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Ingest:
    """``yiji host-ingest`` in-process with ``lines`` as JSON lines on stdin."""

    def run(
        lines: list[dict[str, Any]] | str | bytes = "",
        *,
        expect: int | None = None,
        reason: str = "event",
        instance: str = "dsh1",
        session: str = "s1",
        db: Path | None = None,
    ) -> CliResult:
        text = (
            lines
            if isinstance(lines, str | bytes)
            else "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
        )
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        args = ["--db", str(db or db_path), "host-ingest", "--instance", instance, "--session", session]
        if expect is not None:
            args += ["--expect-cursor", str(expect)]
        code = cli_main([*args, "--reason", reason])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def events_of(path: Path, session: str = "s1") -> list[tuple[str, str, str, str]]:
    svc = make_service(path)
    try:
        _, records = svc.event_list(EventFilter(session=session, limit=1000))
    finally:
        svc.close()
    return [(r.id, r.role, r.text, r.extraction_state) for r in records]


def test_empty_stdin_answers_the_stored_cursor(ingest: Ingest) -> None:
    first = ingest()
    assert (first.code, json.loads(first.out)) == (0, {"ok": True, "cursor": -1})
    assert ingest([line(0), line(1)], expect=-1).code == 0
    probe = ingest()
    assert probe.out.count("\n") == 1 and json.loads(probe.out) == {"ok": True, "cursor": 1}
    other_session = ingest(session="s2")
    assert json.loads(other_session.out) == {"ok": True, "cursor": -1}


def test_a_batch_commits_events_checkpoint_and_cursor_together(
    ingest: Ingest, db_path: Path, cli: Callable[..., CliResult]
) -> None:
    result = ingest([line(0, SECRET), line(3)], expect=-1, reason="pre-summarize")
    assert (result.code, json.loads(result.out)) == (0, {"ok": True, "cursor": 3})
    assert events_of(db_path) == [
        ("dsh:dsh1:s1:0", "user", SECRET, "none"),
        ("dsh:dsh1:s1:3", "assistant", "message 3", "none"),
    ]
    shown = cli("--json", "event", "show", "dsh:dsh1:s1:0").json()
    assert shown["occurred_at"] == "2026-11-30T02:00:00.000000Z" and shown["source"] == "host-capture"
    checkpoint = cli("--json", "checkpoint", "show", "--session", "s1").json()["checkpoint"]
    assert "before the host summarized" in checkpoint["goal"]
    assert checkpoint["covered_seq"] == shown["seq"] + 1
    assert checkpoint["completed"] == ["host capture dsh1: pre-summarize, messages through host seq 3"]


def test_boundary_reasons_record_a_checkpoint_even_without_new_messages(
    ingest: Ingest, cli: Callable[..., CliResult]
) -> None:
    assert ingest([line(0)], expect=-1).code == 0
    for reason in ("pre-summarize", "pre-return"):
        result = ingest(expect=0, reason=reason)
        assert json.loads(result.out) == {"ok": True, "cursor": 0}
    history = cli("--json", "checkpoint", "show", "--session", "s1", "--history").json()["history"]
    assert [h["completed"][0].split(": ")[1].split(",")[0] for h in history] == [
        "pre-return",
        "pre-summarize",
        "event",
    ]
    # An ordinary empty batch writes nothing: no checkpoint for "nothing happened".
    assert json.loads(ingest(expect=0).out) == {"ok": True, "cursor": 0}
    assert len(cli("--json", "checkpoint", "show", "--session", "s1", "--history").json()["history"]) == 3


def test_a_stale_expected_cursor_rolls_back_and_reports_the_stored_one(ingest: Ingest, db_path: Path) -> None:
    assert ingest([line(0), line(1)], expect=-1).code == 0
    # A second writer (or a replay whose acknowledgement was lost) still expects -1.
    stale = ingest([line(0), line(1), line(2)], expect=-1)
    assert stale.code == 3
    assert json.loads(stale.out) == {"ok": False, "cursor": 1, "conflict": "cursor"}
    assert [e[0] for e in events_of(db_path)] == ["dsh:dsh1:s1:0", "dsh:dsh1:s1:1"]  # seq 2 rolled back
    # Resending the same ids from the stored cursor is how the host recovers: no duplicates.
    assert json.loads(ingest([line(2)], expect=1).out) == {"ok": True, "cursor": 2}
    assert len(events_of(db_path)) == 3


def test_a_replayed_id_with_the_same_payload_is_a_no_op_and_another_payload_a_conflict(
    ingest: Ingest, db_path: Path
) -> None:
    assert ingest([line(0), line(1)], expect=-1).code == 0
    # Same ids under a fresh installation id (its own cursor): stored once, cursor set.
    again = ingest([line(0), line(1)], expect=-1, instance="dsh1-reinstalled")
    assert json.loads(again.out) == {"ok": True, "cursor": 1}
    assert len(events_of(db_path)) == 2
    changed = ingest([line(0, "something else")], expect=-1, instance="dsh1-third")
    assert changed.code == 3
    assert json.loads(changed.out) == {"ok": False, "cursor": -1, "conflict": "event"}
    assert json.loads(ingest(instance="dsh1-third").out)["cursor"] == -1  # nothing moved
    assert events_of(db_path)[0][2] == "message 0"


@pytest.mark.parametrize(
    ("lines", "expect", "field"),
    [
        ([line(0, SECRET)], None, "expect_cursor"),
        ([line(1, SECRET)], 1, "lines[0].seq"),
        ([line(3, SECRET), line(2)], -1, "lines[1].seq"),
        ([line(0, SECRET, session="other")], -1, "lines[0].session"),
        ([{**line(0, SECRET), "occurred_at": "2026-11-30T10:00:00"}], -1, "lines.0.occurred_at"),
        ([{**line(0, SECRET), "role": "system"}], -1, "lines.0.role"),
        ([{**line(0, SECRET), "seq": True}], -1, "lines.0.seq"),
        ([{**line(0, SECRET), "seq": False}], -1, "lines.0.seq"),
        ([{**line(0, SECRET), "extra": SECRET}], -1, "lines.0.extra"),
        (json.dumps(line(0, SECRET)) + "\n{" + SECRET + "\n", -1, "stdin line 2"),
        (
            '{"text": "' + SECRET + '", "a": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
            -1,
            "stdin line 1: nested",
        ),
        (
            json.dumps(line(0, SECRET))[:-1] + ', "seq": 1' + "0" * 4999 + "}\n",
            -1,
            "stdin line 1: holds a number",
        ),
        (json.dumps(line(0, SECRET + " \ud800")) + "\n", -1, "stdin line 1: holds an unpaired surrogate"),
        (
            json.dumps(line(0, SECRET)).encode() + b"\n" + json.dumps(line(1)).encode()[:-2] + b"\xff}\n",
            -1,
            "stdin line 2: the line is not UTF-8",
        ),
    ],
)
def test_bad_input_names_the_field_and_never_echoes_values(
    ingest: Ingest, db_path: Path, lines: Any, expect: int | None, field: str
) -> None:
    result = ingest(lines, expect=expect)
    assert result.code == 2
    assert field in result.err
    assert SECRET not in result.err and SECRET not in result.out
    assert events_of(db_path) == []


def test_a_deleted_event_behind_the_cursor_is_never_captured_again(
    ingest: Ingest, db_path: Path, cli: Callable[..., CliResult]
) -> None:
    assert ingest([line(0, SECRET), line(1), line(2)], expect=-1).code == 0
    assert cli("delete", "--event", "dsh:dsh1:s1:0", "--yes").code == 0
    # A host resuming the session asks for the cursor and sends only what lies past it.
    assert json.loads(ingest().out)["cursor"] == 2
    # A host that replays from the start is refused, either way it tries.
    assert ingest([line(0, SECRET), line(1), line(2)], expect=-1).code == 3
    assert ingest([line(0, SECRET)], expect=2).code == 2
    assert [e[0] for e in events_of(db_path)] == ["dsh:dsh1:s1:1", "dsh:dsh1:s1:2"]


def test_a_message_captured_after_the_newest_event_was_deleted_gets_a_new_number(
    ingest: Ingest, db_path: Path, cli: Callable[..., CliResult]
) -> None:
    """Readers that page by ``seq`` (``before_seq``, extraction's ``after``) never see a number twice."""
    assert ingest([line(0), line(1), line(2)], expect=-1).code == 0
    svc = make_service(db_path)
    try:
        _, before = svc.event_list(EventFilter(session="s1", limit=10))
    finally:
        svc.close()
    deleted = max(r.seq for r in before)
    assert cli("delete", "--event", "dsh:dsh1:s1:2", "--yes").code == 0
    assert json.loads(ingest([line(3)], expect=2).out) == {"ok": True, "cursor": 3}
    svc = make_service(db_path)
    try:
        _, after = svc.event_list(EventFilter(session="s1", limit=10))
    finally:
        svc.close()
    assert {r.id: r.seq for r in after}["dsh:dsh1:s1:3"] == deleted + 1


@pytest.mark.parametrize("via", ["export-import", "backup-restore"])
def test_deletion_survives_a_round_trip_through_an_archive(
    ingest: Ingest,
    db_path: Path,
    tmp_path: Path,
    cli: Callable[..., CliResult],
    capsys: pytest.CaptureFixture[str],
    via: str,
) -> None:
    assert ingest([line(0, SECRET), line(1), line(2)], expect=-1).code == 0
    assert cli("delete", "--event", "dsh:dsh1:s1:0", "--yes").code == 0
    copy = tmp_path / "copy"
    restored = tmp_path / "restored.db"
    if via == "export-import":
        assert cli("export", str(copy) + ".jsonl").code == 0
        outcome = cli_main(["--db", str(restored), "import", str(copy) + ".jsonl"])
    else:
        assert cli("backup", str(copy) + ".db").code == 0
        outcome = cli_main(["--db", str(restored), "restore", str(copy) + ".db"])
    assert outcome == 0, capsys.readouterr().err
    capsys.readouterr()
    assert json.loads(ingest(db=restored).out) == {"ok": True, "cursor": 2}
    assert ingest([line(0, SECRET), line(1), line(2), line(3)], expect=-1, db=restored).code == 3
    assert json.loads(ingest([line(3)], expect=2, db=restored).out) == {"ok": True, "cursor": 3}
    assert [e[0] for e in events_of(restored)] == ["dsh:dsh1:s1:1", "dsh:dsh1:s1:2", "dsh:dsh1:s1:3"]


def test_scope_comes_from_flags_or_configuration(ingest: Ingest, tmp_path: Path, db_path: Path) -> None:
    config = tmp_path / "yiji.toml"
    config.write_text('persona = "miso"\nproject = "dsh"\n', encoding="utf-8")
    stdin = json.dumps(line(0)) + "\n"
    base = ["--db", str(db_path), "host-ingest", "--instance", "dsh1", "--session", "s1"]
    by_config = run_cli(*base, "--config", str(config), "--expect-cursor", "-1", input=stdin)
    assert json.loads(by_config.out) == {"ok": True, "cursor": 0}
    by_flags = run_cli(*base, "--persona", "miso", "--project", "dsh", input="")
    assert json.loads(by_flags.out) == {"ok": True, "cursor": 0}
    assert json.loads(ingest().out) == {"ok": True, "cursor": -1}  # the default scope has its own cursor
    shown = run_cli("--db", str(db_path), "--json", "event", "show", "dsh:dsh1:s1:0", "--config", str(config))
    assert shown.json()["persona"] == "miso"


def test_exit_codes_and_one_json_line_as_a_subprocess(db_path: Path) -> None:
    base = ["--db", str(db_path), "host-ingest", "--instance", "dsh1", "--session", "s1"]
    stdin = "".join(json.dumps(line(i)) + "\n" for i in range(3))
    ok = run_yiji(*base, "--expect-cursor", "-1", "--reason", "backfill", input=stdin)
    assert (ok.code, ok.out) == (0, '{"ok": true, "cursor": 2}\n')
    conflict = run_yiji(*base, "--expect-cursor", "0", input=json.dumps(line(1)) + "\n")
    assert (conflict.code, conflict.out) == (3, '{"ok": false, "cursor": 2, "conflict": "cursor"}\n')
    usage = run_yiji(*base, "--reason", "whenever", input="")
    assert usage.code == 2 and usage.out == ""


def test_no_extraction_provider_is_constructed(
    db_path: Path, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    env = {"YIJI_EXTRACTION_BASE_URL": fake_provider.base_url, "YIJI_EXTRACTION_MODEL": "fake"}
    result = run_cli(
        "--db",
        str(db_path),
        "host-ingest",
        "--instance",
        "dsh1",
        "--session",
        "s1",
        "--expect-cursor",
        "-1",
        env=env,
        input=json.dumps(line(0)) + "\n",
    )
    assert json.loads(result.out) == {"ok": True, "cursor": 0}
    assert fake_provider.requests == []
    assert events_of(db_path)[0][3] == "none"


BAD_CURSORS = {
    "not a number": ("cursor", "x"),
    "below -1": ("cursor", "-2"),
    "with a space": ("cursor", " 3"),
    "with a leading zero": ("cursor", "03"),
    "of 5,000 digits": ("cursor", "9" * 5000),
    "instance id with spaces": ("instance_id", "dsh one"),
    "unknown persona": ("persona_id", "nobody"),
}


@pytest.mark.parametrize(("column", "value"), list(BAD_CURSORS.values()), ids=list(BAD_CURSORS))
def test_a_damaged_cursor_row_is_named_by_doctor_and_refused_by_restore(
    ingest: Ingest, db_path: Path, tmp_path: Path, cli: Callable[..., CliResult], column: str, value: str
) -> None:
    assert ingest([line(0, SECRET), line(1)], expect=-1).code == 0
    assert cli("--json", "doctor").json()["ok"] is True
    db = Database(db_path)
    with db.write() as conn:
        conn.execute(f"UPDATE capture_cursors SET {column} = ?", (value,))
    db.close()
    report = cli("--json", "doctor")
    assert report.code == 1
    assert report.json()["problems"] == [
        f"capture_cursors[0].{column}: "
        + (
            "persona_not_found"
            if column == "persona_id"
            else SCOPE_RULE
            if column == "instance_id"
            else "must be -1 or a whole number from 0 to 9223372036854775807, written without sign, "
            "spaces or leading zeros"
        )
        + " (host-ingest cannot use this row)"
    ]
    echoed = value if len(value) > 3 else SECRET  # a short value occurs in any text
    assert echoed not in report.out
    assert cli("backup", str(tmp_path / "b.db")).code == 0
    assert cli("export", str(tmp_path / "e.jsonl")).code == 0
    for command, source in (("restore", "b.db"), ("import", "e.jsonl")):
        target = tmp_path / f"{command}.db"
        refused = run_cli("--db", str(target), command, str(tmp_path / source))
        assert refused.code == 2, refused.err
        assert f"capture_cursors[0].{column}" in refused.err
        assert echoed not in refused.err and SECRET not in refused.err


def test_host_ingest_on_a_damaged_cursor_says_so(ingest: Ingest, db_path: Path) -> None:
    assert ingest([line(0)], expect=-1).code == 0
    db = Database(db_path)
    with db.write() as conn:
        conn.execute("UPDATE capture_cursors SET cursor = '-2'")
    db.close()
    for expect in (None, -1, 0):
        result = ingest([line(1)] if expect is not None else "", expect=expect)
        assert result.code == 1 and result.out == ""
        assert "the stored cursor of this capture session is not a valid cursor" in result.err


def test_seq_and_expected_cursor_are_bounded(ingest: Ingest, db_path: Path) -> None:
    from yiji.cli import capture
    from yiji.domain.capture import MAX_SEQ

    assert capture.MAX_SEQ == MAX_SEQ
    top = ingest([{**line(0), "seq": MAX_SEQ}], expect=-1)
    assert json.loads(top.out) == {"ok": True, "cursor": MAX_SEQ}
    past = ingest([{**line(1), "seq": MAX_SEQ + 1}], expect=MAX_SEQ, session="s1")
    assert past.code == 2 and "lines.0.seq" in past.err
    flag = ingest([line(1)], expect=MAX_SEQ + 1)
    assert flag.code == 2 and "argument --expect-cursor: must be a whole number from -1 to" in flag.err
