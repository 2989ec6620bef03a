"""The fact keys extraction may give a memory: one spelling per property, in every language.

A single-valued fact closes the interval of the previous value under the same ``(subject, fact_key)``,
so a key a model invents ("home.location" beside "home.city") splits one property's history in two.
Extraction therefore offers the model a fixed vocabulary and keeps a proposed key only when it is in
the vocabulary; any other key is dropped and the memory stays an ordinary, unkeyed one. Each key
also fixes its kind (a dislike is a ``preference``, a city a ``fact``).

The vocabulary is configurable (``[extraction] fact_keys``); keys not listed here get kind ``fact``
and no description. Manual derivation and corrections are not limited to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_FACT_KEYS", "KNOWN_KEYS", "FactKey", "vocabulary"]


@dataclass(frozen=True, slots=True)
class FactKey:
    """A key of the vocabulary: its kind, what it means (shown to the model) and, for a key that a
    plain statement does not fill, the words a quote must have for it (``stated_by``, a regular
    expression: "我特别喜欢吃辣" states a like, not a favourite)."""

    key: str
    kind: str
    meaning: str
    stated_by: re.Pattern[str] | None = None
    moved_by: re.Pattern[str] | None = None
    moved_to: str | None = None

    def stated_in(self, quote: str) -> bool:
        """Whether ``quote`` has the words this key needs (always, for a key that needs none)."""
        return self.stated_by is None or bool(self.stated_by.search(quote))

    def belongs_elsewhere(self, quote: str) -> bool:
        """Whether ``quote`` is about something this key does not mean (``moved_by``): "我最喜欢喝
        普洱茶" is a drink, not a food; "专业是新闻" a subject of study, not a job; "我对海鲜过敏" an
        allergy, not a dislike. It then belongs under ``moved_to``, or under no key when that is
        ``None``."""
        return self.moved_by is not None and bool(self.moved_by.search(quote))


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


_EATING: Final = (
    r"吃|食|菜|饭|餐|味|\b(?:eat\w*|ate|food\w*|dish\w*|meals?|tast\w*|flavou?r\w*|cuisine|snack\w*)\b"
)
"""Words of eating or food: a food key's quote names them, since a favourite or a dislike as such can be
anything ("最喜欢弹《晴天》", "I don't like stretching", "Britpop is my favourite thing")."""


def _about_food(attitude: str) -> re.Pattern[str]:
    """The words of ``attitude`` and words of eating (:data:`_EATING`), both somewhere in the quote."""
    return re.compile(rf"^(?=.*(?:{attitude}))(?=.*(?:{_EATING}))", re.I | re.S)


_DRINK_NOT_FOOD: Final = re.compile(
    r"^(?!.*(?:吃|菜|饭|\beat|\bfood|\bdish|\bmeal)).*(?:喝|茶|咖啡|饮料|果汁|酒|\bdrink|\bcoffee|\btea\b|\bjuice)",
    re.I | re.S,
)
"""A drink and no food: words of drinking, none of eating."""
_PET_NAMED: Final = (
    r"^(?=.*(?:{pet}|它|\b(?:it|its|he|his|she|her)\b))(?=.*(?:叫|名|\b(?:name[ds]?|call\w*)\b))"
)
"""A pet's name given: a name word, and the pet or a pronoun that can stand for it ("它叫豆豆", "His
name is Biscuit"); "小名叫糯米" names a child, "它把圣诞树推倒了" names no one."""

KNOWN_KEYS: Final[Mapping[str, FactKey]] = {
    k.key: k
    for k in (
        FactKey(
            "home.city",
            "fact",
            "现在住的城市 / city the user lives in now",
            _words(r"住|搬|定居|安家|落户|\b(?:live[sd]?|living|move[sd]?|moving|based)\b"),
        ),
        FactKey(
            "hometown",
            "fact",
            "家乡 / where the user grew up",
            _words(r"老家|家乡|故乡|出生|长大|是[^，。！？]{1,8}人|\b(?:grew up|hometown|born|from)\b"),
        ),
        FactKey(
            "job.employer",
            "fact",
            "工作单位或公司 / employer",
            _words(
                r"公司|单位|上班|工作|就职|入职|任职|供职|\b(?:work(?:s|ed|ing)?|job|employ\w*|join\w*|company)\b"
            ),
        ),
        FactKey(
            "job.title",
            "fact",
            "职业或职位 / occupation",
            _words(r"当|做|是|担任|职|工作|干|\b(?:job|work(?:s|ed|ing)?|as an?|i'?m an?|i am an?)\b"),
            _words(r"专业|主修|学位|\b(?:major(?:ing|ed)?|degree|stud(?:y|ies|ying))\b"),
        ),
        FactKey(
            "school",
            "fact",
            "在读的学校 / school or university attended now",
            _words(r"学|读|念书|\b(?:school|university|college|stud(?:y|ies|ying))\b"),
        ),
        FactKey("birthday", "fact", "生日 / birthday", _words(r"生日|出生|\b(?:birthday|born)\b")),
        FactKey(
            "pet.cat.name",
            "fact",
            "猫的名字 / the cat's name",
            _words(_PET_NAMED.format(pet=r"猫|\b(?:cat|kitten)\b")),
        ),
        FactKey(
            "pet.dog.name",
            "fact",
            "狗的名字 / the dog's name",
            _words(_PET_NAMED.format(pet=r"狗|\b(?:dog|pupp\w+)\b")),
        ),
        FactKey(
            "food.dislike",
            "preference",
            "不吃或讨厌的食物 / a food the user avoids",
            _about_food(
                r"不[吃喝碰]|讨厌|不喜欢|不爱|受不了|忌口|吃不了|\b(?:hate|dislike|don't|do not|never"
                r"|can't|cannot|avoid)\b"
            ),
            _words(r"过敏|\ballerg\w*"),  # an allergy lasts: no dislike that a later one replaces
        ),
        FactKey(
            "food.favorite",
            "preference",
            "最爱的食物 / favourite food",
            _about_food(r"最|\b(?:favou?rite|best|most)\b"),
            _DRINK_NOT_FOOD,
            "preference.drink",
        ),
        FactKey(
            "preference.drink",
            "preference",
            "现在常喝、爱喝的饮品 / usual drink",
            _words(r"喝|茶|咖啡|饮|\b(?:drink\w*|coffee|tea)\b"),
        ),
    )
}
"""Keys yiji knows, with their kind and meaning."""

DEFAULT_FACT_KEYS: Final = tuple(KNOWN_KEYS)
"""The vocabulary when the configuration names none."""


def vocabulary(keys: Iterable[str]) -> dict[str, FactKey]:
    """The :class:`FactKey` of every key in ``keys`` (unknown keys: kind ``fact``, no meaning)."""
    return {key: KNOWN_KEYS.get(key) or FactKey(key, "fact", "") for key in keys}
