"""What a command loads at start-up: `yiji --help` builds the whole parser from light modules only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from yiji.db import Database
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest
from yiji.service import MemoryService

_PROBE = """
import contextlib, io, json, sys
from yiji.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

# Heavy or unrelated to building a parser: validation models, the service and store, SQLite, HTTP,
# progress bars, the MCP SDK, the segmenter and stemmers, benchmarks.
_NOT_FOR_HELP = [
    "pydantic",
    "pydantic_core",
    "httpx",
    "tqdm",
    "mcp",
    "rjieba",
    "snowballstemmer",
    "Stemmer",
    "sqlite3",
    "platformdirs",
    "yiji.service",
    "yiji.store",
    "yiji.db",
    "yiji.models",
    "yiji.config",
    "yiji.providers",
    "yiji.domain",
    "yiji.mcp_server",
    "importlib.metadata",  # the commands other packages add are found without it
]


def _heavy_for_help(modules: set[str]) -> list[str]:
    """What of :data:`_NOT_FOR_HELP` is loaded, and any benchmark module but those that register
    ``yiji bench`` (``yiji_bench.cli``, found through its entry point)."""
    heavy = [name for name in _NOT_FOR_HELP if _loaded(modules, name)]
    return heavy + sorted(
        m for m in modules if m.startswith("yiji_bench.") and not m.startswith("yiji_bench.cli")
    )


