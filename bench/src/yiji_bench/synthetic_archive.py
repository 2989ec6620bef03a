"""A synthetic bilingual archive (events with one derived memory each) for latency benchmarks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from yiji.models import EventIn
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.service import MemoryService
from yiji_bench.synthetic import sentences

__all__ = ["QUERIES", "START", "STEP", "archive_end", "build_archive"]

START = datetime(2024, 1, 1, tzinfo=UTC)
STEP = timedelta(minutes=10)
"""Event ``i`` of a synthetic archive occurred at ``START + i * STEP``."""


def archive_end(count: int) -> datetime:
    """When the last event of a ``count``-event synthetic archive occurred."""
    return START + STEP * max(count - 1, 0)


QUERIES = [
    "红色的自行车",
    "复古相机",
    "日本的茶壶",
    "安静的书店",
    "古老的寺庙",
    "吉他",
    "咖啡机",
    "熊猫",
    "火锅",
    "在杭州喜欢什么",
    "我妈妈推荐了什么",
    "去年夏天拍了",
    "我的同事弄丢了",
    "小说",
    "手工的围巾",
    "猫",
    "书",
    "湖",
    "vintage camera",
    "red bicycle",
    "Japanese teapot",
    "quiet bookstore",
    "ancient temple",
    "guitar",
    "coffee maker",
    "panda",
    "hotpot",
    "what did my mom recommend",
    "lost a watch in Kyoto",
    "novel",
    "handmade scarf",
    "cat",
    "board game",
    "spicy hotpot in Shanghai",
    "my friend Sam",
    "note 4242",
    "第778次",
    "周末",
    "wooden chessboard",
    "绿色的盆栽",
]


def build_archive(
    service: MemoryService,
    count: int,
    *,
    persona: str = "bench",
    project: str = "bench",
    batch: int = 5000,
    progress: Callable[[int], object] | None = None,
) -> None:
    """``count`` events in 50-turn sessions, alternating user and assistant turns.

    Each user turn gets two derived memories; assistant turns stay raw events (the fallback path), so
    ``count`` events come with ``count`` memories.
    """
    texts = sentences(count, seed=3)
    for offset in range(0, count, batch):
        chunk = range(offset, min(offset + batch, count))
        service.event_submit_many(
            [
                EventIn(
                    id=f"syn-{i}",
                    persona=persona,
                    project=project,
                    session=f"s{i // 50}",
                    role="user" if i % 2 == 0 else "assistant",
                    source="bench",
                    text=texts[i],
                    occurred_at=START + STEP * i,
                )
                for i in chunk
            ]
        )
        service.memory_derive_many(
            [
                DeriveRequest(
                    event_id=f"syn-{i}",
                    persona=persona,
                    project=project,
                    memories=[
                        MemoryIn(
                            text=texts[i].split("，")[0],
                            quote=texts[i].split("，")[0],
                            kind="episode",
                            basis="user_statement",
                            confidence=0.7,
                        ),
                        MemoryIn(
                            text=f"提到次数：{texts[i].split('，')[1].rstrip('。')}",
                            quote=texts[i].split("，")[1].rstrip("。"),
                            kind="observation",
                            basis="user_statement",
                            confidence=0.5,
                        ),
                    ],
                )
                for i in chunk
                if i % 2 == 0
            ]
        )
        if progress:
            progress(len(chunk))
