"""The collector pause around batch writes: shared by threads, restored after errors, never forced on."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from yiji.service.base import collector_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_resumes_after_the_batch_and_after_an_error() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("batch failed")
    assert gc.isenabled()


def test_overlapping_batches_share_one_pause() -> None:
    inside = threading.Event()
    release = threading.Event()

    def other_batch() -> None:
        with collector_paused():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other_batch)
    with collector_paused():
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled()  # the other batch still runs
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
