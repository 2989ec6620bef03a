from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from yiji.domain import forgetting
from yiji.domain.forgetting import (
    CUES_LABEL,
    GIST_LABEL,
    Presentation,
    decade_label,
    exact_time_label,
    freshness,
    present,
    topic_cues,
)

NOW = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
DAY = timedelta(days=1)
TINY = timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("age", "half_life", "expected"),
    [
        (timedelta(0), 180.0, 1.0),
        (-DAY, 180.0, 1.0),
        (-1000 * DAY, 180.0, 1.0),
        (180 * DAY, 180.0, 0.5),
        (360 * DAY, 180.0, 0.25),
        (90 * DAY, 180.0, 0.5**0.5),
        (30 * DAY, 30.0, 0.5),
        (12 * timedelta(hours=1), 1.0, 0.5**0.5),
    ],
)
def test_freshness(age: timedelta, half_life: float, expected: float) -> None:
    assert math.isclose(freshness(age, half_life), expected, rel_tol=1e-12)


def test_freshness_default_half_life_is_180_days() -> None:
    assert forgetting.FRESHNESS_HALF_LIFE_DAYS == 180.0
    assert freshness(180 * DAY) == 0.5


def test_freshness_decreases_with_age() -> None:
    values = [freshness(n * DAY) for n in range(0, 2000, 50)]
    assert values == sorted(values, reverse=True)
    assert all(0 < v <= 1 for v in values)


@pytest.mark.parametrize("half_life", [0.0, -1.0, math.nan])
def test_freshness_rejects_non_positive_half_life(half_life: float) -> None:
    with pytest.raises(ValueError, match="half_life_days"):
        freshness(DAY, half_life)


# -- presentation ----------------------------------------------------------------------------

EPISODE = "我们在京都看了红叶，聊了很久《三体》和刘慈欣。"
GIST = "京都赏红叶"

# (name, kind, gist, age, mode, time label, faded, coarsened)
PRESENT_CASES = [
    ("new episode", "episode", GIST, 10 * DAY, "detailed", "exact", False, False),
    ("future episode", "episode", GIST, -10 * DAY, "detailed", "exact", False, False),
    ("episode exactly 180 days", "episode", GIST, 180 * DAY, "detailed", "exact", False, False),
    ("episode just past 180 days", "episode", GIST, 180 * DAY + TINY, "gist", "date", True, False),
    ("observation past 180 days", "observation", GIST, 181 * DAY, "gist", "date", True, False),
    ("emotion past 180 days", "emotion", GIST, 181 * DAY, "gist", "date", True, False),
    ("no gist past 180 days", "episode", None, 181 * DAY, "topic_cues", "date", True, False),
    ("blank gist past 180 days", "episode", "  ", 181 * DAY, "topic_cues", "date", True, False),
    ("episode exactly 730 days", "episode", GIST, 730 * DAY, "gist", "date", True, False),
    ("episode just past 730 days", "episode", GIST, 730 * DAY + TINY, "gist", "decade", True, True),
    ("no gist past 730 days", "emotion", None, 4000 * DAY, "topic_cues", "decade", True, True),
    ("old fact", "fact", GIST, 4000 * DAY, "detailed", "exact", False, False),
    ("old preference", "preference", None, 4000 * DAY, "detailed", "exact", False, False),
    ("old agreement", "agreement", GIST, 4000 * DAY, "detailed", "exact", False, False),
    ("old growth", "growth", None, 4000 * DAY, "detailed", "exact", False, False),
]


@pytest.mark.parametrize(
    ("kind", "gist", "age", "mode", "time_kind", "faded", "coarsened"),
    [case[1:] for case in PRESENT_CASES],
    ids=[case[0] for case in PRESENT_CASES],
)
def test_present(
    kind: str,
    gist: str | None,
    age: timedelta,
    mode: str,
    time_kind: str,
    faded: bool,
    coarsened: bool,
) -> None:
    valid_at = NOW - age
    shown = present(kind, EPISODE, gist, valid_at, NOW)
    assert shown.mode == mode
    assert shown.faded is faded
    assert shown.time_coarsened is coarsened
    expected_time = {
        "exact": exact_time_label(valid_at),
        "date": valid_at.date().isoformat(),
        "decade": decade_label(valid_at),
    }[time_kind]
    assert shown.time_label == expected_time
    if mode == "detailed":
        assert shown.text == EPISODE
        assert shown.label is None
        assert shown.cues == ()
    elif mode == "gist":
        assert shown.text == GIST
        assert shown.label == GIST_LABEL
    else:
        assert shown.label == CUES_LABEL
        assert "extracted" in shown.label
        assert shown.cues == topic_cues(EPISODE)
        assert shown.text == forgetting.CUE_SEPARATOR.join(shown.cues)
        assert shown.text != EPISODE


