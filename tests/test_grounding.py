"""Grounding of extracted items: quote snapping, basis from the role, links, duplicates, dates, and
the extraction flow's refusals (credentials, oversized answers) against a loopback provider."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.config import Config, ExtractionConfig
from yiji.domain.cues import extraction_rules, growth_quote
from yiji.domain.fact_keys import vocabulary
from yiji.domain.grounding import (
    basis_for_role,
    clause_quote,
    clauses,
    clean_related,
    fragment_sentence,
    ground,
    mark_duplicates,
    snap_quote,
    speaker_text,
    steer_keys,
    text_supported,
    whole_sentence,
    with_subject,
)
from yiji.domain.relative_time import resolve_relative_time
from yiji.domain.sentences import sentence_of
from yiji.domain.validation import MemoryCandidate, Rule, SourceEvent, Violation, validate_batch
from yiji.models import EventIn, parse
from yiji.service import MemoryService, build_extractor
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import FakeProvider, chat_reply, huge

SOURCE = "我上个月从杭州搬到了上海，现在每天骑车上班。"


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("搬到了上海", "搬到了上海"),
        ("搬到了上海,现在", "搬到了上海，现在"),  # punctuation width
        ("搬到了 上海", "搬到了上海"),  # whitespace
        ("我上个月从杭州搬到上海", "我上个月从杭州搬到了上海"),  # one character left out
        ("我三月搬到了北京", None),  # too different
        ("上海", "上海"),
        ("  ", None),
    ],
)
def test_snap_quote(quote: str, expected: str | None) -> None:
    snapped = snap_quote(quote, SOURCE)
    assert snapped == expected
    if snapped is not None:
        assert snapped in SOURCE


def test_snap_quote_in_english_ignores_case_and_spacing() -> None:
    assert snap_quote("i moved to  shanghai", "Last year I moved to Shanghai.") == "I moved to Shanghai"


@pytest.mark.parametrize(
    ("basis", "role", "expected"),
    [
        ("assistant_expression", "user", "user_statement"),
        ("user_statement", "assistant", "assistant_expression"),
        ("inference", "user", "inference"),
        ("user_statement", "tool", "inference"),
        ("nonsense", "user", "user_statement"),
    ],
)
def test_basis_follows_the_role(basis: str, role: str, expected: str) -> None:
    assert basis_for_role(basis, role) == expected


@pytest.mark.parametrize(
    ("text", "quotes", "shown"),
    [
        (
            "我三月搬到了杭州，现在住在西湖边上。",
            ["我三月搬到了杭州", "现在住在西湖边上"],
            ["我三月搬到了杭州，", "现在住在西湖边上。"],
        ),
        ("你喜欢那里吗？嗯嗯", ["你喜欢那里吗", "嗯嗯"], ["你喜欢那里吗？", "嗯嗯"]),
        (
            "I moved. I ran 3.5 km, about 30,000 steps!",
            ["I moved", "I ran 3.5 km", "about 30,000 steps"],
            None,
        ),
        ("里面有句话：“人是为活着本身而活着的。”", ["里面有句话：“人是为活着本身而活着的"], None),
        ("  \n。！", [], []),
        ("", [], []),
    ],
)
def test_clauses(text: str, quotes: list[str], shown: list[str] | None) -> None:
    found = clauses(text)
    assert [text[c.start : c.end] for c in found] == quotes
    if shown is not None:
        assert [c.shown for c in found] == shown


def test_a_long_event_keeps_its_tail_in_the_last_clause() -> None:
    text = "，".join(f"第{i}句" for i in range(100))
    found = clauses(text)
    assert len(found) == 60
    assert text[found[-1].start : found[-1].end] == "，".join(f"第{i}句" for i in range(59, 100))


@pytest.mark.parametrize(
    ("numbers", "expected"),
    [
        ([1], "我三月搬到了杭州"),
        ([2, 1], "我三月搬到了杭州，现在住在西湖边上"),
        ([3], None),
        ([0], None),
        ([], None),
        ([True], None),
    ],
)
def test_clause_quote(numbers: list[int], expected: str | None) -> None:
    assert clause_quote("我三月搬到了杭州，现在住在西湖边上。", numbers) == expected


@pytest.mark.parametrize(
    ("text", "quote", "role", "supported"),
    [
        ("用户搬到了杭州", "我三月搬到了杭州", "user", True),
        ("用户住在杭州", "我三月搬到了杭州", "user", True),  # one word paraphrased
        ("用户在读《活着》", "快读完了", "user", False),  # the book is named elsewhere
        ("用户不吃香菜", "我不吃香菜", "user", True),
        ("The user can't stand coriander", "I can't stand coriander", "user", True),
        ("The user dislikes coriander", "I can't stand coriander", "user", False),  # short: no paraphrase
        ("The user cannot stand fresh coriander", "I can't stand fresh coriander", "user", True),
        (
            "用户和男朋友六月都没见面",
            "他天天加班，我们六月都没怎么见面",
            "user",
            False,
        ),  # 男朋友 from elsewhere
        ("用户住在上海", "我三月搬到了杭州", "user", False),
        ("用户晚上好！", "晚上好", "assistant", False),  # the other speaker as subject
        ("助手会一直陪着用户", "我会一直陪着你", "user", False),
        ("助手为用户感到骄傲", "我都替你骄傲", "assistant", True),
        ("助手为用户的进步感到骄傲", "我都替你骄傲", "assistant", False),  # 进步 is not said
        ("用户昨天跑了5公里", "Yesterday I ran 5 km", "user", False),  # another script: not checkable
        ("The user ran 5 km", "昨天我跑了5公里", "user", False),
        ("用户昨天去体检", "前天我去体检", "user", False),  # another day than the quote's
        ("用户前天去体检", "前天我去体检", "user", True),
        ("The user moved last week", "I moved here last month", "user", False),
        ("The user saw a new therapist this afternoon", "I saw a new therapist", "user", False),
        ("用户最近在学用智能手机", "我爸最近在学用智能手机", "user", False),  # his doing, not the user's
        ("用户的爸爸在学用智能手机", "我爸最近在学用智能手机", "user", True),
    ],
)
def test_text_supported(text: str, quote: str, role: str, supported: bool) -> None:
    assert text_supported(text, quote, role) is supported


def test_speaker_text_keeps_the_quote_in_its_language() -> None:
    assert speaker_text("我不吃香菜", "user") == "用户说：“我不吃香菜”"
    assert speaker_text("I'm glad", "assistant") == 'The assistant said: "I\'m glad"'


@pytest.mark.parametrize(
    ("key", "kind", "subject", "role", "expected"),
    [
        ("home.city", "episode", None, "user", ("home.city", "fact", "user", "杭州")),
        ("food.dislike", "fact", "user", "user", (None, "fact", None, None)),  # states no dislike
        ("home.location", "fact", "user", "user", (None, "fact", None, None)),  # not in the vocabulary
        ("home.city", "fact", None, "assistant", ("home.city", "fact", None, "杭州")),  # validation refuses
        (None, "episode", None, "user", (None, "episode", None, "杭州")),
    ],
)
def test_keys_are_steered_to_the_vocabulary(
    key: str | None, kind: str, subject: str | None, role: str, expected: tuple[object, ...]
) -> None:
    keys = vocabulary(("home.city", "food.dislike"))
    c = MemoryCandidate("用户住在杭州", "我住在杭州", kind, "user_statement", 0.7, subject, key, value="杭州")
    steered = steer_keys(c, keys, role)
    assert (steered.fact_key, steered.kind, steered.subject, steered.value) == expected


@pytest.mark.parametrize(
    ("quote", "key", "kept"),
    [
        ("我不吃香菜", "food.dislike", True),
        ("I don't eat pork", "food.dislike", True),
        ("I can't stand coriander", "food.dislike", False),  # no word says it is eaten: unkeyed
        ("I don't like stretching", "food.dislike", False),  # a dislike, of no food
        ("还有我超讨厌别人动我的锅", "food.dislike", False),
        ("我不爱喝酸的", "food.dislike", False),  # a drink
        ("我从小就受不了那股腥味", "food.dislike", True),
        ("我特别喜欢吃辣", "food.favorite", False),  # a like, not a favourite
        ("四川菜是我的最爱", "food.favorite", True),
        ("Lasagne is still my favourite food", "food.favorite", True),
        ("Sushi is my favourite", "food.favorite", False),  # a favourite, of what the words do not say
        ("最喜欢弹《晴天》", "food.favorite", False),
        ("Britpop is my favourite thing in the world", "food.favorite", False),
        ("我喜欢吃香菜", "food.dislike", False),
        ("现在改喝乌龙茶了", "preference.drink", True),
        ("周末我一般在家拼乐高", "home.city", False),  # "在家" is no city the user lives in
        ("大学毕业后才来的北京", "job.employer", False),
        ("I moved to Leeds", "home.city", True),
        ("我是长沙人", "hometown", True),
        ("专业是新闻", "job.title", False),  # a subject of study, not a job
        ("我对海鲜过敏", "food.dislike", False),  # an allergy lasts; a later dislike would replace it
        ("我是一名小学老师", "job.title", True),
        ("它叫豆豆", "pet.cat.name", True),
        ("我家猫叫可乐", "pet.cat.name", True),
        ("His name is Biscuit", "pet.dog.name", True),
        ("小名叫糯米", "pet.cat.name", False),  # a name, but a child's: no pet, no "它"
        ("它把圣诞树推倒了", "pet.cat.name", False),  # the cat, but no name given
        ("My name is Sam", "pet.dog.name", False),
    ],
)
def test_a_key_needs_the_words_it_means(quote: str, key: str, kept: bool) -> None:
    c = MemoryCandidate(quote, quote, "preference", "", 0.7, "user", key, value=quote[-2:])
    steered = steer_keys(c, vocabulary((key,)), "user")
    assert (steered.fact_key == key) is kept
    assert (steered.subject, steered.value) == (("user", quote[-2:]) if kept else (None, None))


@pytest.mark.parametrize(
    ("quote", "vocab", "expected"),
    [
        ("我最喜欢喝普洱茶", ("food.favorite", "preference.drink"), "preference.drink"),
        ("My favourite drink is green tea", ("food.favorite", "preference.drink"), "preference.drink"),
        ("我最喜欢喝普洱茶", ("food.favorite",), None),  # no drink key configured: unkeyed
        ("我最爱吃火锅，喝奶茶也行", ("food.favorite", "preference.drink"), "food.favorite"),
        ("四川菜是我的最爱", ("food.favorite", "preference.drink"), "food.favorite"),
    ],
)
def test_a_drink_is_no_favourite_food(quote: str, vocab: tuple[str, ...], expected: str | None) -> None:
    c = MemoryCandidate(quote, quote, "preference", "", 0.7, "user", "food.favorite", value=quote[-2:])
    steered = steer_keys(c, vocabulary(vocab), "user")
    assert steered.fact_key == expected
    assert steered.subject == ("user" if expected else None)


def test_a_key_whose_value_is_a_copied_placeholder_is_dropped() -> None:
    c = MemoryCandidate(
        "用户面试又没过", "今天面试又没过", "fact", "", 0.7, "user", "job.title", value="【职位】"
    )
    (grounded,) = ground(
        [c],
        role="user",
        source="今天面试又没过，好沮丧。",
        local_time=LOCAL,
        fact_keys=vocabulary(("job.title",)),
    )
    assert (grounded.fact_key, grounded.subject, grounded.value) == (None, None, None)
    assert grounded.kind == "episode"  # "今天" dates it: something that happened today
    assert grounded.valid_at == datetime(2025, 6, 10, tzinfo=LOCAL.tzinfo)


def test_role_decides_what_an_event_can_yield() -> None:
    feeling = MemoryCandidate("用户很沮丧", "好沮丧", "emotion", "", 0.7, valence=-0.6, arousal=0.5)
    (grounded,) = ground([feeling], role="user", source="今天面试又没过，好沮丧。", local_time=LOCAL)
    # A user's feeling is an observation about the user, never the companion's own emotion.
    assert (grounded.kind, grounded.basis, grounded.valence, grounded.arousal) == (
        "observation",
        "user_statement",
        None,
        None,
    )
    said = [
        MemoryCandidate("助手问用户", "怎么样", "fact", "", 0.7),
        MemoryCandidate("助手很难过", "我也有点难过", "emotion", "", 0.7, valence=-0.4, arousal=0.3),
        MemoryCandidate("助手答应练习", "我们一起练习", "agreement", "", 0.7),
        MemoryCandidate("助手以后先听", "以后我会先多听你说", "growth", "", 0.7),
    ]
    source = "怎么样？我也有点难过。下次我们一起练习吧？以后我会先多听你说。"
    assert [[v.rule for v in found] for found in extraction_rules(said, "assistant", source)] == [
        [Rule.KIND_NOT_FROM_ASSISTANT],
        [],
        [],  # a question may propose an agreement
        [],
    ]
    assert extraction_rules(said, "user", source) == [[], [], [], []]


@pytest.mark.parametrize(
    ("quote", "kind", "rules"),
    [
        ("晚上好呀", "observation", [Rule.SMALL_TALK]),
        ("好啊", "agreement", [Rule.SMALL_TALK, Rule.AGREEMENT_NOT_STATED]),
        ("Thank you!", "observation", [Rule.SMALL_TALK]),
        ("好啊，就这么说定了", "agreement", []),
        ("谢谢你一直陪着我", "observation", [Rule.SMALL_TALK]),  # thanks
        ("你真好", "observation", [Rule.SMALL_TALK]),  # praise of the one spoken to
        ("You're the best!", "observation", [Rule.SMALL_TALK]),
        ("你真好看", "observation", []),
        ("你记性真好", "fact", [Rule.SMALL_TALK]),  # about the one spoken to
        ("晚安，明天聊", "observation", [Rule.SMALL_TALK]),  # a farewell
        ("Not really", "fact", [Rule.SMALL_TALK]),  # a bare answer
        ("不太", "observation", [Rule.SMALL_TALK]),
        ("嗯嗯，知道啦", "fact", [Rule.SMALL_TALK]),
        ("我不太喜欢下雨", "observation", []),
        ("我一直很喜欢和你聊天", "observation", []),
        ("我是不是应该换个工作", "observation", [Rule.CONDITIONAL_OR_QUESTION_NOT_FACT]),
        ("要是能便宜点就好了", "observation", [Rule.CONDITIONAL_OR_QUESTION_NOT_FACT]),
        ("要是你下次提醒我就好了", "agreement", []),  # a request may be an agreement
        ("不过你已经很努力了", "agreement", [Rule.AGREEMENT_NOT_STATED]),
        ("No coriander in any recipe I suggest", "agreement", []),
        ("希望你们能多点时间在一起", "agreement", [Rule.AGREEMENT_NOT_STATED]),  # a wish, not a plan
        ("下次我们一起练习一下吧", "agreement", []),
        ("Brilliant", "observation", [Rule.SMALL_TALK]),  # one content word states nothing alone
        ("Ha, fair", "fact", [Rule.SMALL_TALK]),
        ("as you can tell", "observation", [Rule.SMALL_TALK]),
        ("I'm exhausted", "episode", [Rule.SMALL_TALK]),  # a contraction is no content word
        ("Deal", "agreement", []),  # one word settles an agreement
        ("His name is Biscuit", "fact", []),
        ("I moved in 2019", "fact", []),
    ],
)
def test_small_talk_and_questions_yield_little(quote: str, kind: str, rules: list[Rule]) -> None:
    source = f"{quote}。"
    candidate = MemoryCandidate("用户说了话", quote, kind, "", 0.7)
    assert [v.rule for v in extraction_rules([candidate], "user", source)[0]] == rules


@pytest.mark.parametrize(
    ("quote", "kind", "rules"),
    [
        ("听到这个我也有点难过", "emotion", []),
        ("I'm really glad you're settling in", "emotion", []),
        ("说明你是个很细腻的人", "emotion", [Rule.EMOTION_NOT_EXPRESSED]),
        ("以后我会先多听你说", "growth", []),
        ("I'll ask before I suggest", "growth", []),
        ("说明你是个很细腻的人", "growth", [Rule.GROWTH_NOT_STATED]),
        ("晚上好", "emotion", [Rule.SMALL_TALK, Rule.EMOTION_NOT_EXPRESSED]),
        ("下班记得好好睡一觉", "agreement", [Rule.AGREEMENT_NOT_STATED]),  # advice binds nobody
        ("下次有好的展览，我提醒你", "agreement", []),
        ("要不要下次拍给我看看", "agreement", []),  # a proposal
        ("下周三晚上我来问问你进展，好不好", "agreement", []),  # "我来": the assistant takes it on
        ("你们常一起爬山吗", "agreement", [Rule.AGREEMENT_NOT_STATED]),  # asks, proposes nothing
        ("团子这个名字好可爱", "emotion", [Rule.EMOTION_NOT_EXPRESSED]),  # praise of a thing: "可爱"
        ("我好爱这个名字", "emotion", []),
    ],
)
def test_an_assistants_emotion_and_growth_must_be_said(quote: str, kind: str, rules: list[Rule]) -> None:
    candidate = MemoryCandidate("助手说了话", quote, kind, "", 0.7, valence=0.1, arousal=0.1)
    assert [v.rule for v in extraction_rules([candidate], "assistant", f"{quote}。")[0]] == rules


@pytest.mark.parametrize(
    ("source", "rules"),
    [
        ("你说我要不要跟领导说清楚？", [Rule.AGREEMENT_NOT_STATED]),  # asks advice, binds no one
        ("If I get a 7, I'll apply to a school in Melbourne.", [Rule.AGREEMENT_NOT_STATED]),  # own plan
        ("你能每天提醒我吃药吗？", []),  # asks the assistant
        ("要是你下次提醒我就好了。", []),
        ("咱们周末一起练吧？", []),
        ("假如我也去深圳，我们就不用异地了。", [Rule.AGREEMENT_NOT_STATED]),  # "我们": the user and another
        ("我最近迷上了做陶艺，每周六去工作室。", [Rule.AGREEMENT_NOT_STATED]),  # a habit of the user's own
        ("以后别叫我全名了。", []),  # a request
        ("好，以后每天晚上提醒我。", []),  # neither a question nor a condition
        ("我妈要求我每天写日记，我觉得很烦。", [Rule.AGREEMENT_NOT_STATED]),  # someone else's rule
        ("我妈说让你每天提醒我吃药。", []),  # someone else's words, asking the assistant
        ("行啊，不过先说好，只弹不唱。", []),  # "说好": the terms settled
        ("我一定要减肥。", [Rule.AGREEMENT_NOT_STATED]),  # a resolution of the user's own
    ],
)
def test_a_users_question_or_condition_is_an_agreement_only_with_the_assistant_in_it(
    source: str, rules: list[Rule]
) -> None:
    quote = source.rstrip("。？.")
    candidate = MemoryCandidate("用户和助手约定", quote, "agreement", "", 0.7)
    assert [v.rule for v in extraction_rules([candidate], "user", source)[0]] == rules


@pytest.mark.parametrize(
    ("role", "source", "quote", "text", "quoted"),
    [
        (
            "assistant",
            "喂药的时候我可以提醒你，每天晚上九点好吗？",
            "喂药的时候我可以提醒你",
            "助手答应提醒用户喂药",
            "喂药的时候我可以提醒你，每天晚上九点好吗",
        ),
        (
            "user",
            "好，那就周三早上提醒我。",
            "那就周三早上提醒我",
            "用户让助手提醒",
            "好，那就周三早上提醒我",
        ),
        (
            "user",
            "OK, remind me at 7 tomorrow.",
            "remind me at 7 tomorrow",
            "Remind the user",
            "OK, remind me at 7 tomorrow",
        ),
        (
            "user",
            "好，每天晚上九点提醒我。",
            "每天晚上九点提醒我",
            "用户让助手每天晚上九点提醒",
            None,
        ),  # kept
    ],
)
def test_an_agreement_keeps_the_time_its_sentence_gives(
    role: str, source: str, quote: str, text: str, quoted: str | None
) -> None:
    c = MemoryCandidate(text, quote, "agreement", "", 0.7)
    (grounded,) = ground([c], role=role, source=source, local_time=LOCAL)
    whole = quoted or quote
    assert grounded.quote == whole
    if quoted is not None:
        assert grounded.text == speaker_text(whole, role)
    else:
        assert grounded.text != speaker_text(whole, role)


def test_growth_quotes_its_look_back_with_the_change_it_led_to() -> None:
    source = "我之前总劝你早睡，好像没什么用。以后我换个方式，陪你做睡前放松。"
    looked_back = MemoryCandidate("助手反思劝早睡没用", "我之前总劝你早睡，好像没什么用", "growth", "", 0.7)
    (grounded,) = ground([looked_back], role="assistant", source=source, local_time=LOCAL)
    whole = "我之前总劝你早睡，好像没什么用。以后我换个方式，陪你做睡前放松"
    assert (grounded.kind, grounded.quote, grounded.text) == ("growth", whole, f"助手说：“{whole}”")
    assert extraction_rules([grounded], "assistant", source) == [[]]
    assert growth_quote("以后我换个方式", source) == "以后我换个方式"  # states the change itself
    assert growth_quote("我之前总劝你早睡", "我之前总劝你早睡。") == "我之前总劝你早睡"  # no change said


@pytest.mark.parametrize(
    ("quote", "kind", "valence", "expected"),
    [
        ("没问题，我每晚十点提醒你喝水", "fact", None, "agreement"),  # binds the assistant
        ("以后我都这么叫你", "preference", None, "agreement"),
        ("Let's plan a gentle routine together next week", "growth", None, "agreement"),  # together
        ("我之前太急着给建议了，以后我会先多听你说", "growth", None, "growth"),  # looks back
        ("明白，我会挑两百元以内的", "growth", None, "agreement"),  # a promise, not a change
        ("Last time I pushed you to train harder", "agreement", None, "growth"),  # only looks back
        ("下次我给你推荐几款好普洱", "growth", None, "agreement"),
        ("我都替你骄傲", "observation", 0.8, "emotion"),  # a feeling, with its values
        ("我都替你骄傲", "observation", None, "observation"),  # no values: refused as before
        ("回家看妈妈真好", "fact", None, "fact"),  # advice binds nobody
        ("希望你们能多点时间在一起", "observation", None, "observation"),
        ("是我说得太武断了，以后不会随便评价你的爱好", "emotion", 0.3, "growth"),  # "爱好" is no feeling
        ("上次没帮上你，我很难过", "emotion", -0.5, "emotion"),  # a feeling named
    ],
)
def test_an_assistants_item_takes_the_kind_its_words_give(
    quote: str, kind: str, valence: float | None, expected: str
) -> None:
    c = MemoryCandidate("用户每晚喝水", quote, kind, "", 0.7, "user", None, valence=valence)
    (grounded,) = ground([c], role="assistant", source=f"{quote}。", local_time=LOCAL)
    assert grounded.kind == expected
    if expected == "agreement" and kind != "growth":
        assert (grounded.fact_key, grounded.subject, grounded.text) == (None, None, f"助手说：“{quote}”")


def test_placeholder_brackets_come_off_the_events_own_words_only() -> None:
    source = "I moved to Leeds in March for a new job at the hospital."
    moved = MemoryCandidate(
        "用户搬到【Leeds】", source.rstrip("."), "fact", "", 0.7, "user", "home.city", value="【Leeds】"
    )
    copied = MemoryCandidate("用户在【医院】工作", source.rstrip("."), "fact", "", 0.7, value="【医院】")
    first, second = ground(
        [moved, copied], role="user", source=source, local_time=LOCAL, fact_keys=vocabulary(("home.city",))
    )
    assert (first.value, first.fact_key) == ("Leeds", "home.city")
    assert "【" not in first.text
    assert second.value == "【医院】"  # not the event's words: still a copied placeholder
    verdict = validate_batch([second], SourceEvent(role="user", category="conversation", text=source))
    assert Rule.COPIES_PROMPT_EXAMPLE in {v.rule for v in verdict[0]}


def test_a_dated_observation_is_an_episode() -> None:
    ran = MemoryCandidate("用户昨天跑了五公里", "昨天我跑了五公里", "observation", "", 0.7)
    (grounded,) = ground([ran], role="user", source="昨天我跑了五公里！", local_time=LOCAL)
    assert grounded.kind == "episode"


def test_a_users_resolution_is_an_observation() -> None:
    resolution = MemoryCandidate("用户以后早睡", "以后我要早睡", "growth", "", 0.7)
    (grounded,) = ground([resolution], role="user", source="以后我要早睡。", local_time=LOCAL)
    assert grounded.kind == "observation"


@pytest.mark.parametrize(
    ("source", "quote", "key", "expected"),
    [
        ("我打算下个月搬去深圳。", "我打算下个月搬去深圳", None, ("observation", None)),  # a plan
        ("我打算下个月搬去深圳找他。", "我打算下个月搬去深圳找他", "home.city", ("observation", None)),  # his
        ("昨天我去了一趟莫干山。", "昨天我去了一趟莫干山", None, ("episode", None)),  # dated
        ("以后别叫我全名。", "以后别叫我全名", None, ("preference", None)),  # a request
        ("我在设计公司上班。", "我在设计公司上班", None, ("fact", None)),
        ("我以前爱喝咖啡。", "我以前爱喝咖啡", "preference.drink", ("preference", None)),  # past value
        ("现在改喝乌龙茶了。", "现在改喝乌龙茶了", "preference.drink", ("preference", "preference.drink")),
        ("快读完了，读得我哭了好几次。", "快读完了", None, ("observation", None)),  # passing
        ("腿到现在还是酸的。", "腿到现在还是酸的", None, ("observation", None)),
        ("我三月搬到了杭州，现在住在西湖边上。", "现在住在西湖边上", None, ("fact", None)),  # lasting
        ("我养了一只橘猫。", "我养了一只橘猫", None, ("fact", None)),
        ("打算在老家办几桌，我老家在江西九江。", "我老家在江西九江", None, ("fact", None)),  # its own
        ("我打算下个月搬去深圳。", "下个月搬去深圳", None, ("observation", None)),  # "我打算" before it
        ("它把圣诞树推倒了，哈哈。", "它把圣诞树推倒了", None, ("episode", None)),  # a deed
        ("我被领导批评了。", "我被领导批评了", None, ("episode", None)),
    ],
)
def test_the_words_decide_what_a_fact_is(
    source: str, quote: str, key: str | None, expected: tuple[str, str | None]
) -> None:
    c = MemoryCandidate(quote, quote, "fact", "", 0.7, None, key, value="乌龙茶" if key else None)
    keys = vocabulary(("preference.drink", "home.city"))
    (grounded,) = ground([c], role="user", source=source, local_time=LOCAL, fact_keys=keys)
    assert (grounded.kind, grounded.fact_key) == expected


@pytest.mark.parametrize(
    ("source", "quote", "kind", "expected"),
    [
        ("我不吃香菜，每次点外卖都要备注。", "每次点外卖都要备注", "episode", "observation"),  # a habit
        ("I always take the bus.", "I always take the bus", "episode", "observation"),
        ("昨天我每次上坡都很累。", "昨天我每次上坡都很累", "episode", "episode"),  # dated: one day
        ("它把圣诞树推倒了。", "它把圣诞树推倒了", "episode", "episode"),
        ("我三月搬到了杭州，现在住在西湖边上。", "现在住在西湖边上", "episode", "observation"),  # a state
        (
            "My brother lives in Glasgow, so I'm closer to him now.",
            "so I'm closer to him now",
            "episode",
            "observation",
        ),
        ("我以前爱喝咖啡，现在改喝乌龙茶了。", "现在改喝乌龙茶了", "episode", "episode"),  # a change
        ("Now I moved to Leeds.", "Now I moved to Leeds", "episode", "episode"),
        ("两岁了，特别能吃。", "特别能吃", "preference", "observation"),  # no like or dislike
        ("我不吃香菜。", "我不吃香菜", "preference", "preference"),
        ("每天晚上十点提醒我喝水。", "每天晚上十点提醒我喝水", "preference", "preference"),  # a request
        ("夜班最累，一周要上三次。", "一周要上三次", "episode", "observation"),  # how often: a habit
        ("I walk him twice a day.", "I walk him twice a day", "episode", "observation"),
        ("我特别喜欢吃辣，四川菜是我的最爱。", "四川菜是我的最爱", "episode", "preference"),  # a like
        ("He's three, and he hates the rain.", "and he hates the rain", "episode", "observation"),  # his
        ("好呀，不过我对花生过敏。", "不过我对花生过敏", "episode", "observation"),  # "过" of 过敏, 不过
        ("好，就从今晚开始。", "就从今晚开始", "episode", "agreement"),  # accepted, with a start
        ("一点都不爱，闻着就受不了。", "一点都不爱，闻着就受不了", "observation", "preference"),  # a dislike
        ("我妈妈很喜欢花。", "我妈妈很喜欢花", "observation", "observation"),  # hers
        ("这只猫很可爱。", "这只猫很可爱", "observation", "observation"),
        ("好，我去过了。", "我去过了", "episode", "episode"),  # accepted, nothing committed to
        ("Sure, let's start tonight.", "let's start tonight", "observation", "agreement"),
        ("Yes, let's do that.", "Yes, let's do that", "observation", "agreement"),
        ("We adopted a puppy. His name is Biscuit.", "His name is Biscuit", "observation", "fact"),
        ("好啊，今晚就练。", "今晚就练", "episode", "agreement"),  # accepted, with when
        ("我同事小王特别爱吃羊肉串。", "我同事小王特别爱吃羊肉串", "preference", "observation"),  # his
        ("My sister thinks it's boring.", "My sister thinks it's boring", "fact", "observation"),  # her view
        ("I've been reading sci-fi lately.", "I've been reading sci-fi lately", "fact", "observation"),
        ("We adopted a puppy. His name is Biscuit.", "His name is Biscuit", "episode", "fact"),  # a name
        ("好，做完下一个就拍给你看。", "做完下一个就拍给你看", "episode", "agreement"),  # accepted, then
        ("还不太习惯，我吃不了辣。", "我吃不了辣", "fact", "preference"),  # a dislike
        ("太好了，那就这么说定了。", "太好了，那就这么说定了", "observation", "agreement"),  # settled
        ("一年就回去一两次，过年的时候。", "一年就回去一两次，过年的时候", "fact", "observation"),  # habit
        ("Writing. My essays are always too short.", "My essays are always too short", "fact", "observation"),
        ("我是厨师，一直住在杭州。", "我是厨师", "fact", "fact"),
        ("我最喜欢喝普洱茶，咖啡一口都不碰。", "咖啡一口都不碰", "fact", "preference"),  # won't touch
        (
            "I dropped my phone in the bath on Sunday.",
            "I dropped my phone in the bath on Sunday",
            "fact",
            "episode",
        ),
    ],
)
def test_the_words_decide_what_an_episode_or_preference_is(
    source: str, quote: str, kind: str, expected: str
) -> None:
    c = MemoryCandidate(f"用户说{quote}", quote, kind, "", 0.7)
    (grounded,) = ground([c], role="user", source=source, local_time=LOCAL)
    assert grounded.kind == expected


def test_a_quote_about_now_is_not_dated_by_the_rest_of_its_sentence() -> None:
    source = "我三月搬到了杭州，现在住在西湖边上。"
    moved = MemoryCandidate("用户搬到了杭州", "我三月搬到了杭州", "episode", "", 0.7)
    lives = MemoryCandidate("用户住在西湖边上", "现在住在西湖边上", "fact", "", 0.7)
    both = MemoryCandidate("用户住在杭州西湖边", source.rstrip("。"), "fact", "", 0.7)
    first, second, third = ground([moved, lives, both], role="user", source=source, local_time=LOCAL)
    assert first.valid_at is not None and first.valid_at.month == 3
    assert second.valid_at is None
    assert third.valid_at == first.valid_at  # the quote's own date wins over its "现在"


def test_a_keyed_fact_about_someone_else_keeps_the_speakers_words() -> None:
    sister = MemoryCandidate(
        "用户在上海读大学", "我妹妹在上海读大学", "fact", "", 0.7, "user", "school", value="上海"
    )
    own = MemoryCandidate("用户住在杭州", "我住在杭州", "fact", "", 0.7, None, "home.city", value="杭州")
    source = "我妹妹在上海读大学。我住在杭州。"
    first, second = ground(
        [sister, own],
        role="user",
        source=source,
        local_time=LOCAL,
        fact_keys=vocabulary(("school", "home.city")),
    )
    assert (first.fact_key, first.subject, first.value, first.text) == (
        None,
        None,
        None,
        "用户说：“我妹妹在上海读大学”",
    )
    assert (second.fact_key, second.subject, second.text) == ("home.city", "user", "用户住在杭州")


def test_a_text_that_says_more_than_its_quote_becomes_the_quote() -> None:
    source = "他天天加班，我们六月都没怎么见面。"
    items = [
        MemoryCandidate("用户和男朋友六月都没见面", "我们六月都没怎么见面", "episode", "", 0.7),
        MemoryCandidate("用户六月没怎么见面", "我们六月都没怎么见面", "episode", "", 0.7),
    ]
    first, second = ground(items, role="user", source=source, local_time=LOCAL)
    assert first.text == "用户说：“他天天加班，我们六月都没怎么见面”"  # the whole sentence
    assert second.text == "用户六月没怎么见面"


@pytest.mark.parametrize(
    ("source", "quote", "expected"),
    [
        ("夜班最累，一周要上三次。", "一周要上三次", "夜班最累，一周要上三次"),
        ("我爸爸以前是老师，现在退休了。", "现在退休了", "我爸爸以前是老师，现在退休了"),
        ("拙政园，人太多了，排队排了一个小时。", "人太多了", "拙政园，人太多了"),
        ("还行，我上个月开始当护士。", "我上个月开始当护士", "我上个月开始当护士"),  # names the speaker
        ("He's three, and he hates the rain.", "and he hates the rain", "and he hates the rain"),
        ("我累了。周末好好休息。", "周末好好休息", "周末好好休息"),  # first of its sentence
        ("I adopted a dog. Loves walks.", "Loves walks", "Loves walks"),
        ("夜班最累，一周要上三次。", "不在原文里", "不在原文里"),
        ("它把圣诞树推倒了，哈哈。", "哈哈", "哈哈"),  # small talk stays, to be refused
        ("我哥哥上个月当爸爸了，是个女儿。", "是个女儿", "我哥哥上个月当爸爸了，是个女儿"),  # 是 first
        ("是的，我在杭州。", "是的", "是的"),
        (
            "我爸最近在学用智能手机，天天给我发表情包。",
            "天天给我发表情包",
            "我爸最近在学用智能手机，天天给我发表情包",
        ),
    ],
)
def test_a_clause_that_names_no_one_keeps_the_clauses_before_it(
    source: str, quote: str, expected: str
) -> None:
    assert with_subject(quote, source) == expected


@pytest.mark.parametrize(
    ("source", "quote", "expected"),
    [
        ("拙政园，人太多了，排队排了一个小时。", "拙政园", "拙政园，人太多了，排队排了一个小时"),
        ("还行，我上个月开始当护士。", "还行", None),  # small talk is refused, not widened
        ("两岁了，特别能吃。", "两岁了", "两岁了，特别能吃"),
        ("我养了一只橘猫，叫团子。", "叫团子", None),  # after another clause: not a topic
        ("我养了一只猫。", "我养了一只猫", None),
        ("拙政园。", "拙政园", None),  # the whole sentence
        ("I went to Leeds, nice.", "nice", None),
    ],
)
def test_a_fragment_stands_for_its_sentence(source: str, quote: str, expected: str | None) -> None:
    assert fragment_sentence(quote, source) == expected


@pytest.mark.parametrize(
    ("source", "quote", "expected"),
    [
        ("We adopted a puppy last weekend. His name is Biscuit.", "His name is", "His name is Biscuit."),
        (
            "We adopted a puppy last weekend. His name is Biscuit.",
            "a puppy",
            "We adopted a puppy last weekend.",
        ),
        ("It costs 3.5 dollars. Cheap.", "3.5", "It costs 3.5 dollars."),  # no end inside a number
        ("你好。我在杭州，你呢？", "我在杭州", "我在杭州，你呢？"),
        ("今天很开心！真的。", "今天很开心！", "今天很开心！"),  # the quote ends its sentence
    ],
)
def test_the_sentence_of_a_quote(source: str, quote: str, expected: str) -> None:
    assert sentence_of(quote, source) == expected


@pytest.mark.parametrize(
    ("source", "quote", "expected"),
    [
        ("前天我去体检，医生说我血压有点高。", "前天我去体检", "前天我去体检，医生说我血压有点高"),
        ("我累了。周末好好休息！", "周末好好休息", "周末好好休息"),
        (
            "Not really. But the coffee shops make up for it.",
            "the coffee shops",
            "But the coffee shops make up for it",
        ),
        ("I moved. Leeds is nice, really nice. Rainy.", "Leeds is nice", "Leeds is nice, really nice"),
        ("一" * 90 + "，我在杭州。", "我在杭州", "我在杭州"),  # too long a sentence: the quote alone
        ("前天我去体检。", "不在原文里", "不在原文里"),
    ],
)
def test_the_speakers_words_are_a_whole_sentence(source: str, quote: str, expected: str) -> None:
    assert whole_sentence(quote, source) == expected


def test_the_speakers_words_are_widened_to_their_sentence_but_small_talk_is_not() -> None:
    source = "前天我去体检，医生说我血压有点高。好的，说定了。"
    checkup = MemoryCandidate("用户去了医院", "前天我去体检", "episode", "", 0.7)
    agreed = MemoryCandidate("用户同意了计划", "好的", "agreement", "", 0.7)
    first, second = ground([checkup, agreed], role="user", source=source, local_time=LOCAL)
    assert (first.quote, first.text) == (
        "前天我去体检，医生说我血压有点高",
        "用户说：“前天我去体检，医生说我血压有点高”",
    )
    assert second.quote == "好的"  # refused as small talk, not stored as the whole sentence
    assert Rule.SMALL_TALK in [v.rule for v in extraction_rules([second], "user", source)[0]]


def test_a_fragment_is_stored_as_its_sentence_in_the_speakers_words() -> None:
    source = "拙政园，人太多了，排队排了一个小时。"
    garden = MemoryCandidate("用户去了拙政园", "拙政园", "fact", "", 0.7)
    (grounded,) = ground([garden], role="user", source=source, local_time=LOCAL)
    assert (grounded.kind, grounded.quote, grounded.text) == (
        "observation",
        "拙政园，人太多了，排队排了一个小时",
        "用户说：“拙政园，人太多了，排队排了一个小时”",
    )


def test_the_words_quoted_after_widening_decide_the_kind() -> None:
    source = "I hate how my fingers hurt after practice, though."
    named = MemoryCandidate("The user's fingers hurt", "though", "fact", "", 0.7)
    (grounded,) = ground([named], role="user", source=source, local_time=LOCAL)
    assert grounded.quote == "I hate how my fingers hurt after practice, though"
    assert grounded.kind == "preference"


@pytest.mark.parametrize(
    ("source", "text", "quote", "expected"),
    [
        ("我爸爸以前是老师，现在退休了。", "用户退休了", "现在退休了", "我爸爸以前是老师，现在退休了"),  # his
        (
            "我对海鲜过敏，一吃就起疹子。",
            "一吃就起疹子",
            "一吃就起疹子",
            "我对海鲜过敏，一吃就起疹子",
        ),  # bare
    ],
)
def test_the_speakers_words_keep_the_subject_of_their_sentence(
    source: str, text: str, quote: str, expected: str
) -> None:
    (grounded,) = ground(
        [MemoryCandidate(text, quote, "fact", "", 0.7)], role="user", source=source, local_time=LOCAL
    )
    assert (grounded.quote, grounded.text) == (expected, f"用户说：“{expected}”")
    assert grounded.quote in source


def test_someone_elses_doing_is_not_written_as_the_users() -> None:
    source = "我爸最近在学用智能手机，天天给我发表情包。"
    misread = MemoryCandidate("用户最近在学用智能手机", "我爸最近在学用智能手机", "observation", "", 0.7)
    told = MemoryCandidate("用户的爸爸在学用智能手机", "我爸最近在学用智能手机", "observation", "", 0.7)
    first, second = ground([misread, told], role="user", source=source, local_time=LOCAL)
    assert first.text == speaker_text(first.quote, "user") and "我爸" in first.quote
    assert second.text == "用户的爸爸在学用智能手机"


def test_a_clause_with_its_own_subject_keeps_the_models_text() -> None:
    supported = MemoryCandidate("用户现在退休了", "现在退休了", "fact", "", 0.7)
    (kept,) = ground([supported], role="user", source="我现在退休了。", local_time=LOCAL)
    assert (kept.quote, kept.text) == ("现在退休了", "用户现在退休了")


def test_invalid_links_are_dropped() -> None:
    assert clean_related((1, 0, 5, -1, True, "mem_x", 1), 0, 3) == (1,)


LOCAL = datetime(2025, 6, 10, 21, 30, tzinfo=timezone(timedelta(hours=8)))


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("我昨天去爬山了", datetime(2025, 6, 9)),
        ("今天面试又没过", datetime(2025, 6, 10)),
        ("I ran 5 km this morning", datetime(2025, 6, 10)),
        ("Had my third session with a new therapist this afternoon", datetime(2025, 6, 10)),
        ("We argued this evening", datetime(2025, 6, 10)),
        ("前天下雨", datetime(2025, 6, 8)),
        ("三天前我生病了", datetime(2025, 6, 7)),
        ("我三月搬到了杭州", datetime(2025, 3, 1)),
        ("十二月我去了哈尔滨", datetime(2024, 12, 1)),  # December has not come yet this year
        ("上个月换了工作", datetime(2025, 5, 1)),
        ("上周去了医院", datetime(2025, 6, 2)),
        ("周末去西湖骑了一圈车", datetime(2025, 6, 7)),  # the last weekend begun: Saturday
        ("周末我一般在家拼乐高", None),  # a habit
        ("周末要去爬山了", None),  # a plan
        ("周六和朋友去爬了香山", datetime(2025, 6, 7)),  # the last Saturday
        ("星期二去了趟医院", datetime(2025, 6, 10)),  # today, a Tuesday
        ("周一要开会了", None),
        ("I dropped my phone in the bath on Sunday and it's been dead ever since", datetime(2025, 6, 8)),
        ("We went hiking last Saturday", datetime(2025, 6, 7)),
        ("I'll see her on Friday", None),  # to come
        ("I work on Mondays", None),
        ("上周末去了杭州", datetime(2025, 6, 2)),
        ("去年夏天", datetime(2024, 1, 1)),
        ("2019年8月毕业", datetime(2019, 8, 1)),
        ("I moved here last week", datetime(2025, 6, 2)),
        ("We met in March", datetime(2025, 3, 1)),
        ("I'm taking the IELTS exam in September", None),  # a month to come, nothing done: a plan
        ("九月要考雅思", None),
        ("We met in September", datetime(2024, 9, 1)),  # done: last year's
        ("明天要考试", None),
        ("我住在上海", None),
        ("下个月搬家", None),
    ],
)
def test_relative_dates_resolve_against_local_time(sentence: str, expected: datetime | None) -> None:
    resolved = resolve_relative_time(sentence, LOCAL)
    assert resolved == (expected.replace(tzinfo=LOCAL.tzinfo) if expected else None)


def candidate(text: str, quote: str, **kw: Any) -> MemoryCandidate:
    base: dict[str, Any] = {"kind": "episode", "basis": "user_statement", "confidence": 0.8}
    return MemoryCandidate(text=text, quote=quote, **{**base, **kw})


def test_ground_never_trusts_the_model_valid_at() -> None:
    items = [
        candidate("用户搬到上海", "上个月从杭州搬到上海", valid_at="2025-05-01T00:00:00Z", related=(0, 1)),
        candidate("用户骑车上班", "每天骑车上班", valid_at="2020-01-01T00:00:00Z"),
    ]
    grounded = ground(items, role="user", source=SOURCE, local_time=LOCAL)
    assert grounded[0].quote == "上个月从杭州搬到了上海"
    assert grounded[0].valid_at == datetime(2025, 5, 1, tzinfo=LOCAL.tzinfo)  # "上个月" in its sentence
    assert grounded[0].related == (1,)
    assert grounded[1].valid_at == grounded[0].valid_at  # the same sentence dates both clauses
    (plain,) = ground(
        [candidate("用户骑车上班", "每天骑车上班", valid_at="2020-01-01T00:00:00Z")],
        role="user",
        source="我每天骑车上班。",
        local_time=LOCAL,
    )
    assert plain.valid_at is None


def test_duplicates_within_a_batch_and_against_existing() -> None:
    items = [
        candidate("用户搬到了上海", "搬到了上海"),
        candidate("用户搬到了上海。", "搬到了上海"),
        candidate("用户每天骑车上班", "每天骑车上班"),
        candidate("bad", "不在原文"),
    ]
    verdicts: list[list[Violation]] = [[], [], [], [Violation("quote", Rule.QUOTE_NOT_IN_SOURCE)]]
    marked = mark_duplicates(items, verdicts, [("用户每天骑车上班", "episode")])
    assert [[v.rule for v in vs] for vs in marked] == [
        [],
        [Rule.DUPLICATE],
        [Rule.DUPLICATE],
        [Rule.QUOTE_NOT_IN_SOURCE],
    ]


def test_the_speakers_words_inside_longer_words_of_the_batch_are_a_duplicate() -> None:
    items = [
        candidate("用户说：“我爸爸以前是老师”", "我爸爸以前是老师"),
        candidate("用户说：“我爸爸以前是老师，现在退休了”", "我爸爸以前是老师，现在退休了"),
        candidate("用户爸爸以前是老师", "我爸爸以前是老师"),  # its own text: kept
    ]
    marked = mark_duplicates(items, [[], [], []])
    assert [[v.rule for v in vs] for vs in marked] == [[Rule.DUPLICATE], [], []]


# -- the extraction flow ---------------------------------------------------------------------------

API_KEY = "local-test-key-77aa"


@pytest.fixture
def extracting(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MemoryService]:
    monkeypatch.setenv("YIJI_TEST_KEY", API_KEY)
    config = Config(
        db=db_path,
        timezone="Asia/Shanghai",
        extraction=ExtractionConfig(
            base_url=fake_provider.base_url, model="fake", api_key_env="YIJI_TEST_KEY", timeout_seconds=5
        ),
    )
    with httpx.Client() as http:
        service = make_service(db_path, config, clock=clock, extractor=build_extractor(config, http))
        yield service
        service.close()


def submit(service: MemoryService, text: str, role: str = "user") -> Any:
    event = {"session": "s1", "role": role, "text": text, "occurred_at": "2025-06-10T13:30:00Z"}
    return service.event_submit(parse(EventIn, event))


def item(text: str, quote: str, **kw: Any) -> dict[str, Any]:
    return {
        "text": text,
        "quote": quote,
        "kind": "episode",
        "basis": "user_statement",
        "confidence": 0.8,
        **kw,
    }


def test_a_memory_holding_the_configured_key_is_refused(
    extracting: MemoryService, fake_provider: FakeProvider, db_path: Path
) -> None:
    text = f"我的新钥匙是 {API_KEY}，昨天去爬山了。"
    fake_provider.script_chat(
        chat_reply(
            {
                "memories": [
                    item(f"用户的钥匙是{API_KEY}", f"我的新钥匙是 {API_KEY}"),
                    item("用户去爬山", "昨天去爬山了", gist=f"爬山 {API_KEY}"),
                    item("用户昨天去爬山了", "昨天去爬山了"),
                ]
            }
        )
    )
    result = submit(extracting, text)
    assert result.extraction["rejected_rules"] == ["credential_in_memory"]
    assert result.extraction["rejected"] == 2
    (kept,) = result.memory_ids
    memory = extracting.memory_read(kept)["memory"]
    assert memory.text == "用户昨天去爬山了"
    assert memory.valid_at == datetime(2025, 6, 8, 16, 0, tzinfo=UTC)  # local 2025-06-09 00:00 +08:00


def test_an_oversized_answer_leaves_the_event_pending(
    extracting: MemoryService, fake_provider: FakeProvider
) -> None:
    fake_provider.script_chat(huge(2_000_000, send_length=False))
    result = submit(extracting, "我昨天去爬山了。")
    assert result.event.extraction_state == "pending"
    assert result.extraction == {
        "state": "pending",
        "error": "provider_permanent",
        "message": "extraction answer is larger than the 1000000-byte limit",
        "reason": "answer",
    }


def test_duplicates_and_bad_links_are_dropped_memories_kept(
    extracting: MemoryService, fake_provider: FakeProvider
) -> None:
    fake_provider.script_chat(
        chat_reply(
            {
                "memories": [
                    item("用户去爬山", "我昨天去爬山了", related=[7, 1]),
                    item("用户去爬山", "我昨天去爬山了"),
                    item("用户觉得很累", "有点累", related=[0]),
                ]
            }
        )
    )
    result = submit(extracting, "我昨天去爬山了，有点累。")
    assert len(result.memory_ids) == 2
    assert result.extraction["rejected_rules"] == ["duplicate"]
    relations = extracting.memory_read(result.memory_ids[1])["relations"]
    assert [(r.from_id, r.to_id) for r in relations] == [(result.memory_ids[1], result.memory_ids[0])]


def test_entailment_check_refuses_what_the_quote_does_not_state(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider
) -> None:
    config = Config(
        db=db_path,
        extraction=ExtractionConfig(base_url=fake_provider.base_url, model="fake", entailment_check=True),
    )
    fake_provider.script_chat(
        chat_reply({"memories": [item("用户爬了山", "我昨天去爬山了"), item("用户很喜欢爬山", "有点累")]}),
        chat_reply({"entailed": True}),
        chat_reply({"entailed": False}),
    )
    with httpx.Client() as http:
        service = make_service(db_path, config, clock=clock, extractor=build_extractor(config, http))
        result = submit(service, "我昨天去爬山了，有点累。")
        service.close()
    assert len(result.memory_ids) == 1
    assert result.extraction["rejected_rules"] == ["not_entailed"]
    checks = [r.json() for r in fake_provider.requests[1:]]
    assert [c["response_format"]["json_schema"]["name"] for c in checks] == ["verdict", "verdict"]


@pytest.mark.parametrize(
    ("source", "quote", "text", "key", "kind", "spoken"),
    [
        # the model's text is not what the words say, and they name no one: kept as said, no lasting fact
        (
            "Only texts. I rent a flat in Bristol.",
            "Only texts",
            "The user texts the landlord",
            None,
            "observation",
            True,
        ),
        ("后面聊项目聊得还行。", "后面聊项目聊得还行", "用户的项目很成功", None, "observation", True),
        # words with their subject still state a fact about it
        (
            "I'm a pharmacist in Cardiff now.",
            "I'm a pharmacist in Cardiff now",
            "The user works at a hospital",
            None,
            "fact",
            True,
        ),
        # a name given is a fact by its words (cues.kind_by_words)
        (
            "We adopted a puppy. His name is Biscuit.",
            "His name is Biscuit",
            "The user's new puppy",
            None,
            "fact",
            True,
        ),
        # a keyed fact's words are in its quote: it stays a fact under its key
        ("我三月搬到了杭州。", "我三月搬到了杭州", "用户住在杭州西湖边", "home.city", "fact", True),
        # a text the quote supports keeps the model's kind and its own words
        ("我在区税务局上班。", "我在区税务局上班", "用户在区税务局上班", None, "fact", False),
    ],
)
def test_words_kept_as_said_are_a_fact_only_about_someone(
    source: str, quote: str, text: str, key: str | None, kind: str, spoken: bool
) -> None:
    subject, value = ("user", "杭州") if key else (None, None)
    c = MemoryCandidate(text, quote, "fact", "", 0.7, subject, key, value=value)
    keys = vocabulary(("home.city",))
    (grounded,) = ground([c], role="user", source=source, local_time=LOCAL, fact_keys=keys)
    assert (grounded.kind, grounded.fact_key) == (kind, key)
    assert (grounded.text == speaker_text(grounded.quote, "user")) is spoken
