"""What yiji says: an error's code appears once (never again as prose in its message), counts take the right
number (``1 memory``, ``2 memories``), and ``doctor --scan-for`` names what it scanned for without printing a
phrase that may be a secret. Checked on the error tree itself, on every message literal in ``src/yiji`` and
end to end over the CLI and the MCP server."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

import yiji.errors
from yiji.domain.wording import counted
from yiji.errors import ArchiveRejected, InvalidInput, NotFound, YijiError

from .inprocess import run_cli
from .mcp_helpers import error_text, memory_client

SRC = Path(yiji.errors.__file__).resolve().parent
ERROR_CLASSES = {
    name: cls
    for name, cls in vars(yiji.errors).items()
    if inspect.isclass(cls) and issubclass(cls, YijiError)
}


def _repeats_code(message: str, cls: type[YijiError]) -> bool:
    """Whether ``message`` opens with its class's code, as written or in words ("invalid input")."""
    openings = {cls.code, cls.code.replace("_", " "), *([cls.heading] if cls.heading else [])}
    head = message.strip().lower()
    return any(head.startswith(opening.lower()) for opening in openings)


def _sample(cls: type[YijiError]) -> YijiError:
    if issubclass(cls, NotFound):
        return cls("memory")
    if issubclass(cls, InvalidInput):
        return cls("confirm", "must be true to delete")
    if issubclass(cls, ArchiveRejected):
        return cls([("memories[3].quote", "quote_not_in_source")])
    return cls("the operation failed")


def test_the_error_tree_is_all_there() -> None:
    assert set(ERROR_CLASSES) == set(yiji.errors.__all__) - {"restore_advice"}


@pytest.mark.parametrize("name", sorted(ERROR_CLASSES))
def test_no_error_message_repeats_its_code(name: str) -> None:
    err = _sample(ERROR_CLASSES[name])
    for text in (str(err), err.message, str(err.to_dict()["message"])):
        assert not _repeats_code(text, type(err)), text
    assert err.to_dict()["error"] == err.code