def test_present_labels() -> None:
    valid_at = datetime(2015, 6, 30, 23, 59, 59, tzinfo=UTC)
    assert present("fact", "x", None, valid_at, NOW).time_label == "2015-06-30T23:59:59Z"
    assert present("episode", "x", "g", valid_at, NOW).time_label == "2010s"
    assert present("episode", "x", "g", valid_at, datetime(2016, 1, 1, tzinfo=UTC)).time_label == (
        "2015-06-30"
    )


def test_present_uses_utc_calendar_for_labels() -> None:
    # 2020-01-01 03:00 at +08:00 is still 2019 in UTC
    valid_at = datetime(2020, 1, 1, 3, 0, tzinfo=timezone(timedelta(hours=8)))
    assert present("fact", "x", None, valid_at, NOW).time_label == "2019-12-31T19:00:00Z"
    assert present("episode", "x", "g", valid_at, NOW).time_label == "2010s"


def test_present_thresholds_are_configurable() -> None:
    valid_at = NOW - 11 * DAY
    assert present("episode", "t", "g", valid_at, NOW, gist_after_days=10).mode == "gist"
    assert present("episode", "t", "g", valid_at, NOW, gist_after_days=11).mode == "detailed"
    coarse = present("episode", "t", "g", valid_at, NOW, gist_after_days=10, coarsen_after_days=10.5)
    assert coarse.time_coarsened
    assert coarse.time_label == decade_label(valid_at)


def test_present_keeps_gist_text_trimmed_and_returns_presentation() -> None:
    shown = present("observation", "long text", "  short  ", NOW - 200 * DAY, NOW)
    assert shown == Presentation(
        mode="gist",
        text="short",
        time_label=(NOW - 200 * DAY).date().isoformat(),
        faded=True,
        time_coarsened=False,
        label=GIST_LABEL,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "rumor"}, "unknown memory kind"),
        ({"gist_after_days": -1.0}, "must not be negative"),
        ({"coarsen_after_days": -1.0}, "must not be negative"),
    ],
)
def test_present_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"kind": "episode", "text": "t", "gist": None, "valid_at": NOW, "now": NOW}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        present(**args)  # type: ignore[arg-type]


def test_present_rejects_naive_times() -> None:
    with pytest.raises(ValueError, match="naive"):
        present("episode", "t", None, datetime(2020, 1, 1), NOW)


# -- topic cues ------------------------------------------------------------------------------

CUE_CASES = [
    ("chinese nouns and names", "我昨天在北京看了一本书，特别喜欢猫和狗。", ("北京", "喜欢", "猫", "狗")),
    ("chinese names first", "我们聊了聊《三体》和刘慈欣，他很开心😊", ("三体", "刘慈欣", "开心")),
    ("chinese emotion", "我感到很难过，因为小猫去世了", ("难过", "小猫")),
    ("domain stopwords", "用户说她下周要去上海参加马拉松比赛", ("上海", "参加", "马拉松", "比赛")),
    ("repeats count once", "京都的红叶很美。京都真好，京都！", ("京都", "红叶", "美")),
    (
        "english phrase",
        "We talked about The Great Gatsby and her trip to Kyoto in 2019.",
        ("talked", "Great Gatsby", "trip", "Kyoto"),
    ),
    (
        "english salience cap",
        "The user felt anxious about the job interview at Google next Monday",
        ("felt", "anxious", "interview", "Google", "Monday"),
    ),
    ("mixed", "AI助手帮我修好了Python脚本的bug", ("AI", "修好", "Python", "脚本", "bug")),
    ("only function words", "嗯嗯好的", ()),
    ("only punctuation and numbers", "!!! 123, ... 2019", ()),
    ("empty", "", ()),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in CUE_CASES],
    ids=[case[0] for case in CUE_CASES],
)
def test_topic_cues(text: str, expected: tuple[str, ...]) -> None:
    assert topic_cues(text) == expected


def test_topic_cues_are_extractive_ordered_and_deterministic() -> None:
    text = "上周和Alice在Paris的Louvre Museum看了蒙娜丽莎，然后去塞纳河边吃了可丽饼，聊到了旅行计划和工作。"
    cues = topic_cues(text)
    assert cues == topic_cues(text)
    assert 0 < len(cues) <= forgetting.MAX_CUES
    positions = [text.index(cue) for cue in cues]
    assert positions == sorted(positions)


def test_topic_cues_caps() -> None:
    text = "北京 上海 广州 深圳 杭州 南京 成都"
    assert topic_cues(text, max_cues=2) == ("北京", "上海")
    assert len(topic_cues(text)) == forgetting.MAX_CUES
    assert topic_cues("Supercalifragilisticexpialidocious", max_cue_chars=5) == ("Super",)
    with pytest.raises(ValueError, match="positive"):
        topic_cues(text, max_cues=0)
