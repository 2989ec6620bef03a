"""The review queue in a real browser: twenty proposals reviewed by keyboard in headless Chromium against
``yiji ui`` as users run it, then the database checked. Needs what tests/test_ui_browser.py needs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .fakeprovider import FakeProvider
from .test_ui_browser import base_of, by_css, one, screenshots
from .ui_helpers import browser_session, seed_proposals, ui_server

pytestmark = pytest.mark.slow

COUNT = 20
REJECT = {1, 6, 11, 16}
SKIP = {7: "s", 13: "j"}
EDIT = 3
EDITED_TEXT = "用户家的第4只猫叫Luna，是只橘猫"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with browser_session("zh-CN", (1280, 1000)) as b:
        yield b


def press(b: Any, key: str, *, leaves_page: bool = True) -> None:
    """Type ``key`` where the focus is and, when it submits or navigates, wait for the next page."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    page = b.find_element(By.TAG_NAME, "html")
    ActionChains(b).send_keys(key).perform()
    if leaves_page:
        WebDriverWait(b, 10).until(expected_conditions.staleness_of(page))


def shown_id(b: Any) -> str:
    return str(one(b, "#proposal").get_attribute("data-memory-id"))


def test_review_twenty_proposals_by_keyboard(
    browser: Any, db_path: Path, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    ids = seed_proposals(db_path, fake_provider, COUNT)
    with ui_server(db_path) as url:
        browser.get(url)
        assert one(browser, "#review-count").text == str(COUNT)  # the header counts what waits
        browser.get(base_of(url) + "/review")
        assert "我家第1只猫叫豆豆" == one(browser, "#source-turn mark").text
        assert "豆豆真可爱！" in one(browser, "ol.turns").text  # the turn after the source
        for index, memory_id in enumerate(ids):
            assert shown_id(browser) == memory_id, index
            if index == 2:  # turns before and after the source, and the last decision's note
                browser.save_screenshot(str(screenshots(tmp_path) / "ui-review.png"))
            if index == EDIT:
                press(browser, "e", leaves_page=False)  # opens the form and focuses the text
                field = one(browser, "#edit-text")
                assert browser.switch_to.active_element == field
                field.send_keys(Keys.CONTROL, "a")
                field.send_keys(EDITED_TEXT)
                press(browser, Keys.ENTER)  # saves the edit; the proposal still waits
                assert shown_id(browser) == memory_id
                assert one(browser, "p.flash").text and one(browser, "h2.memory-title").text == EDITED_TEXT
                press(browser, "a")
            elif index in REJECT:
                press(browser, "r")
            elif index in SKIP:
                press(browser, SKIP[index])
            else:
                press(browser, "a")
        assert one(browser, "#skipped-all").text
        assert one(browser, "#review-count").text == str(len(SKIP))
        assert by_css(browser, "#proposal") == []

    conn = sqlite3.connect(db_path)
    try:
        rows = {
            r[0]: r[1:]
            for r in conn.execute("SELECT id, review_state, reviewed_by, reviewed_at, text FROM memories")
        }
    finally:
        conn.close()
    for index, memory_id in enumerate(ids):
        state, by, at, text = rows[memory_id]
        expected = "proposed" if index in SKIP else ("rejected" if index in REJECT else "accepted")
        assert state == expected, index
        assert (by, at is not None) == ((None, False) if index in SKIP else ("ui", True)), index
        if index == EDIT:
            assert text == EDITED_TEXT
    assert sum(1 for r in rows.values() if r[0] == "accepted") == COUNT - len(REJECT) - len(SKIP)
