"""The docs hold together: every relative link of the READMEs and of docs/ reaches a file (and a heading,
when it names one), docs/README.md indexes every page of docs/, docs/configuration.md lists every key the
configuration accepts, and the current schema and archive versions the docs state are the code's."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from yiji.config import Config

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "README.zh-CN.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCED.sub("", page.read_text(encoding="utf-8"))
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    text = FENCED.sub("", page.read_text(encoding="utf-8"))
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]


def broken_links(pages: list[Path]) -> list[str]:
    broken = []
    for page in pages:
        for target in links(page):
            path, _, name = target.partition("#")
            dest = (page.parent / path) if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target}: no such file")
            elif name and dest.suffix == ".md" and name not in anchors(dest):
                broken.append(f"{page.name}: {target}: no such heading")
    return broken


def test_every_link_reaches_its_file_and_heading() -> None:
    assert broken_links(PAGES) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A `yiji` command\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md#a-yiji-command) [here](#page) [gone](missing.md) [nowhere](other.md#nope)\n"
        "```text\n[not a link](skipped.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links([page]) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#nope: no such heading",
    ]
    assert anchor("Semantic recall (optional, offline)") == "semantic-recall-optional-offline"


def test_the_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    listed = {t.partition("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", index)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages - listed == set()


def _keys(section: type, prefix: str = "") -> list[str]:
    keys = []
    hints = typing.get_type_hints(section)
    for field in dataclasses.fields(section):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            keys += _keys(typing.cast(type, hint), f"{prefix}{field.name}.")
        else:
            keys.append(f"{prefix}{field.name}")
    return keys


def test_the_configuration_page_lists_every_key() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = set()
    section = ""
    for line in page.splitlines():
        if m := re.match(r"^### `\[(\w+)\]`", line):
            section = m.group(1) + "."
        elif line.startswith("### Top level"):
            section = ""
        elif line.startswith("### `[probe]`"):
            section = ""
        elif line.startswith("| `"):
            names = re.findall(r"`([\w.]+)`", line.split("|")[1])
            documented |= {name if "." in name else section + name for name in names}
    keys = set(_keys(Config))
    assert len(keys) > 40
    assert keys - documented == set()


def test_the_docs_state_the_current_schema_and_archive_versions() -> None:
    from yiji.domain.archive_format import FORMAT_VERSION
    from yiji.schema import SCHEMA_VERSION

    archive = (ROOT / "docs" / "archive-format.md").read_text(encoding="utf-8")
    assert re.findall(r"The current version is \*\*(\d+)\*\*", archive) == [str(FORMAT_VERSION)]
    table = [int(n) for n in re.findall(r"^\| (\d+) +\| ", archive, re.M)]
    assert table == list(range(1, FORMAT_VERSION + 1)), "one row per format version, the newest last"
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert re.findall(r"migrations run 0→1→…→(\d+)", operations) == [str(SCHEMA_VERSION)]


# The docs' commands as printed after the Quickstart, which leaves uv at .uv/bin/uv in the checkout and
# nothing on PATH: a bare ``uv`` or ``uvx`` at the start of a command is not found, and ``uv run`` without
# ``--no-dev`` pulls in the development tools. No exceptions: a page about a uv of the user's own says so
# in its prose, where the command is written inline. ``yiji bench`` is the other way round: the benchmarks
# are a package of the development group, so ``uv run --no-dev yiji bench`` would not find them.
BARE_UV = re.compile(
    r"(?:^|[\s;&|(`])(?:uv\s+(?:run|sync|tool|build|lock|pip|venv|add|remove|python|--[\w-]+)\b|uvx\s)"
    r"|\bcommand\"?\s*[:=]\s*\"uvx?\""
)
UV_RUN_YIJI = re.compile(r"uv(?:\s+--directory\s+\S+)?\s+run\b(?P<options>(?:\s+-[-\w]+)*)\s+yiji\b")
JSON_RUN_YIJI = re.compile(r'"run",(?P<options>(?:\s*"-[-\w]+",)*)\s*"yiji"')


def fenced_lines(text: str) -> list[str]:
    """Every line inside a fenced block, a comment after it (`` # ...``) taken off, blank lines out."""
    lines = []
    for block in FENCED.findall(text):
        for raw in block.splitlines()[1:-1]:
            line = re.sub(r"(?:^|\s+)#\s.*$", "", raw).strip()
            if line:
                lines.append(line)
    return lines


def uv_faults(page: str, text: str) -> list[str]:
    faults = []
    for line in fenced_lines(text):
        if BARE_UV.search(line):
            faults.append(f"{page}: a bare uv: {line}")
        for m in [*UV_RUN_YIJI.finditer(line), *JSON_RUN_YIJI.finditer(line)]:
            bench = re.match(r"\s+bench\b", line[m.end() :]) is not None
            if bench and "--no-dev" in m["options"]:
                faults.append(f"{page}: uv run --no-dev yiji bench: {line}")
            elif not bench and "--no-dev" not in m["options"]:
                faults.append(f"{page}: uv run yiji without --no-dev: {line}")
    return faults


def test_the_docs_commands_run_after_the_quickstart() -> None:
    assert [f for page in PAGES for f in uv_faults(page.name, page.read_text(encoding="utf-8"))] == []


def test_a_bare_uv_or_a_dev_run_is_found() -> None:
    text = (
        "```sh\nuv run yiji recall x\n.uv/bin/uv run --no-dev yiji doctor   # uv run is fine in a comment\n"
        "X=$(uv run --no-dev yiji memory list --ids)\nuvx --from dist/yiji.whl yiji demo\n"
        ".uv/bin/uv run yiji ui\n.uv/bin/uv run yiji bench ingest\n.uv/bin/uv run --no-dev yiji bench wal\n"
        "```\n\n```json\n"
        '{"command": "uv", "args": ["--directory", "/p", "run", "yiji", "serve"]}\n```\n'
        "```text\n/path/to/yiji/.uv/bin/uv --directory /path/to/yiji run --no-dev yiji serve\n```\n"
    )
    assert [f.split(": ", 2)[1] for f in uv_faults("X.md", text)] == [
        "a bare uv",
        "uv run yiji without --no-dev",
        "a bare uv",
        "a bare uv",
        "uv run yiji without --no-dev",
        "uv run --no-dev yiji bench",
        "a bare uv",
        "uv run yiji without --no-dev",
    ]


# The Chinese pages and their English twins. A pair has the same ``##``/``###`` headings (counted) and the
# same commands: the lines of their fenced blocks are equal once comments are taken off (a comment may be
# written in Chinese); text outside the blocks is free. README.zh-CN is a shorter page of its own and is
# not paired.
TWINS = sorted((ROOT / "docs").glob("*.zh-CN.md"))
PAIRED = ("install", "memories", "recall", "clients", "review", "host-capture")


def headings(text: str) -> list[str]:
    return re.findall(r"^(#{2,3}) ", FENCED.sub("", text), re.M)


def test_the_chinese_pages_are_the_ones_a_chinese_user_needs_first() -> None:
    assert sorted(p.name.removesuffix(".zh-CN.md") for p in TWINS) == sorted(PAIRED)


def test_each_chinese_page_keeps_in_step_with_its_english_twin() -> None:
    for zh in TWINS:
        en = zh.with_name(zh.name.replace(".zh-CN.md", ".md"))
        zh_text, en_text = zh.read_text(encoding="utf-8"), en.read_text(encoding="utf-8")
        assert f"[中文]({zh.name})" in en_text.split("\n## ")[0], en.name
        assert f"({en.name})" in zh_text.split("\n## ")[0], zh.name
        assert headings(zh_text) == headings(en_text), zh.name
        assert fenced_lines(zh_text) == fenced_lines(en_text), zh.name
    readme = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert all(f"(docs/{zh.name})" in readme for zh in TWINS)
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    assert all(f"({zh.name})" in index for zh in TWINS)
