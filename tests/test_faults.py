"""Faults a careful user or an adversary meets: a full disk, read-only files and folders, damaged pages,
killed processes, hostile input and typos. Each gets a clear answer and leaves nothing half-done.

Full disks are real: a small tmpfs mounted in a private mount namespace (``unshare``). Read-only files are
real file modes, checked by an unprivileged user (``unshare --map-user`` when the tests run as root, since
root ignores modes).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from yiji.models import EventFilter

from .conftest import CliResult, foreign_database, require_tool, run_yiji
from .factory import make_service
from .fakeprovider import FakeProvider, server_error
from .inprocess import run_cli

PY = [sys.executable, "-m", "yiji"]
SECRET = "SECRET-TEXT-8d2c"


def _shell(script: str, *, tmpfs: Path | None = None, size: str = "1m", unprivileged: bool = False) -> str:
    """Run a shell script, with a fresh tmpfs of ``size`` at ``tmpfs``, or as an unprivileged user."""
    require_tool("unshare", "simulates a full disk and read-only files without touching the system")
    if tmpfs is not None:
        prefix = ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs {tmpfs} && sh -s"]
    elif unprivileged and os.geteuid() == 0:
        prefix = ["unshare", "--user", "--map-user=1000", "--map-group=1000", "sh", "-s"]
    else:
        prefix = ["sh", "-s"]
    proc = subprocess.run(prefix, input=script, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode == 97 or "mount:" in proc.stderr:
        if os.environ.get("YIJI_CI_STRICT") == "1":
            pytest.fail(f"user namespaces are required in CI: {proc.stderr}")
        pytest.skip("user namespaces are not available here")
    return proc.stdout + proc.stderr


def _yiji(*args: str) -> str:
    return " ".join([*PY, *(f"'{a}'" for a in args)])


# -- full disk ------------------------------------------------------------------------------------


def test_export_and_backup_onto_a_full_disk(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    big = tmp_path / "big.txt"
    big.write_text("x" * 400_000, encoding="utf-8")
    assert (
        run_yiji(
            "--db", str(db), "event", "submit", "--session", "s", "--role", "user", "--file", str(big)
        ).code
        == 0
    )
    full = tmp_path / "full"
    full.mkdir()
    out = _shell(
        f"""
        {_yiji("--db", str(db), "export", f"{full}/out.json")}; echo "export=$?"
        {_yiji("--db", str(db), "export", f"{full}/out.jsonl")}; echo "jsonl=$?"
        {_yiji("--db", str(db), "backup", f"{full}/out.db")}; echo "backup=$?"
        echo "left=$(ls -A {full} | wc -l)"
        """,
        tmpfs=full,
        size="256k",
    )
    assert "export=1" in out and "jsonl=1" in out and "backup=1" in out, out
    assert out.count("the disk is full") == 3, out
    assert "internal error" not in out and "integrity" not in out
    assert "left=0" in out, out


def test_creating_a_database_on_a_full_disk_leaves_nothing(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    out = _shell(
        f"""
        head -c 1048576 /dev/zero > {full}/filler 2>/dev/null
        {_yiji("--db", f"{full}/new/sub/y.db", "event", "submit", "--session", "s", "--role", "user", "hi")}
        echo "code=$?"
        echo "left=$(ls -A {full})"
        """,
        tmpfs=full,
    )
    assert "code=1" in out and "the disk is full" in out, out
    assert "left=filler" in out, out


def test_a_write_on_a_full_disk_says_so_and_keeps_earlier_events(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    text = tmp_path / "text.txt"
    text.write_text("hello world " * 4000, encoding="utf-8")
    db = f"{full}/c.db"
    out = _shell(
        f"""
        {_yiji("--db", db, "event", "submit", "--session", "s", "--role", "user", "first")} </dev/null
        head -c 10000000 /dev/zero > {full}/filler 2>/dev/null
        {_yiji("--db", db, "event", "submit", "--session", "s", "--role", "user", "--file", str(text))} \
            </dev/null
        echo "code=$?"
        rm {full}/filler
        {_yiji("--db", db, "--json", "event", "list")} </dev/null
        """,
        tmpfs=full,
        size="2m",
    )
    assert "code=1" in out and "the disk is full" in out, out
    listed = json.loads(out[out.index('{"scope"') :].splitlines()[0])
    assert [e["text"] for e in listed["events"]] == ["first"]


def test_an_import_stopped_by_a_full_disk_says_what_it_committed(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    source = tmp_path / "history.jsonl"
    rows = [
        {"id": f"h-{i}", "session": "s", "role": "user", "text": f"event {i} " + "x" * 2000}
        for i in range(2000)
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = f"{full}/c.db"
    out = _shell(
        f"""
        {_yiji("--db", db, "event", "import", str(source), "--batch-size", "100")} </dev/null
        echo "code=$?"
        """,
        tmpfs=full,
        size="2m",
    )
    assert "code=1" in out and "the disk is full" in out, out
    assert re.search(r"\d+ batch(es)? committed\), then the import stopped", out), out


# -- read-only and damaged ------------------------------------------------------------------------


def _stored(db: Path, text: str = "hello") -> None:
    result = run_cli("--db", str(db), "event", "submit", "--session", "s", "--role", "user", text)
    assert result.code == 0, result.err


def test_read_only_database_file(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    db = folder / "a.db"
    _stored(db)
    db.chmod(0o400)
    out = _shell(
        f"""
        {_yiji("--db", str(db), "event", "submit", "--session", "s", "--role", "user", "again")}
        echo "submit=$?"
        {_yiji("--db", str(db), "event", "list")}; echo "list=$?"
        {_yiji("--db", str(db), "recall", "hello")}; echo "recall=$?"
        """,
        unprivileged=True,
    )
    assert "submit=1" in out and "the file a.db is read-only" in out, out
    assert "list=0" in out and "recall=0" in out and "hello" in out
    assert "unexpected" not in out
    assert stat.S_IMODE(db.stat().st_mode) == 0o400, "yiji never makes a read-only file writable"


def test_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    db = folder / "a.db"
    _stored(db)
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    folder.chmod(0o500)
    try:
        out = _shell(
            _yiji("--db", str(db), "event", "submit", "--session", "s", "--role", "user", "x")
            + "; echo code=$?",
            unprivileged=True,
        )
    finally:
        folder.chmod(0o700)
    assert "code=1" in out and "the folder of a.db is not writable" in out, out
    assert "not a readable SQLite database" not in out


def test_doctor_on_damaged_pages(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    for i in range(5):
        _stored(db, f"hello {i}")
    size = db.stat().st_size
    with db.open("r+b") as f:
        for page in range(2, size // 4096):
            f.seek(page * 4096 + 100)
            f.write(bytes((page * 37 + i) % 256 for i in range(3000)))
    result = run_yiji("--db", str(db), "doctor")
    assert result.code == 1
    text = result.out + result.err
    assert "damaged" in text and "restore" in text and "unexpected" not in text


@pytest.mark.parametrize(
    "command",
    [
        ("doctor",),
        ("recall", "hello"),
        ("event", "submit", "--session", "s", "--role", "user", "hi"),
        ("export", "out.json"),
        ("serve",),
    ],
)
def test_a_db_path_that_is_no_database_is_named_for_what_it_is(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    text = tmp_path / "notes.md"
    text.write_text("# notes\n\nnothing to do with SQLite\n", encoding="utf-8")
    for path, said in (
        (folder, f"db: {folder} is a folder, not a database file"),
        (text, f"db: {text} is not a SQLite database (was --db meant to name another file?)"),
    ):
        result = run_yiji("--db", str(path), *command, cwd=tmp_path, input="")
        assert result.code == 2, result.err
        assert said in result.err
        assert "damaged" not in result.err and "input/output" not in result.err
        assert "nothing to do" not in result.err
    assert text.read_text(encoding="utf-8") == "# notes\n\nnothing to do with SQLite\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "notes.md"]
    assert list(folder.iterdir()) == []


def test_a_file_with_the_sqlite_header_that_fails_is_called_damaged(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    result = run_yiji("--db", str(db), "doctor")
    assert result.code == 1
    assert "is damaged" in result.err and "restore it from a backup" in result.err
    assert "not a SQLite database" not in result.err
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert run_yiji("--db", str(empty), "event", "submit", "--session", "s", "--role", "user", "hi").code == 0


# -- leftovers and permissions --------------------------------------------------------------------


def _killed_writer(target: Path) -> Path:
    """A process that opened a temporary file for ``target`` and was SIGKILLed before finishing."""
    code = (
        "import os, signal, sys; from pathlib import Path; from yiji.fileutil import temp_beside; "
        "tmp = temp_beside(Path(sys.argv[1])); tmp.write_text('partial plaintext'); print(tmp, flush=True); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == -signal.SIGKILL
    left = Path(proc.stdout.strip())
    assert left.exists() and left.parent == target.parent
    assert stat.S_IMODE(left.stat().st_mode) == 0o600
    return left


def test_leftover_of_a_killed_export_is_removed_by_the_next_export(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    _stored(db)
    out = tmp_path / "exports"
    out.mkdir()
    left = _killed_writer(out / "first.json")
    assert run_yiji("--db", str(db), "export", str(out / "second.json")).code == 0
    assert not left.exists()
    assert sorted(p.name for p in out.iterdir()) == ["second.json"]


def test_leftover_beside_the_database_is_reported_and_cleaned_by_doctor(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    _stored(db)
    left = _killed_writer(db)  # what a killed restore leaves: its private copy beside the database
    Path(f"{left}-wal").write_bytes(b"")
    report = run_cli("--db", str(db), "--json", "doctor")
    assert any("temporary file" in w for w in report.json()["warnings"])
    assert left.exists()
    cleaned = run_cli("--db", str(db), "--json", "doctor", "--clean").json()
    assert sorted(cleaned["cleaned"]) == sorted([left.name, f"{left.name}-wal"])
    assert not left.exists() and not Path(f"{left}-wal").exists()
    assert db.exists()


def test_restore_keeps_its_private_copy_beside_the_database(tmp_path: Path) -> None:
    source = tmp_path / "src.db"
    _stored(source)
    backup = tmp_path / "b.db"
    assert run_cli("--db", str(source), "backup", str(backup)).code == 0
    target = tmp_path / "t" / "new.db"
    assert run_cli("--db", str(target), "restore", str(backup)).code == 0
    assert sorted(p.name for p in target.parent.iterdir() if ".part" in p.name) == []


def test_created_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "c" / "y.db"
    proc = subprocess.run(
        [*PY, "--db", str(db), "event", "submit", "--session", "s", "--role", "user", "hi"],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.umask(0),  # noqa: PLW1509 - the point is the user's umask
    )
    assert proc.returncode == 0, proc.stderr
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_existing_data_folder_is_tightened_with_a_notice(tmp_path: Path) -> None:
    data = tmp_path / "xdg" / "yiji"
    data.mkdir(parents=True)
    data.chmod(0o755)
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "YIJI_DB": "", "YIJI_CONFIG": str(tmp_path / "none.toml")}
    env_file = tmp_path / "none.toml"
    env_file.write_text("", encoding="utf-8")
    result = run_cli("persona", "show", env=env)
    assert result.code == 0, result.err
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert "tightened the permissions" in result.err and "0755" in result.err
    again = run_cli("persona", "show", env=env)
    assert "tightened" not in again.err


# -- input ----------------------------------------------------------------------------------------


LOCALES = {
    "latin-1 stdio": {"PYTHONIOENCODING": "latin-1"},
    "C locale, no UTF-8 mode": {"LC_ALL": "C", "PYTHONUTF8": "0"},
}
CAT = "我的猫叫米索"


def _in_locale(locale: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    """Run yiji with a locale's environment; its output is read as UTF-8 (what yiji promises)."""
    drop = ("PYTHONIOENCODING", "PYTHONUTF8", "LANG", "LANGUAGE") + tuple(
        k for k in os.environ if k.startswith("LC_")
    )
    env = {k: v for k, v in os.environ.items() if k not in drop} | locale
    proc = subprocess.run([*PY, *args], input=stdin, capture_output=True, env=env, timeout=120, check=False)
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def _texts(db: Path) -> list[str]:
    svc = make_service(db)
    try:
        return sorted(r.text for r in svc.event_list(EventFilter(session="s", limit=100))[1])
    finally:
        svc.close()