def _modules(*argv: str, cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True, cwd=cwd
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, done.stderr
    return set(result["modules"])


def _loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_help_imports_only_the_parser(tmp_path: Path) -> None:
    modules = _modules("--help", cwd=tmp_path)
    assert "yiji.cli" in modules
    heavy = _heavy_for_help(modules)
    assert heavy == [], f"`yiji --help` imports {heavy}"


def test_every_command_help_stays_light(tmp_path: Path) -> None:
    for argv in (["recall", "--help"], ["bench", "recall", "--help"], ["event", "submit", "--help"]):
        modules = _modules(*argv, cwd=tmp_path)
        heavy = _heavy_for_help(modules)
        assert heavy == [], f"`yiji {' '.join(argv)}` imports {heavy}"


def test_an_english_recall_loads_neither_http_nor_jieba(tmp_path: Path) -> None:
    db = tmp_path / "y.db"
    Database(db).close()  # recall only reads: the database must exist
    modules = _modules("--db", str(db), "recall", "vintage camera", cwd=tmp_path)
    assert _loaded(modules, "yiji.service")  # the command did run
    unexpected = [n for n in ("httpx", "tqdm", "mcp", "rjieba", "snowballstemmer") if _loaded(modules, n)]
    assert unexpected == []


_OUTPUT_PROBE = """
import contextlib, io, json, sys
from yiji.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""

# What a recall (the lexical default) does without: validation models, HTTP, the MCP SDK, progress bars,
# numpy, the service's composition (providers, the other use cases) and the other commands' modules.
_NOT_FOR_RECALL = [
    "pydantic",
    "pydantic_core",
    "httpx",
    "mcp",
    "tqdm",
    "numpy",
    "importlib.metadata",
    "yiji.models",
    "yiji.providers",
    "yiji.service.compose",
    "yiji.service.vectors",
    "yiji.service.capture",
    "yiji_bench",
    "yiji.cli.archive",
    "yiji_bench.cli",
    "yiji.cli.capture",
    "yiji.cli.ops",
]


@pytest.mark.parametrize("options", [[], ["--json"], ["--history", "--limit", "3"]])
def test_recall_runs_without_pydantic_http_mcp_or_numpy(
    service: MemoryService, db_path: Path, tmp_path: Path, options: list[str]
) -> None:
    """A recall prints memories and raw events (Chinese and English) with only what it needs loaded."""
    texts = ["我住在杭州，喜欢西湖。", "We hiked near 杭州 with a vintage camera.", "杭州的天气很好。"]
    for n, text in enumerate(texts):
        event = {"id": f"e{n}", "session": "s", "role": "user", "text": text}
        service.event_submit(parse(EventIn, {**event, "occurred_at": f"2026-0{n + 1}-01T00:00:00Z"}))
    memory = {"text": "用户住在杭州", "quote": "我住在杭州", "kind": "episode", "basis": "user_statement"}
    service.memory_derive(parse(DeriveRequest, {"event_id": "e0", "memories": [memory]}))
    argv = ["--db", str(db_path), "recall", "杭州 camera", *options]
    done = subprocess.run(
        [sys.executable, "-c", _OUTPUT_PROBE, *argv], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, done.stderr
    if options == ["--json"]:
        types = [item["type"] for item in json.loads(result["out"])["items"]]
    else:
        types = ["raw_event" if "[raw event" in line else "memory" for line in result["out"].splitlines()]
    assert "memory" in types and "raw_event" in types
    modules = set(result["modules"])
    assert _loaded(modules, "yiji.service.recall")
    # the Chinese query was cut with its own dictionary words; rjieba's whole dictionary is built only for
    # the tagger of the JSON result's topic cues (an old episode's presentation)
    assert _loaded(modules, "yiji.domain.jieba_words")
    assert _loaded(modules, "rjieba") == (options == ["--json"])
    heavy = [name for name in _NOT_FOR_RECALL if _loaded(modules, name)]
    assert heavy == [], f"`yiji recall` imports {heavy}"


def test_an_english_recall_builds_jiebas_dictionary_only_to_show_topic_cues(
    service: MemoryService, db_path: Path, tmp_path: Path
) -> None:
    """An old episode without a gist is shown as topic cues, cut by jieba's tagger: the JSON result carries
    them, the plain listing shows the stored record, so an English query loads no dictionary for it."""
    text = "我在杭州买了一台 vintage camera"
    event = {"id": "e0", "session": "s", "role": "user", "text": text, "occurred_at": "2020-01-01T00:00:00Z"}
    service.event_submit(parse(EventIn, event))
    memory = {"text": text, "quote": text, "kind": "episode", "basis": "user_statement"}
    service.memory_derive(parse(DeriveRequest, {"event_id": "e0", "memories": [memory]}))
    runs = {}
    for options in ([], ["--json"]):
        argv = ["--db", str(db_path), *options, "recall", "vintage camera"]
        probe = [sys.executable, "-c", _OUTPUT_PROBE, *argv]
        done = subprocess.run(probe, capture_output=True, text=True, check=True, cwd=tmp_path)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["code"] == 0, done.stderr
        runs[bool(options)] = (result["out"], set(result["modules"]))
    plain, plain_modules = runs[False]
    assert text in plain and "episode/user_statement" in plain
    assert not _loaded(plain_modules, "rjieba")
    found, json_modules = runs[True]
    assert json.loads(found)["items"][0]["presentation"]["mode"] == "topic_cues"
    assert _loaded(json_modules, "rjieba")


def test_resume_help_shows_the_models_default_budget() -> None:
    from yiji.cli import resume
    from yiji.models.resume import DEFAULT_BUDGET

    assert resume.DEFAULT_BUDGET == DEFAULT_BUDGET


def test_the_parsers_offset_limit_is_the_models() -> None:
    from yiji.cli import context
    from yiji.models.common import MAX_OFFSET

    assert context.MAX_OFFSET == MAX_OFFSET


_CAPTURE_PROBE = """
import contextlib, io, json, sys
sys.stdin = io.StringIO(sys.argv.pop())
from yiji.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def test_host_ingest_runs_without_pydantic_http_mcp_or_progress_bars(tmp_path: Path) -> None:
    """A host runs `yiji host-ingest` at every compaction: it checks plainly valid input without pydantic
    and opens the database without the rest of the service."""
    line = {
        "event_id": "dsh:i:s:0",
        "message_id": "m0",
        "session": "s",
        "seq": 0,
        "role": "user",
        "text": "我在杭州买了一台旧相机 and a tripod",
        "occurred_at": "2026-11-30T10:00:00+08:00",
    }
    argv = ["--db", str(tmp_path / "y.db"), "host-ingest", "--instance", "i", "--session", "s"]
    done = subprocess.run(
        [sys.executable, "-c", _CAPTURE_PROBE, *argv, "--expect-cursor", "-1", json.dumps(line) + "\n"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["code"], json.loads(result["out"])) == (0, {"ok": True, "cursor": 0}), done.stderr
    modules = set(result["modules"])
    # the Chinese text was segmented for the index, with its own dictionary words (a short capture)
    assert _loaded(modules, "yiji.domain.jieba_words") and not _loaded(modules, "rjieba")
    heavy = ["pydantic", "pydantic_core", "httpx", "mcp", "tqdm", "numpy", "snowballstemmer", "yiji.models"]
    assert [n for n in heavy if _loaded(modules, n)] == []
    assert not _loaded(modules, "yiji.service.compose") and not _loaded(modules, "yiji.providers")


def test_each_command_module_names_the_commands_it_registers() -> None:
    import argparse

    from yiji.cli import COMMAND_HOMES, COMMAND_MODULES, command_module
    from yiji.cli.context import add_common

    seen: list[str] = []
    for name in COMMAND_MODULES:
        module = command_module(name)
        common = argparse.ArgumentParser(add_help=False)
        add_common(common, suppress=True)
        sub = argparse.ArgumentParser().add_subparsers(dest="command")
        module.register(sub, common)
        assert tuple(sub.choices) == module.COMMANDS, module.__name__
        assert module.COMMANDS == tuple(c for c, home in COMMAND_HOMES.items() if home == name), name
        seen += module.COMMANDS
    assert len(seen) == len(set(seen)) == len(COMMAND_HOMES)


@pytest.mark.parametrize(
    "argv",
    [
        ["host-ingest", "--instance", "i", "--session", "s", "--expect-cursor", "-1"],
        ["--db", "x.db", "--json", "recall", "杭州", "--limit", "3"],
        ["--persona=p", "memory", "correct", "mem_1", "--text", "s"],
        ["--config", "c.toml", "event", "list", "--session", "s"],
        ["bench", "startup", "--runs", "2"],
        ["export", "out.jsonl"],
    ],
)
def test_the_named_commands_parser_reads_a_command_line_as_the_whole_parser_does(argv: list[str]) -> None:
    from yiji.cli import build_parser, command_name

    assert command_name(argv) == next(
        a for a in argv if not a.startswith("-") and a not in {"x.db", "c.toml"}
    )
    narrow = build_parser(command_name(argv)).parse_args(argv)
    whole = build_parser().parse_args(argv)
    assert {k: v for k, v in vars(narrow).items() if k != "func"} == {
        k: v for k, v in vars(whole).items() if k != "func"
    }
    assert narrow.func is whole.func


def test_unusual_command_lines_get_the_whole_parser() -> None:
    from yiji.cli import command_name

    assert command_name(["--help"]) is None
    assert command_name(["--version"]) is None
    assert command_name(["--db"]) is None
    assert command_name(["-x", "recall"]) is None
    assert command_name(["reca11", "x"]) == "reca11"  # unknown: build_parser registers every command
