"""A text's own dictionary words cut it as rjieba's whole dictionary does (:mod:`yiji.domain.jieba_words`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.domain import jieba_words, segment

ROOT = Path(__file__).resolve().parents[1]
RUN = re.compile(f"[{segment.CJK_CHARACTERS}]+")


def _whole(run: str) -> list[tuple[str, int, int]]:
    cut: list[tuple[str, int, int]] = segment.jieba().tokenize(run, mode="search")
    return cut


def _own(run: str) -> list[tuple[str, int, int]]:
    cut: list[tuple[str, int, int]] = jieba_words.cutter((run,)).tokenize(run, mode="search")
    return cut


def _chinese_runs() -> list[str]:
    """Every CJK run of the project's Chinese text: its Chinese docs and its Chinese data files."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.zh-CN.md"))]
    texts.append((ROOT / "README.zh-CN.md").read_text(encoding="utf-8"))
    data = ROOT / "src" / "yiji" / "domain" / "data"
    loaded = [json.loads(path.read_text(encoding="utf-8")) for path in data.glob("*.json")]
    texts += [json.dumps(value, ensure_ascii=False) for value in loaded]
    texts.append((ROOT / "src" / "yiji" / "probe_data" / "conversation_zh.json").read_text(encoding="utf-8"))
    return [run for text in texts for run in RUN.findall(text)]


def test_the_own_words_cut_real_chinese_text_as_the_whole_dictionary_does() -> None:
    runs = _chinese_runs()
    assert len(runs) > 2000
    assert sum(map(len, runs)) > 15_000
    differing = [run for run in runs if _own(run) != _whole(run)]
    assert differing == []


def _alphabet() -> str:
    """Every 20th first character of the dictionary's words, and kana and Hangul (words of no group)."""
    firsts = sorted(jieba_words.dictionary().firsts)
    return "".join(chr(c) for c in firsts[::20]) + "のはをにがでとアイウエオ한국어사람"


_ALPHABET = _alphabet()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, min_size=1, max_size=40))
def test_the_own_words_cut_random_runs_as_the_whole_dictionary_does(text: str) -> None:
    for run in RUN.findall(text):
        assert _own(run) == _whole(run)


def test_the_padding_word_is_never_part_of_a_run() -> None:
    assert RUN.search(jieba_words.PAD) is None
    words = jieba_words.dictionary()
    assert words.total > sum(words.words_in(["我们在杭州研究生命起源"]).values()) > 0
    assert "杭州" in words.group("杭")
    assert words.group("A") == {}


def test_a_process_cuts_short_text_without_building_the_whole_dictionary() -> None:
    """A recall's question, then more text than the budget: the same tokens either way; rjieba's package
    (its whole dictionary) is imported only past the budget."""
    code = (
        "import sys\n"
        "from yiji.domain import segment\n"
        "a = segment.tokens('我们团队在杭州弄丢了古老的砚台')\n"
        "q = segment.read_query('我上个月在杭州买了什么')\n"
        "print('rjieba' in sys.modules)\n"
        "segment.tokens('研究生命起源' * (segment.OWN_WORDS_BUDGET // 6 + 1))\n"
        "print('rjieba' in sys.modules)\n"
        "print(segment.tokens('我们团队在杭州弄丢了古老的砚台') == a)\n"
        "print(segment.read_query('我上个月在杭州买了什么') == q)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = run.stdout.split()
    assert out == ["False", "True", "True", "True"]


def test_a_batch_past_the_budget_builds_the_whole_dictionary_before_cutting() -> None:
    code = (
        "import sys\n"
        "from yiji.domain import segment\n"
        "segment.expect(['I moved to Lisbon'] * 10_000)\n"
        "print('rjieba' in sys.modules)\n"
        "segment.expect(['我们团队在杭州'])\n"
        "print('rjieba' in sys.modules)\n"
        "segment.expect(['研究生命起源'] * (segment.OWN_WORDS_BUDGET // 6 + 1))\n"
        "print('rjieba' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "False", "True"]


def test_another_rjieba_release_cuts_with_its_own_dictionary() -> None:
    """The data holds one rjieba release's dictionary: with another, the whole dictionary cuts."""
    assert jieba_words.usable(sorted(jieba_words.RJIEBA_VERSIONS)[0])
    assert not jieba_words.usable("0.2.99")
    assert segment.installed_version("rjieba") in jieba_words.RJIEBA_VERSIONS