@pytest.mark.parametrize("locale", list(LOCALES.values()), ids=list(LOCALES))
def test_text_is_read_as_utf8_whatever_the_locale(tmp_path: Path, locale: dict[str, str]) -> None:
    folder = tmp_path / "记忆"
    folder.mkdir()
    db = folder / "忆迹.db"
    submit = ["--db", str(db), "--json", "event", "submit", "--session", "s", "--role", "user"]
    code, out, err = _in_locale(locale, *submit, stdin=f"{CAT} stdin\n".encode())
    assert code == 0, err
    assert json.loads(out)["event"]["text"] == f"{CAT} stdin"
    assert _in_locale(locale, *submit, f"{CAT} argument")[0] == 0
    text_file = folder / "猫.txt"
    text_file.write_text(f"{CAT} file", encoding="utf-8")
    assert _in_locale(locale, *submit, "--file", str(text_file))[0] == 0
    line = {
        "event_id": "cap-1",
        "message_id": "m1",
        "session": "s",
        "seq": 0,
        "role": "user",
        "text": f"{CAT} host-ingest",
        "occurred_at": "2026-11-30T10:00:00+08:00",
    }
    ingest = ["--db", str(db), "host-ingest", "--instance", "i1", "--session", "s", "--expect-cursor", "-1"]
    code, out, err = _in_locale(locale, *ingest, stdin=json.dumps(line, ensure_ascii=False).encode() + b"\n")
    assert (code, out, err) == (0, '{"ok": true, "cursor": 0}\n', "")
    assert _texts(db) == sorted(f"{CAT} {how}" for how in ("stdin", "argument", "file", "host-ingest"))
    code, out, _ = _in_locale(locale, "--db", str(db), "--json", "event", "show", "cap-1")
    assert json.loads(out)["text"] == f"{CAT} host-ingest"


