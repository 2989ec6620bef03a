"""Deterministic synthetic bilingual conversation text for benchmarks and the demo archive."""

from __future__ import annotations

import random

__all__ = ["sentences"]

_ZH_SUBJECTS = ["我", "我妈妈", "我的同事", "我朋友小李", "我们团队", "我姐姐"]
_ZH_VERBS = ["喜欢", "讨厌", "正在学", "上周去了", "打算买", "经常聊起", "最近在读"]
_ZH_OBJECTS = [
    "杭州的西湖",
    "一本关于历史的书",
    "日本料理",
    "吉他",
    "跑步",
    "上海的新工作",
    "猫咪",
    "咖啡",
    "周末爬山",
    "新的编程语言",
    "古典音乐",
    "养花",
    "做饭",
    "旅行计划",
    "电影",
]
_EN_SUBJECTS = ["I", "My brother", "Our team", "My friend Sam", "My manager", "We"]
_EN_VERBS = ["love", "can't stand", "am learning", "visited", "plan to buy", "talked about", "read"]
_EN_OBJECTS = [
    "the lake in Hangzhou",
    "a history book",
    "sushi",
    "the guitar",
    "running",
    "a new job",
    "our cat",
    "coffee",
    "hiking on weekends",
    "a new programming language",
    "jazz",
    "gardening",
    "cooking",
    "a trip to Kyoto",
    "old movies",
]


def sentences(count: int, seed: int = 7) -> list[str]:
    """``count`` short sentences alternating Chinese and English, reproducible for a seed."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        if i % 2 == 0:
            out.append(
                f"{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_VERBS)}{rng.choice(_ZH_OBJECTS)}，第{i}次提到。"
            )
        else:
            out.append(
                f"{rng.choice(_EN_SUBJECTS)} {rng.choice(_EN_VERBS)} {rng.choice(_EN_OBJECTS)} (note {i})."
            )
    return out
