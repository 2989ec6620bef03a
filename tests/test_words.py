"""The word lists of the extraction rules (yiji/domain/data/<language>/<name>.txt): rows per file."""

from __future__ import annotations

from importlib import resources

import pytest

from yiji.domain import words

# (list, text, whether the list's pattern finds a match). Every list file has rows here.
ROWS = [
    ("feeling", "我今天好开心", True),
    ("feeling", "这只猫真可爱", False),  # 可爱 names no feeling
    ("feeling", "I'm so proud of you", True),
    ("feeling", "I proofread it", False),
    ("resolution", "以后我会先听你说", True),
    ("resolution", "I'll ask first next time", True),
    ("resolution", "你说得对", False),
    ("binding", "记得提醒我吃药", True),
    ("binding", "Please call me Sam", True),
    ("binding", "今天天气不错", False),
    ("past_state", "我以前住在北京", True),
    ("past_state", "I used to live in Leeds", True),
    ("past_state", "我住在北京", False),
    ("planned", "我打算明年去留学", True),
    ("planned", "I'm planning to move", True),
    ("planned", "我去年去了留学", False),
    ("likes", "我不吃香菜", True),
    ("likes", "I can't stand coriander", True),
    ("likes", "I unlikely go", False),
    ("temporary", "最近在学吉他", True),
    ("temporary", "I'm still in Leeds", True),
    ("temporary", "我住在杭州", False),
    ("habit", "一年就回去一两次", True),
    ("habit", "I always walk to work", True),
    ("habit", "昨天去了医院", False),
    ("now", "现在住在西湖边上", True),
    ("now", "I'm closer to him now", True),
    ("now", "I know him", False),
    ("look_back", "我之前总劝你早睡", True),
    ("look_back", "Last time I pushed you too hard", True),
    ("look_back", "明天见", False),
    ("reported", "我姐觉得没意思", True),
    ("reported", "My sister thinks it's boring", True),
    ("reported", "I painted it", False),
    ("naming", "它叫豆豆", True),
    ("naming", "His name is Biscuit", True),
    ("naming", "I renamed nothing", False),
    ("settled", "那就这么说定了", True),
    ("settled", "It's a deal", True),
    ("settled", "I dealt with it", False),
    ("conditional", "如果我住在北京的话", True),
    ("conditional", "What if I moved", True),
    ("conditional", "主要是太忙", False),  # 要是 inside 主要是 is no condition
    ("plan", "下个月要搬到深圳", True),
    ("plan", "I'll move next year", True),
    ("plan", "我搬到了深圳", False),
    ("plan", "I plan to move to Leeds", True),
    ("plan", "We're planning on a move", True),
    ("plan", "Customer subscribed to Pro plan on 2023-04-15.", False),  # the noun: a thing that is so
    ("plan", "I purchased Plan A", False),
    ("plan", "Let's plan a gentle routine", True),
    ("plan", "I switched to the family plan", False),
    ("plan", "我计划要搬到深圳", True),
    ("plan", "我们计划明年去日本", True),
    ("plan", "我订阅了专业版计划", False),
    ("plan", "我买了A计划", False),
    ("planned", "I plan on moving", True),
    ("planned", "I'm on the family plan", False),
    ("planned", "我正计划去留学", True),
    ("planned", "我的学习计划很满", False),
    ("third_party", "我妈妈住在成都", True),
    ("third_party", "My colleague lives in Leeds", True),
    ("third_party", "I live in Leeds", False),
    ("speaker_words", "我住在杭州", True),
    ("speaker_words", "They moved", True),
    ("speaker_words", "住在杭州", False),
]
SMALL_TALK = [
    ("晚安明天聊", True),
    ("谢谢你", True),
    ("你记性真好", True),
    ("goodnight", True),
    ("notreally", True),
    ("youretheBest".lower(), True),
    ("我不吃香菜", False),
    ("imovedtoleeds", False),
]
SETS = [
    ("function_words", "en", "the", True),
    ("function_words", "en", "leeds", False),
    ("value_frame", "en", "lives", True),
    ("value_frame", "en", "hangzhou", False),
    ("value_frame", "zh", "住", True),
    ("value_frame", "zh", "杭", False),
    ("text_frame", "en", "said", True),
    ("text_frame", "en", "doctor", False),
    ("text_frame", "zh", "说", True),
    ("text_frame", "zh", "医", False),
]


@pytest.mark.parametrize(("name", "text", "found"), ROWS)
def test_a_list_matches_its_rows(name: str, text: str, found: bool) -> None:
    assert bool(words.pattern(name).search(text)) is found


@pytest.mark.parametrize(("text", "found"), SMALL_TALK)
def test_small_talk_matches_folded_quotes(text: str, found: bool) -> None:
    from yiji.domain.cues import small_talk

    assert small_talk(text) is found


@pytest.mark.parametrize(("name", "language", "word", "found"), SETS)
def test_word_sets(name: str, language: str, word: str, found: bool) -> None:
    assert (word in words.word_set(name, language)) is found


def test_every_list_file_has_rows_and_loads() -> None:
    root = resources.files("yiji.domain") / "data"
    names = {p.name.removesuffix(".txt") for lang in words.LANGUAGES for p in (root / lang).iterdir()}
    tested = {row[0] for row in ROWS} | {row[0] for row in SETS} | {"small_talk"}
    assert names == tested
    for name in names:
        assert any(words.entries(name, lang) for lang in words.LANGUAGES)
        assert all(
            not e.startswith("#") and e == e.strip()
            for lang in words.LANGUAGES
            for e in words.entries(name, lang)
        )


def test_english_entries_match_whole_words_only() -> None:
    assert words.pattern("feeling").search("I miss her") and not words.pattern("feeling").search("dismissed")
    assert words.alternation("now", whole_words=False).endswith("now|currently|these days")
    assert words.entries("no_such_list", "zh") == () and words.alternation("no_such_list") == ""