@pytest.mark.parametrize("locale", [{}, *LOCALES.values()], ids=["utf-8", *LOCALES])
def test_text_that_is_not_utf8_is_refused_naming_the_input(tmp_path: Path, locale: dict[str, str]) -> None:
    db = tmp_path / "a.db"
    submit = ["--db", str(db), "event", "submit", "--session", "s", "--role", "user"]
    code, _, err = _in_locale(locale, *submit, stdin=CAT.encode("gb18030"))
    assert (code, err) == (2, "yiji: invalid input: text: standard input is not UTF-8 text\n")
    bad_file = tmp_path / "gbk.txt"
    bad_file.write_bytes(CAT.encode("gb18030"))
    code, _, err = _in_locale(locale, *submit, "--file", str(bad_file))
    assert (code, err) == (2, "yiji: invalid input: text: the file is not UTF-8 text\n")
    ingest = ["--db", str(db), "host-ingest", "--instance", "i1", "--session", "s", "--expect-cursor", "-1"]
    code, out, err = _in_locale(locale, *ingest, stdin=b"\n" + CAT.encode("gb18030") + b"\n")
    assert (code, out) == (2, "") and "stdin line 2: the line is not UTF-8 text" in err
    argument = subprocess.run(
        [*PY, *(os.fsencode(a) for a in submit), CAT.encode("gb18030")],
        capture_output=True,
        env={**os.environ, **locale},
        timeout=120,
        check=False,
    )
    assert argument.returncode == 2
    assert argument.stderr == b"yiji: invalid input: argument 9: the argument is not UTF-8 text\n"
    assert not db.exists()


