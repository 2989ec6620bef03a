"""Words that decide what an extracted item is, and the refusals only extraction applies.

A small model labels kinds loosely: a plan as a fact, praise as the assistant's emotion, an assistant's
"good evening" as an agreement. The rules here read the quote's own words (pure, no I/O) and either
correct the kind where the words settle it (:func:`kind_by_words`) or refuse the item with a stable rule
id (:func:`extraction_rules`). They run only on what a model proposes: a person's manual derivation, a
correction or an archive import is checked by :mod:`yiji.domain.validation` alone.

The word lists are short and plain on purpose (Chinese first, then English). They are not a classifier:
an item that none of them settles keeps the model's kind.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from yiji.domain import words
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.domain.sentences import about_someone_else, is_question_or_condition, sentence_of, statement_of
from yiji.domain.validation import CJK_CHAR, MemoryCandidate, Rule, Violation

__all__ = [
    "assistant_kind",
    "extraction_rules",
    "growth_quote",
    "kind_by_words",
    "says_one_word",
    "small_talk",
    "speaks_of_now",
    "tells_of_done",
    "time_left_out",
]

_PUNCT: Final = re.compile(r"[\W_]+", re.UNICODE)
_ASSISTANT_KINDS: Final = frozenset({"emotion", "agreement", "growth"})
_ONE_WORD_KINDS: Final = frozenset({"emotion", "agreement"})
"""Kinds that one word can state: "Deal" settles an agreement, "Delighted" is a feeling."""

_FEELING: Final = words.pattern("feeling")
_RESOLUTION: Final = words.pattern("resolution")


_SMALL_TALK: Final = re.compile(
    rf"(?:(?:{words.alternation('small_talk', whole_words=False)})[呀啊哦呢啦吧嘛~]*)+"
)
"""Greetings and farewells ("晚安，明天聊"), thanks and acknowledgements, bare answers ("Not really",
"不太"), and praise of the one spoken to ("你真好", "你记性真好", "you're the best"): the conversation's
manners, nothing to remember about the speaker."""
_THANKS: Final = re.compile(r"(?:谢谢|多谢|感谢|thank)")
_ENGLISH_WORD: Final = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_FUNCTION_WORDS: Final = words.word_set("function_words", "en")
"""English words that carry no content of their own."""


def says_one_word(quote: str) -> bool:
    """Whether an English ``quote`` holds fewer than two content words ("Brilliant", "Ha, fair", "as you
    can tell"): such a clause states nothing to remember by itself, only in answer to what came before.
    A content word has three letters or more (or is a number) and is not a function word or a
    contraction ("I'm")."""
    folded = unicodedata.normalize("NFKC", quote).lower()
    if CJK_CHAR.search(folded):
        return False
    words = [
        w
        for w in _ENGLISH_WORD.findall(folded)
        if (len(w) >= 3 or w.isdigit()) and "'" not in w and w not in _FUNCTION_WORDS
    ]
    return len(words) < 2


def small_talk(quote: str) -> bool:
    """Whether ``quote`` is only a greeting, thanks or acknowledgement (or starts with thanks)."""
    folded = _PUNCT.sub("", unicodedata.normalize("NFKC", quote).lower())
    return bool(_SMALL_TALK.fullmatch(folded) or _THANKS.match(folded))


_TOGETHER: Final = r"我们一起|咱们|(?<!在)一起"
"""Words of doing something together ("在一起", being together, is not a plan)."""

_BINDING: Final = words.alternation("binding")
"""Words of a request, promise or rule, whoever says them ("提醒我", "别叫我全名", "call me Sam")."""
_COMMITMENT: Final = re.compile(
    r"我会|我来|我们|一定|说好|"
    + _TOGETHER
    + r"|以后|今后|下次|每天|每晚|每周|避开|就这么|没问题|从[^，。！？]{0,6}开始|"
    + _BINDING
    + r"|\b(?:let's|let us|we'll|we will|i'll|i will|will|won't|from now on|every|always|noted"
    r"|start(?:ing)? (?:tonight|today|tomorrow))\b",
    re.I,
)
"""Words of a commitment, request or rule: an agreement's quote has one."""

_NOT_FROM_QUESTIONS: Final = frozenset({"observation", "emotion", "growth"})
"""Kinds a question or condition cannot yield here (validation refuses facts, preferences and
episodes; an agreement may be a proposal: "下次我们一起练习一下吧？")."""


_PAST_STATE: Final = words.pattern("past_state")
_PLANNED: Final = words.pattern("planned")
_LIKE_WORDS: Final = words.alternation("likes")
_WANTS: Final = re.compile(
    _LIKE_WORDS + r"|爱[吃喝看听玩]|想要|希望|(?<![特分区告差级类性个识辨])别(?![人处])|不要"
    r"|最爱|叫我|提醒我|帮我|\b(?:don't want|call me|remind me)\b",
    re.I,
)
"""Words of a like, dislike, request or wish: what a preference states."""
_LIKES: Final = re.compile(_LIKE_WORDS + r"|(?<!可)爱", re.I)
"""Words of a like or dislike (the part of :data:`_WANTS` that is not a request or a wish)."""
_TEMPORARY: Final = words.pattern("temporary")
"""Words that make a state current or passing: a lasting fact has none."""
_HABIT: Final = words.pattern("habit")
"""Words of a habit: a pattern, not one happening."""
_DEED: Final = re.compile(r"[把被][^，。！？,.!?]{1,12}了")
"""Something done to something ("它把圣诞树推倒了", "我被领导批评了"): a happening, not a lasting fact."""
_NOW: Final = words.pattern("now")


def speaks_of_now(text: str) -> bool:
    """Whether ``text`` says "now" ("现在", "目前", "currently"): what it states holds at the event's time."""
    return bool(_NOW.search(text))


_ACCEPTS: Final = re.compile(
    r"\s*(?:好|好的|好啊|好呀|好吧|行|可以|没问题|一言为定|ok(?:ay)?|sure|deal|sounds good|yes|yeah|yep"
    r"|alright|all right)[呀啊吧嘞的]*"
    r"\s*[，,。.!！~]",
    re.I,
)
"""A sentence that opens by accepting what was proposed ("好，就从今晚开始")."""
_SOON: Final = re.compile(
    r"今晚|今天|明天|明早|待会|等会|马上|这就|周末|下周|\b(?:tonight|today|tomorrow|later)\b", re.I
)
"""When an accepted proposal is to happen ("好啊，今晚就练")."""
_WHEN: Final = re.compile(
    r"[\d一二两三四五六七八九十]+点(?:半|[\d一二两三四五六七八九十]+分?)?|(?:周|星期|礼拜)[一二三四五六日天]"
    r"|明天|后天|今晚|明早|明晚|\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\bat \d{1,2}(?::\d{2})?\b"
    r"|\b(?:tomorrow|tonight|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.I,
)
"""When something agreed is to happen ("九点", "周三", "tomorrow", "at 7")."""


def time_left_out(text: str, sentence: str) -> bool:
    """Whether ``sentence`` says when something happens ("每天晚上九点") and ``text`` leaves it out: an
    agreement without its time ("助手答应提醒用户喂药") is not what was agreed."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return any(when.lower() not in folded for when in _WHEN.findall(unicodedata.normalize("NFKC", sentence)))


_SETTLED: Final = words.pattern("settled")
"""Words that settle an agreement ("那就这么说定了"), whoever proposed it."""
_THEN: Final = re.compile(r"就(?!是)|\bthen\b", re.I)
"""What the speaker will then do, once accepted ("好，做完下一个就拍给你看")."""
_STATEMENTS: Final = frozenset({"episode", "observation", "fact"})
_REPORTED: Final = words.pattern("reported")
"""Words of what someone thinks or says: their view, observed, not a fact."""
_NAMING: Final = words.pattern("naming")
"""A name given ("它叫豆豆", "His name is Biscuit"): a lasting fact, not something that happened."""

_DONE: Final = re.compile(
    r"(?<!为)了(?!解)|(?<![不难])过(?![敏去])|完(?![全美整善])"
    r"|\b(?:\w+ed|went|ran|saw|got|made|did|had|was|were|took|came|bought|left|began|became)\b",
    re.I,
)
"""Words that something happened (Chinese aspect markers, English past forms); not the same
characters in "为了", "不过", "过敏", "完全"."""


def tells_of_done(text: str) -> bool:
    """Whether ``text`` says that something happened ("去了", "went"), rather than will or does."""
    return bool(_DONE.search(text))


def kind_by_words(c: MemoryCandidate, sentence: str, *, dated: bool) -> MemoryCandidate:
    """What the words decide about an unkeyed item.

    A "fact" that is a plan is an observation of an intention, a dated one or one that tells of
    something done to something ("它把圣诞树推倒了") an episode, a like, dislike or request a
    preference, one whose state is passing ("还是", "最近", "快……了", "lately"), that states a habit
    ("一年就回去一两次", "always") or that reports what someone else thinks ("My sister thinks it's
    boring") an observation: a fact is a lasting state.
    A dated observation is an episode unless it names a feeling ("今天……好沮丧" stays how the user
    feels). An undated "episode" that gives a name ("His name is Biscuit") is a fact; one that states
    a habit ("每次", "always") or a state of now with nothing that happened ("现在住在西湖边上",
    "I'm closer to him now") is an observation, and so is one whose words tell of nothing that
    happened ("四川菜是我的最爱"), unless they state the speaker's like or dislike: then it is a
    preference. A "preference" whose quote states no like, dislike or request, or someone else's
    ("我同事小王特别爱吃羊肉串"), is an observation, and an observation of the speaker's own like or
    dislike ("一点都不爱，闻着就受不了") a preference. A statement in a sentence that opens by accepting
    ("好，就从今晚开始") and whose words commit to something, say when it happens ("好啊，今晚就练") or
    what the speaker will then do ("好，做完下一个就拍给你看") is an agreement. A plan word counts in the
    quote's own statement only (:func:`statement_of`: "打算在老家办几桌，我老家在江西九江" states a
    hometown). A keyed fact about the past loses its key: a key holds the current value."""
    if c.fact_key is not None:
        if isinstance(c.quote, str) and _PAST_STATE.search(c.quote):
            return replace(c, fact_key=None, subject=None if c.subject == "user" else c.subject, value=None)
        return c
    if not isinstance(c.quote, str):
        return c
    if c.kind in _STATEMENTS and _SETTLED.search(c.quote):
        return replace(c, kind="agreement")
    if c.kind in _STATEMENTS and _ACCEPTS.match(sentence):
        if _COMMITMENT.search(c.quote) or _SOON.search(c.quote) or _THEN.search(c.quote):
            return replace(c, kind="agreement")
    if c.kind == "observation" and _NAMING.search(c.quote) and not dated and not _TEMPORARY.search(c.quote):
        return replace(c, kind="fact")  # "His name is Biscuit"
    if c.kind == "observation" and dated and not _FEELING.search(c.quote):
        return replace(c, kind="episode")
    if c.kind == "observation" and _LIKES.search(c.quote) and not about_someone_else(c.quote, sentence):
        return replace(c, kind="preference")
    if c.kind == "episode" and not dated:
        if _NAMING.search(c.quote):
            return replace(c, kind="fact")
        if _HABIT.search(c.quote) or (speaks_of_now(c.quote) and not _DONE.search(c.quote)):
            return replace(c, kind="observation")
        if not _DONE.search(c.quote):
            own = not about_someone_else(c.quote, sentence)
            return replace(c, kind="preference" if own and _WANTS.search(c.quote) else "observation")
    if c.kind == "preference" and (not _WANTS.search(c.quote) or about_someone_else(c.quote, sentence)):
        return replace(c, kind="observation")
    if c.kind != "fact":
        return c
    if _PLANNED.search(statement_of(c.quote, sentence)):
        return replace(c, kind="observation")
    if _REPORTED.search(c.quote) and about_someone_else(c.quote, sentence):
        return replace(c, kind="observation")
    if dated or _DEED.search(c.quote):
        return replace(c, kind="episode")
    if _WANTS.search(c.quote):
        return replace(c, kind="preference")
    if _TEMPORARY.search(c.quote) or _HABIT.search(c.quote):
        return replace(c, kind="observation")
    return c


_OWN_COMMITMENT: Final = re.compile(
    r"我会|我来|我每|我一定|我保证|我答应|提醒你|以后我|下次我|"
    + _TOGETHER
    + r"|\b(?:I'll|I will|I'm going to|I promise|let's|let us|we'll|we will)\b",
    re.I,
)
"""Words of the assistant binding itself (or both speakers) to something."""
_ASSISTANT_BOUND: Final = re.compile(
    _OWN_COMMITMENT.pattern
    + r"|我可以|我帮|我给|我陪|帮你|陪你|记住|记下|要不要|"
    + r"\b(?:noted|would you like me|want me to|shall we|how about)\b",
    re.I,
)
"""What makes an assistant's agreement: it binds itself or both, notes what was asked, or proposes
("要不要下次拍给我看看？"); advice to the user ("下班记得好好睡一觉") binds nobody."""
_WITH_ME: Final = re.compile(r"[我咱]|\b(?:me|we|us|let's|i)\b", re.I)
"""A proposal names the assistant: "你们常一起爬山吗？" asks about the user's friends, proposes nothing."""
_ASKS_ASSISTANT: Final = re.compile(
    r"[你您](?!说|觉得|看|认为)|咱|一起|提醒我|帮我|陪我|\b(?:you|we|us|let's)\b", re.I
)
"""A user's question or condition that asks the assistant ("你能每天提醒我吗？", "要是你下次提醒我就好了")
or both ("咱们周末一起练吧？") proposes an agreement; "你说我要不要……" only asks its advice, and "我们" alone
may be the user and someone else ("假如我也去深圳，我们就不用异地了")."""
_USER_BINDS: Final = re.compile(_ASKS_ASSISTANT.pattern + "|" + _BINDING, re.I)
"""What makes a user's agreement: it asks the assistant or both, requests, or settles; a habit of the
user's own ("每周六去工作室") is none."""
_JOINT: Final = re.compile(_TOGETHER + r"|\b(?:let's|let us|together|we'll|we will)\b", re.I)
"""Words of a plan made together: an agreement, not the assistant's own growth."""
_LOOK_BACK: Final = words.pattern("look_back")
"""Words of looking back at what the assistant did: growth changes something the assistant did before."""


def assistant_kind(c: MemoryCandidate, source: str) -> MemoryCandidate:
    """The kind an assistant's item has by its words: the assistant keeps only its emotion,
    agreements and growth. Under any other kind, a quote that binds the assistant to something is an
    agreement, and one that names a feeling, with emotion values given, an emotion (other items stay
    as they are and are refused as ``kind_not_from_assistant``). Growth that is a plan made together
    ("Let's plan a routine together"), or a resolution that looks back at nothing the assistant did
    (``source``, the whole event, has none of :data:`_LOOK_BACK`: "下次我给你推荐几款好普洱", "明白，
    我会挑两百元以内的"), is an agreement: a promise, not a change; an "agreement" that only looks back
    ("Last time I pushed you to train harder") is growth, and so is an "emotion" that names no feeling
    but looks back and states a change ("是我说得太武断了，以后不会随便评价你的爱好")."""
    if not isinstance(c.quote, str):
        return c
    if c.kind == "growth" and not _LOOK_BACK.search(source):
        return replace(c, kind="agreement")
    if c.kind == "agreement" and _LOOK_BACK.search(c.quote) and not _COMMITMENT.search(c.quote):
        return replace(c, kind="growth")  # "Last time I pushed you to train harder": growth_quote
    if c.kind == "emotion" and not _FEELING.search(c.quote) and _LOOK_BACK.search(c.quote):
        if _RESOLUTION.search(c.quote):  # "是我说得太武断了，以后不会随便评价你的爱好": a change
            return replace(c, kind="growth", valence=None, arousal=None)
    if c.kind not in _ASSISTANT_KINDS:
        if c.valence is not None and _FEELING.search(c.quote):
            return replace(c, kind="emotion", fact_key=None, subject=None, value=None)
        if _OWN_COMMITMENT.search(c.quote):
            return replace(
                c, kind="agreement", fact_key=None, subject=None, value=None, valence=None, arousal=None
            )
    if c.kind == "growth" and _JOINT.search(c.quote):
        return replace(c, kind="agreement")
    return c


_SENTENCE: Final = re.compile(r"[^。！？!?；;\n]+[。！？!?；;\n]*")
_END_PUNCT: Final = "。！？!?；;，,\n \t"


def growth_quote(quote: str, source: str) -> str:
    """``quote`` and the sentences after it up to the one that states a change, when ``quote`` only
    looks back ("我之前总劝你早睡，好像没什么用" of "……。以后我换个方式，陪你做睡前放松。"): growth is
    what the assistant did before together with what it now does differently. Any other quote, or one
    with no such sentence after it, stays as it is."""
    at = source.find(quote) if quote else -1
    if at < 0 or _RESOLUTION.search(quote) or not _LOOK_BACK.search(quote):
        return quote
    end = at + len(quote)
    for match in _SENTENCE.finditer(source, end):
        if _RESOLUTION.search(match.group()):
            return source[at : match.end()].rstrip(_END_PUNCT)
    return quote


def extraction_rules(
    candidates: Sequence[MemoryCandidate], role: str, source: str, plan: RulePlan = ALL_ON
) -> list[list[Violation]]:
    """Refusals of the extraction flow beyond :mod:`yiji.domain.validation` (which every path applies):

    * ``kind_not_from_assistant``: from an assistant event, only the assistant's own emotion,
      agreements and growth;
    * ``conditional_or_question_not_fact``: an observation, emotion or growth quoted from a question
      or a condition (validation covers facts, preferences and episodes);
    * ``small_talk``: a quote that is only a greeting, thanks or acknowledgement, or an English one of a
      single content word (:func:`says_one_word`) unless it is an agreement ("Deal") or a feeling;
    * ``emotion_not_expressed``: an assistant's emotion whose quote names no feeling;
    * ``growth_not_stated``: growth whose quote says nothing of doing something differently;
    * ``agreement_not_stated``: an agreement whose quote states no commitment, request or rule, or an
      assistant's whose event binds neither the assistant nor both (advice: "下班记得好好睡一觉"), or
      whose question proposes nothing with the assistant ("你们常一起爬山吗？"), or a user's whose
      question or condition, or whose rule set by someone else ("我妈要求我每天写日记"), leaves the
      assistant out ("你说我要不要跟领导说清楚？", "If I get a 7, I'll apply to a school in Melbourne"), or
      that neither asks the assistant, requests, settles nor accepts ("我最近迷上了做陶艺，每周六去
      工作室").

    A rule that ``plan`` switches off refuses nothing."""
    out: list[list[Violation]] = []
    for c in candidates:
        found: list[Violation] = []
        if role == "assistant" and c.kind not in _ASSISTANT_KINDS:
            found.append(Violation("kind", Rule.KIND_NOT_FROM_ASSISTANT))
        quoted = isinstance(c.quote, str) and bool(c.quote.strip()) and c.quote in source
        if quoted and c.kind in _NOT_FROM_QUESTIONS:
            if is_question_or_condition(c.quote, source):
                found.append(Violation("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT))
        if quoted and (small_talk(c.quote) or (c.kind not in _ONE_WORD_KINDS and says_one_word(c.quote))):
            found.append(Violation("quote", Rule.SMALL_TALK))
        if quoted and role == "assistant" and c.kind == "emotion" and not _FEELING.search(c.quote):
            found.append(Violation("quote", Rule.EMOTION_NOT_EXPRESSED))
        if quoted and c.kind == "growth" and not _RESOLUTION.search(c.quote):
            found.append(Violation("quote", Rule.GROWTH_NOT_STATED))
        if quoted and c.kind == "agreement" and not _COMMITMENT.search(c.quote):
            found.append(Violation("quote", Rule.AGREEMENT_NOT_STATED))
        elif quoted and c.kind == "agreement" and role == "user":
            sentence = sentence_of(c.quote, source)
            asked = is_question_or_condition(c.quote, source) or about_someone_else(c.quote, source)
            if asked and not _ASKS_ASSISTANT.search(sentence):
                found.append(Violation("quote", Rule.AGREEMENT_NOT_STATED))
            elif not (_USER_BINDS.search(c.quote) or _ACCEPTS.match(sentence)):
                found.append(Violation("quote", Rule.AGREEMENT_NOT_STATED))
        elif quoted and c.kind == "agreement" and role == "assistant":
            asked = is_question_or_condition(c.quote, source)
            if not _ASSISTANT_BOUND.search(source) or (
                asked and not _WITH_ME.search(sentence_of(c.quote, source))
            ):
                found.append(Violation("quote", Rule.AGREEMENT_NOT_STATED))
        out.append([v for v in found if plan.on(v.rule)])
    return out
