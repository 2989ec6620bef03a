"""Deterministic synthetic bilingual conversation text for benchmarks and the demo archive.

Sentences combine a subject, a verb, an optional place or time and an object drawn from an
adjective x noun vocabulary (over 2,000 objects per language), with Zipf-like weights, so term
frequencies resemble a conversation archive: a few topics are common, most are rare. Every sentence
also carries a running number, which makes each one unique.
"""

from __future__ import annotations

import itertools
import random

__all__ = ["sentences", "vocabulary"]

_ZH_SUBJECTS = [
    "我",
    "我妈妈",
    "我的同事",
    "我朋友小李",
    "我们团队",
    "我姐姐",
    "我爸爸",
    "室友",
    "老板",
    "我哥哥",
]
_ZH_VERBS = [
    "喜欢",
    "讨厌",
    "正在学",
    "上周去了",
    "打算买",
    "经常聊起",
    "最近在读",
    "推荐了",
    "忘不了",
    "想试试",
    "修好了",
    "弄丢了",
    "收到了",
    "拍了",
    "画了",
    "写了一篇关于",
]
_ZH_WHERE = ["", "在杭州", "在上海", "在北京", "在公司", "周末", "昨天", "去年夏天", "在老家", "下班后"]
_ZH_ADJ = [
    "红色的",
    "旧的",
    "新的",
    "小小的",
    "昂贵的",
    "便宜的",
    "日本的",
    "法国的",
    "手工的",
    "复古的",
    "安静的",
    "热闹的",
    "古老的",
    "现代的",
    "有趣的",
    "奇怪的",
    "温暖的",
    "冰冷的",
    "蓝色的",
    "绿色的",
    "木头的",
    "透明的",
    "圆形的",
    "方形的",
    "巨大的",
    "迷你的",
    "甜的",
    "辣的",
    "苦的",
    "香的",
]
_ZH_NOUNS = [
    "自行车",
    "吉他",
    "咖啡机",
    "相机",
    "茶壶",
    "书架",
    "花园",
    "小说",
    "电影",
    "钢琴",
    "背包",
    "手表",
    "蛋糕",
    "面包",
    "火锅",
    "寿司",
    "雨伞",
    "台灯",
    "沙发",
    "地毯",
    "风筝",
    "帐篷",
    "滑板",
    "耳机",
    "键盘",
    "画册",
    "陶罐",
    "围巾",
    "毛衣",
    "帽子",
    "花瓶",
    "盆栽",
    "鱼缸",
    "鸟笼",
    "邮票",
    "唱片",
    "剧本",
    "地图",
    "日记",
    "游戏",
    "拼图",
    "棋盘",
    "灯笼",
    "扇子",
    "砚台",
    "毛笔",
    "杯子",
    "碗",
    "餐厅",
    "博物馆",
    "咖啡馆",
    "书店",
    "公园",
    "湖",
    "山",
    "海滩",
    "寺庙",
    "市场",
    "剧院",
    "车站",
    "猫",
    "狗",
    "兔子",
    "鹦鹉",
    "金鱼",
    "乌龟",
    "马",
    "熊猫",
    "狐狸",
    "刺猬",
]
_EN_SUBJECTS = ["I", "My brother", "Our team", "My friend Sam", "My manager", "We", "My mom", "My roommate"]
_EN_VERBS = [
    "love",
    "can't stand",
    "am learning about",
    "visited",
    "plan to buy",
    "talked about",
    "read about",
    "recommended",
    "fixed",
    "lost",
    "received",
    "painted",
    "photographed",
    "wrote about",
    "miss",
]
_EN_WHERE = [
    "",
    "in Hangzhou",
    "in Shanghai",
    "at work",
    "last weekend",
    "yesterday",
    "back home",
    "in Kyoto",
]
_EN_ADJ = [
    "red",
    "old",
    "new",
    "tiny",
    "expensive",
    "cheap",
    "Japanese",
    "French",
    "handmade",
    "vintage",
    "quiet",
    "busy",
    "ancient",
    "modern",
    "funny",
    "strange",
    "warm",
    "cold",
    "blue",
    "green",
    "wooden",
    "glass",
    "round",
    "square",
    "huge",
    "little",
    "sweet",
    "spicy",
    "bitter",
    "fragrant",
]
_EN_NOUNS = [
    "bicycle",
    "guitar",
    "coffee maker",
    "camera",
    "teapot",
    "bookshelf",
    "garden",
    "novel",
    "movie",
    "piano",
    "backpack",
    "watch",
    "cake",
    "bread",
    "hotpot",
    "sushi",
    "umbrella",
    "lamp",
    "sofa",
    "rug",
    "kite",
    "tent",
    "skateboard",
    "headphones",
    "keyboard",
    "sketchbook",
    "vase",
    "scarf",
    "sweater",
    "hat",
    "plant",
    "aquarium",
    "stamp",
    "record",
    "script",
    "map",
    "diary",
    "board game",
    "puzzle",
    "chessboard",
    "lantern",
    "fan",
    "mug",
    "bowl",
    "restaurant",
    "museum",
    "cafe",
    "bookstore",
    "park",
    "lake",
    "mountain",
    "beach",
    "temple",
    "market",
    "theater",
    "station",
    "cat",
    "dog",
    "rabbit",
    "parrot",
    "goldfish",
    "turtle",
    "horse",
    "panda",
    "fox",
    "hedgehog",
]


def vocabulary(lang: str) -> list[str]:
    """Every object phrase of a language, most frequent first."""
    if lang == "zh":
        return [a + n for n, a in itertools.product(_ZH_NOUNS, _ZH_ADJ)]
    return [f"{a} {n}" for n, a in itertools.product(_EN_NOUNS, _EN_ADJ)]


def _zipf_weights(size: int) -> list[float]:
    return [1.0 / (rank + 1) ** 0.8 for rank in range(size)]


def sentences(count: int, seed: int = 7) -> list[str]:
    """``count`` short sentences alternating Chinese and English, reproducible for a seed."""
    rng = random.Random(seed)
    zh, en = vocabulary("zh"), vocabulary("en")
    rng.shuffle(zh)
    rng.shuffle(en)
    zh_objects = rng.choices(zh, weights=_zipf_weights(len(zh)), k=(count + 1) // 2)
    en_objects = rng.choices(en, weights=_zipf_weights(len(en)), k=count // 2)
    out = []
    for i in range(count):
        if i % 2 == 0:
            out.append(
                f"{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_WHERE)}{rng.choice(_ZH_VERBS)}"
                f"{zh_objects[i // 2]}，第{i}次提到。"
            )
        else:
            out.append(
                f"{rng.choice(_EN_SUBJECTS)} {rng.choice(_EN_VERBS)} a {en_objects[i // 2]} "
                f"{rng.choice(_EN_WHERE)} (note {i})."
            )
    return out