def test_deeply_nested_json_is_invalid_input(cli: Any, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(
        '{"session": "s", "role": "user", "text": "x", "cues": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    assert cli("event", "submit", "--input", str(deep)).code == 2
    archive = tmp_path / "deep-archive.json"
    archive.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    fresh = tmp_path / "fresh.db"
    result = run_cli("--db", str(fresh), "import", str(archive))
    assert result.code == 2 and "unexpected" not in result.err


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["event", "list", "--offset", "9223372036854775808"], "--offset"),
        (["event", "list", "--limit", "0"], "--limit"),
        (["event", "list", "--limit", "many"], "--limit"),
        (["resume", "--budget", "-5"], "--budget"),
        (["memory", "read", "m", "--offset", "99999999999999999999999"], "--offset"),
    ],
)
def test_integer_flags_are_bounded(cli: Any, args: list[str], flag: str) -> None:
    result = cli(*args)
    assert result.code == 2 and f"argument {flag}:" in result.err
    assert "unexpected" not in result.err and "99999999999999999999999" not in result.err
    as_json = cli("--json", *args)
    assert json.loads(as_json.err)["problems"][0]["field"] == flag.lstrip("-")


def test_control_characters_are_visible_in_plain_output_and_exact_in_json(cli: Any) -> None:
    hostile = "look\x1b]0;pwned\x07 \x1b[2Jhere\u202eevil\rover"
    assert cli("event", "submit", "--session", "s", "--role", "user", hostile).code == 0
    for args in (["event", "list"], ["recall", "look"]):
        plain = cli(*args).out
        assert "\x1b" not in plain and "\x07" not in plain and "\u202e" not in plain and "\r" not in plain
        assert "\\x1b]0;pwned\\x07" in plain
    event_id = cli("--json", "event", "list").json()["events"][0]["id"]
    shown = cli("event", "show", event_id).out
    assert "\x1b" not in shown and "\\u202e" in shown
    assert cli("--json", "event", "show", event_id).json()["text"] == hostile