def _raised_messages() -> list[tuple[str, int, type[YijiError], str]]:
    """Every literal opening of a message passed to an error class anywhere in ``src/yiji``."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
                continue
            cls = ERROR_CLASSES.get(node.func.id)
            first = node.args[0]
            if cls is None or issubclass(cls, InvalidInput):  # InvalidInput's first argument is a field
                continue
            if isinstance(first, ast.JoinedStr) and first.values:
                first = first.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((str(path.relative_to(SRC)), node.lineno, cls, first.value))
    return found


def test_no_message_written_in_the_code_repeats_its_code() -> None:
    messages = _raised_messages()
    assert len(messages) > 20  # the scan sees the package's raise sites
    offenders = [(where, line, text) for where, line, cls, text in messages if _repeats_code(text, cls)]
    assert offenders == []


def test_invalid_input_is_said_once_on_the_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "w.db")
    plain = run_cli("--db", db, "event", "submit", "--role", "user", "你好")  # no --session
    assert plain.code == 2
    assert plain.err == "yiji: invalid input: --session: is required\n"
    as_json = json.loads(run_cli("--db", db, "--json", "event", "submit", "--role", "user", "你好").err)
    assert as_json["error"] == "invalid_input" and as_json["message"] == "--session: is required"
    assert not Path(db).exists()  # refused before the database is opened
    assert run_cli("--db", db, "event", "submit", "--role", "user", "--session", "s", "你好").code == 0
    missing = run_cli("--db", db, "memory", "read", "mem_missing")
    assert missing.code == 2
    assert missing.err.strip() == "yiji: not found: no memory with that id in this scope"
    as_json = run_cli("--db", db, "--json", "memory", "read", "mem_missing")
    error = json.loads(as_json.err)
    assert error["error"] == "not_found" and error["message"] == "no memory with that id in this scope"
    bad_flag = run_cli("--db", db, "--json", "recall", "x", "--limit", "many")
    error = json.loads(bad_flag.err)
    assert bad_flag.code == 2 and error["error"] == "invalid_input"
    assert not _repeats_code(error["message"], InvalidInput), error


@pytest.mark.anyio
async def test_invalid_input_is_said_once_over_mcp(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        refused = error_text(await client.call_tool("memory_delete", {"event_id": "e1"}))
        missing = error_text(await client.call_tool("memory_read", {"memory_id": "mem_missing"}))
    assert refused.startswith("invalid_input: confirm: "), refused
    assert "invalid input" not in refused
    assert missing == "not_found: no memory with that id in this scope"


@pytest.mark.parametrize(
    ("n", "noun", "plural", "expected"),
    [
        (0, "memory", "memories", "0 memories"),
        (1, "memory", "memories", "1 memory"),
        (2, "memory", "memories", "2 memories"),
        (1, "event", None, "1 event"),
        (3, "event", None, "3 events"),
        (1, "batch", "batches", "1 batch"),
    ],
)
def test_counted(n: int, noun: str, plural: str | None, expected: str) -> None:
    assert counted(n, noun, plural) == expected


def _delete_scenario(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "d.db")
    submitted = run_cli(
        "--db", db, "event", "submit", "--id", "e1", "--session", "s1", "--role", "user", "我住在杭州"
    )
    assert submitted.code == 0, submitted.err
    items = tmp_path / "m.json"
    items.write_text(
        json.dumps(
            [{"text": "用户住在杭州", "quote": "我住在杭州", "kind": "fact", "basis": "user_statement"}]
        ),
        encoding="utf-8",
    )
    derived = run_cli("--db", db, "--json", "memory", "derive", "--event", "e1", "--input", str(items))
    assert derived.code == 0, derived.err
    (memory,) = json.loads(derived.out)["memory_ids"]
    return db, memory


def test_counts_take_the_right_number(tmp_path: Path) -> None:
    db, memory = _delete_scenario(tmp_path)
    dry = run_cli("--db", db, "delete", "--memory", memory, "--dry-run")
    assert dry.code == 0, dry.err
    assert "would delete: 1 event, 1 memory, 0 relation edges, 0 vectors, " in dry.out, dry.out
    assert "(s)" not in dry.out and "(ies)" not in dry.out
    doctor = run_cli("--db", db, "doctor")
    assert "0 violations" in doctor.out and "0 extractions" in doctor.out, doctor.out


def test_listings_and_reindex_count_one_in_the_singular(tmp_path: Path) -> None:
    db, _ = _delete_scenario(tmp_path)
    listed = run_cli("--db", db, "event", "list")
    assert listed.code == 0 and listed.out.splitlines()[-1] == "1-1 of 1 event", listed.out
    memories = run_cli("--db", db, "memory", "list")
    assert memories.code == 0 and memories.out.splitlines()[-1] == "1-1 of 1 memory", memories.out
    reindexed = run_cli("--db", db, "reindex")
    assert reindexed.code == 0, reindexed.err
    assert reindexed.out.startswith("reindexed 0 events and 1 memory ("), reindexed.out  # event_fts: none


def test_the_ui_counts_take_the_right_number() -> None:
    from yiji.ui.i18n import MESSAGES, counts_of

    def said(lang: str, key: str, **numbers: int) -> str:
        return MESSAGES[lang][key].format(**counts_of(lang, **numbers))

    assert said("en", "delete.done", events=1, memories=2) == "Deleted 1 event and 2 memories."
    assert said("en", "delete.done", events=2, memories=1) == "Deleted 2 events and 1 memory."
    assert said("en", "delete.counts", relations=1, embeddings=0, cues=2, checkpoints=1) == (
        "Also removed: 1 relation edge, 0 vectors, 2 cues; 1 checkpoint invalidated."
    )
    assert said("zh", "delete.done", events=1, memories=2) == "已删除 1 个事件和 2 条记忆。"
    assert said("zh", "delete.counts", relations=1, embeddings=0, cues=2, checkpoints=1) == (
        "另外移除：1 条关联边、0 个向量、2 条线索；1 个检查点失效。"
    )
    for words in MESSAGES.values():
        assert not [k for k, v in words.items() if "(s)" in v or "(ies)" in v or "(y/ies)" in v]


def test_doctor_names_what_it_scanned_for(tmp_path: Path) -> None:
    db, memory = _delete_scenario(tmp_path)
    found = run_cli("--db", db, "doctor", "--scan-for", "杭州", "--scan-for", memory, "--scan-for", "e1")
    assert found.code == 1
    lines = [line for line in found.out.splitlines() if line.startswith("scanned ")]
    assert len(lines) == 3, found.out
    # A phrase (or an id the host chose) by its place and length only; an id yiji generated by itself.
    assert re.fullmatch(r"scanned term 1 \(2 characters, not shown\): found in .*memories.*", lines[0])
    assert lines[1].startswith(f"scanned id {memory}: found in ")
    assert lines[2].startswith("scanned term 3 (2 characters, not shown): found in ")
    assert "杭州" not in found.out + found.err
    report: dict[str, Any] = json.loads(
        run_cli("--db", db, "--json", "doctor", "--scan-for", "杭州", "--scan-for", memory).out
    )
    assert [s["label"] for s in report["scan"]] == ["term 1 (2 characters, not shown)", f"id {memory}"]
    assert [s["term"] for s in report["scan"]] == [1, 2]
    # the generated memory id is random hex and may itself hold "e1"
    problems = " ".join(report["problems"]).replace(memory, "<memory>")
    assert "e1" not in problems and "杭州" not in json.dumps(report, ensure_ascii=False)