def test_stdin_loses_exactly_one_trailing_newline_and_files_none(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    base = ["--db", db, "--json", "event", "submit", "--session", "s", "--role", "user"]
    assert run_cli(*base, input="one line\n").json()["event"]["text"] == "one line"
    assert run_cli(*base, input="two newlines\n\n").json()["event"]["text"] == "two newlines\n"
    assert run_cli(*base, "--file", "-", input="crlf\r\n").json()["event"]["text"] == "crlf"
    file = tmp_path / "t.txt"
    file.write_text("from a file\n", encoding="utf-8")
    assert run_cli(*base, "--file", str(file)).json()["event"]["text"] == "from a file\n"


def test_misspelled_flag_is_named_with_a_suggestion_and_the_commands_usage(cli: Any) -> None:
    result = cli("event", "submit", "--sesion", "s", "--role", "user", f"{SECRET}")
    assert result.code == 2
    assert "unrecognized flag --sesion (did you mean --session?)" in result.err
    assert "usage: yiji event submit" in result.err
    assert SECRET not in result.err
    words = cli("event", "submit", "--session", "s", "--role", "user", "two", SECRET)
    assert words.code == 2 and "1 unexpected argument" in words.err and SECRET not in words.err


def test_read_only_commands_on_a_missing_database_create_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "typo"
    db = str(folder / "x.db")
    for args in (["event", "list"], ["recall", "x"], ["resume"], ["doctor"], ["memory", "list"]):
        result = run_cli("--db", db, *args)
        assert result.code == 2 and "no database exists" in result.err, (args, result.err)
    assert not folder.exists()
    assert run_cli("--db", db, "persona", "show").code == 0
    assert Path(db).exists()


def test_refused_and_read_only_commands_create_no_database(tmp_path: Path) -> None:
    folder = tmp_path / "new"
    db = str(folder / "x.db")
    dry = run_cli("--db", db, "delete", "--event", "ev_1", "--dry-run")
    assert dry.code == 2 and "no database exists" in dry.err
    ingest = ["--db", db, "host-ingest", "--instance", "i1", "--session", "s"]
    probe = run_cli(*ingest, input="")
    assert (probe.code, probe.out) == (0, '{"ok": true, "cursor": -1}\n')

    def line(seq: int, session: str = "s", event_id: str | None = None) -> str:
        return (
            json.dumps(
                {
                    "event_id": event_id or f"e{seq}",
                    "message_id": f"m{seq}",
                    "session": session,
                    "seq": seq,
                    "role": "user",
                    "text": SECRET,
                    "occurred_at": "2026-11-30T10:00:00+08:00",
                }
            )
            + "\n"
        )

    refused = {
        "session mismatch": (["--expect-cursor", "-1"], line(0, session="other"), "lines[0].session"),
        "duplicate id": (["--expect-cursor", "-1"], line(0) + line(1, event_id="e0"), "lines[1].event_id"),
        "non-increasing seq": (["--expect-cursor", "-1"], line(1) + line(1), "lines[1].seq"),
        "missing --expect-cursor": ([], line(0), "expect_cursor"),
    }
    for name, (flags, stdin, field) in refused.items():
        result = run_cli(*ingest, *flags, input=stdin)
        assert result.code == 2 and field in result.err and SECRET not in result.err, name
    future = tmp_path / "future.jsonl"
    header = {
        "format": "yiji-archive",
        "format_version": 99,
        "exported_at": "2026-01-01T00:00:00Z",
        "counts": {},
    }
    future.write_text(json.dumps(header) + "\n", encoding="utf-8")
    future_json = tmp_path / "future.json"
    future_json.write_text(json.dumps({**header, "tables": {}}), encoding="utf-8")
    future_db = foreign_database(tmp_path / "future.db", 99)
    for command, source in [
        ("import", future),
        ("import", future_json),
        ("import", future_db),
        ("restore", future_db),
    ]:
        result = run_cli("--db", db, command, str(source))
        assert result.code == 2, (command, source, result.err)
        assert "newer than this yiji supports" in result.err and "Nothing was written" in result.err
    absent = run_cli("--db", db, "import", str(tmp_path / "absent.json"))
    assert absent.code == 2 and "no readable file" in absent.err
    # an archive of this format whose rows break a rule is refused after the database was opened
    broken = tmp_path / "broken.json"
    tables = {"events": [{"id": "e1", "text": SECRET}]}
    broken.write_text(json.dumps({**header, "format_version": 1, "tables": tables}), encoding="utf-8")
    rejected = run_cli("--db", db, "import", str(broken))
    assert rejected.code == 2 and SECRET not in rejected.err, rejected.err
    assert not folder.exists()


def test_exit_codes_are_the_documented_table(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    text = tmp_path / "not-a-db.bak"
    text.write_text("just words", encoding="utf-8")
    assert run_cli("--db", db, "restore", str(text)).code == 2
    assert run_cli("--db", db, "event", "show", "ev_missing").code == 2
    _stored(Path(db))
    assert run_cli("--db", db, "export", str(tmp_path / "e.json")).code == 0
    assert run_cli("--db", db, "export", str(tmp_path / "e.json")).code == 3
    table = (Path(__file__).parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    for line in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |"):
        assert line in table


def test_future_dated_event_warns_but_is_stored(tmp_path: Path) -> None:
    db = str(tmp_path / "a.db")
    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    soon = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    args = ["--db", db, "event", "submit", "--session", "s", "--role", "user"]
    ahead = run_cli(*args, "--occurred-at", later, "later")
    assert ahead.code == 0 and "warning: occurred_at is" in ahead.err and "future" in ahead.err
    as_json = run_cli(*args, "--json", "--occurred-at", later, "--id", "e2", "later too")
    assert "future" in as_json.json()["warnings"][0]
    near = run_cli(*args, "--occurred-at", soon, "soon")
    assert near.code == 0 and "warning" not in near.err


def test_extraction_failure_is_explained_in_plain_output(tmp_path: Path, fake_provider: FakeProvider) -> None:
    fake_provider.script_chat(server_error(), server_error(), server_error(), server_error())
    env = {
        "YIJI_EXTRACTION_BASE_URL": fake_provider.base_url,
        "YIJI_EXTRACTION_MODEL": "fake",
        "YIJI_CONFIG": str(tmp_path / "c.toml"),
    }
    (tmp_path / "c.toml").write_text("", encoding="utf-8")
    result: CliResult = run_cli(
        "--db",
        str(tmp_path / "a.db"),
        "event",
        "submit",
        "--session",
        "s",
        "--role",
        "user",
        "我住在苏州",
        env=env,
    )
    assert result.code == 0, result.err
    assert "stored:" in result.out and "extraction: pending" in result.out and "reason:" in result.out
    assert "extraction retry" in result.out


# -- a newcomer's first steps ---------------------------------------------------------------------


@pytest.mark.parametrize("today", [datetime(2024, 2, 1, tzinfo=UTC), datetime(2031, 9, 9, tzinfo=UTC)])
def test_demo_is_relative_to_today_and_says_what_next(tmp_path: Path, today: datetime) -> None:
    import argparse
    import io

    from yiji.cli.context import Context
    from yiji.demo import run_demo
    from yiji.timeutil import FixedClock

    db = tmp_path / "demo.db"
    args = argparse.Namespace(db=str(db), json=False, persona=None, project=None, config=None)

    def run(clock_at: datetime) -> str:
        ctx = Context(args)
        ctx._service = make_service(db, clock=FixedClock(clock_at, timedelta(0)))
        out = io.StringIO()
        try:
            run_demo(ctx, out)
        finally:
            ctx.close()
        return out.getvalue()

    first = run(today)
    assert "now:        The user moved to Shanghai" in first
    assert "用户住在杭州" in first.split("where does the user live?")[1].splitlines()[2]
    assert "(nothing: no evidence)" not in first
    assert "try next" in first and "recall" in first and "docs/clients.md" in first and " ui " in first
    assert "--project demo demo --remove" in first
    again = run(today + timedelta(days=400))  # a later day reuses the stored dates: no conflict
    assert "[already stored]" in again and "[new]" not in again


def test_derive_help_documents_the_input_and_errors_name_the_flag(cli: Any, tmp_path: Path) -> None:
    from yiji.cli import build_parser

    memory = build_parser()._subparsers._group_actions[0].choices["memory"]  # type: ignore[union-attr]
    derive = memory._subparsers._group_actions[0].choices["derive"]
    text = derive.format_help()
    for word in ("text", "quote", "kind", "basis", "confidence", "valence", "arousal", "gist", "related"):
        assert word in text
    assert "valid_at" in text and "emotion" in text and "examples/memories.json" in text
    assert "--event EVENT_ID" in derive.format_usage() and "[--event" not in derive.format_usage()
    example = Path(__file__).parent.parent / "examples" / "memories.json"
    assert (
        cli(
            "event",
            "submit",
            "--id",
            "e1",
            "--session",
            "s",
            "--role",
            "user",
            "我住在杭州，每天早上沿着西湖跑步",
        ).code
        == 0
    )
    assert cli("memory", "derive", "--event", "e1", "--input", str(example)).code == 0
    missing = cli("memory", "derive", "--input", str(example))
    assert missing.code == 2 and "--event" in missing.err
    bad = cli("memory", "derive", "--event", "no such id!", "--input", str(example))
    assert bad.code == 2 and "--event:" in bad.err and "event_id" not in bad.err


def test_chinese_readme_is_level_with_the_english_one() -> None:
    root = Path(__file__).parent.parent
    english = (root / "README.md").read_text(encoding="utf-8")
    chinese = (root / "README.zh-CN.md").read_text(encoding="utf-8")
    assert english.count("\n## ") == chinese.count("\n## ")
    for needle in (
        "python3 -m pip install --target .uv uv && .uv/bin/uv run --no-dev yiji demo",
        ".uv/bin/uv run pytest",
        "yiji demo --remove",
        "uv tool install .",
        "memory derive",
        "claude mcp add yiji -- /path/to/yiji/.uv/bin/uv --directory /path/to/yiji run --no-dev yiji serve "
        "--db /path/to/yiji.db",
        "docs/install.",
        "docs/clients.",
        "docs/README.md",
        "docs/memories.",
    ):
        assert needle in english and needle in chinese, needle
