"""The review UI in a real browser: headless Chromium driven by Selenium against ``yiji ui`` as users run it.

Needs the system Chromium and its driver (Debian ``chromium``, ``chromium-driver``) and a CJK font
(``fonts-noto-cjk``); without them these tests skip, except in CI (``YIJI_CI_STRICT=1``) where they fail.
Screenshots of the main pages go to ``tmp_path`` (or to ``$YIJI_UI_SCREENSHOTS`` when set, which is how
the ones under ``docs/`` are made).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from .conftest import run_yiji
from .ui_helpers import SCRIPT_TEXT, Seeded, browser_session, seed, ui_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with browser_session("zh-CN") as b:
        yield b


@pytest.fixture
def seeded(db_path: Path) -> Seeded:
    return seed(db_path, datetime.now(UTC))


@pytest.fixture
def url(db_path: Path, seeded: Seeded) -> Iterator[str]:
    with ui_server(db_path) as link:
        yield link


def base_of(link: str) -> str:
    parts = urlsplit(link)
    return f"{parts.scheme}://{parts.netloc}"


def screenshots(tmp_path: Path) -> Path:
    target = Path(os.environ.get("YIJI_UI_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


def by_css(b: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(b.find_elements(By.CSS_SELECTOR, selector))


def one(b: Any, selector: str) -> Any:
    found = by_css(b, selector)
    assert found, f"nothing matches {selector}"
    return found[0]


def navigate(b: Any, element: Any) -> None:
    """Click ``element`` and wait until the page it was on has been replaced by the next one.

    Without the wait, a lookup right after the click can find the old page's element, which then goes
    stale while it is read.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    page = b.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(b, 10).until(expected_conditions.staleness_of(page))


def click_link(b: Any, text: str) -> None:
    from selenium.webdriver.common.by import By

    navigate(b, b.find_element(By.LINK_TEXT, text))


def test_list_then_open_a_memory_with_its_highlighted_quote(
    browser: Any, url: str, seeded: Seeded, tmp_path: Path
) -> None:
    shots = screenshots(tmp_path)
    browser.get(url)
    assert "token=" not in browser.current_url  # the token moved into a cookie
    assert one(browser, ".top nav a.active").text == "记忆"
    current = [e.text for e in by_css(browser, ".memory .memory-text")]
    assert "用户住在上海" in current and "用户住在杭州" not in current
    browser.get(base_of(url) + "/memories?view=history")
    texts = [e.text for e in by_css(browser, ".memory .memory-text")]
    assert {"用户住在杭州", "用户住在上海", "Sunrise hike on Baoshi Hill"} <= set(texts)  # the old hike faded
    assert "第 1–6 条，共 6 条" in one(browser, ".count").text
    browser.save_screenshot(str(shots / "ui-memories.png"))
    click_link(browser, "用户住在杭州")
    assert one(browser, "h1.memory-title").text == "用户住在杭州"
    assert one(browser, ".source-text mark").text == "我住在杭州"
    assert "最近工作挺忙的" in one(browser, ".source-text").text
    assert "用户" in one(browser, ".who .badge").text
    lanes = [e.text for e in by_css(browser, ".timeline .lane-label")]
    assert lanes[0].startswith("用户住在杭州 2026-02-28") or lanes[0].startswith("用户住在杭州 2026-03-01")
    assert lanes[1].startswith("用户住在上海") and lanes[1].endswith("至今")
    assert [e.text for e in by_css(browser, "#lineage ul.plain a")] == ["用户每天早上喝龙井茶"]  # co-derived
    browser.save_screenshot(str(shots / "ui-memory.png"))


def test_correct_a_memory_and_see_the_lineage(browser: Any, url: str, seeded: Seeded, tmp_path: Path) -> None:
    browser.get(url)
    browser.get(base_of(url) + f"/memories/{seeded.tea}")
    assert "这条记错了" in one(browser, ".explain").text and "这件事变了" in one(browser, ".explain").text
    one(browser, "textarea[name=statement]").send_keys("我每天早上喝的是碧螺春，不是龙井。")
    navigate(browser, one(browser, "#correct button[type=submit]"))
    assert one(browser, "h1.memory-title").text == "我每天早上喝的是碧螺春，不是龙井。"
    assert "/memories/mem_" in browser.current_url and seeded.tea not in browser.current_url
    lineage = by_css(browser, "ol.lineage li")
    assert len(lineage) == 2
    assert "用户每天早上喝龙井茶" in lineage[0].text and "错误" in lineage[0].text
    assert "更正" in lineage[1].text and "本条" in lineage[1].text
    assert one(browser, ".flash").text == "更正已保存：错误的记忆已撤销，由这条记忆取代。"
    relation = one(browser, "ul.relations li").text
    assert relation == "本条 更正 → 用户每天早上喝龙井茶"  # texts, not id fragments
    assert one(browser, ".who .badge").text.endswith("用户")
    browser.save_screenshot(str(screenshots(tmp_path) / "ui-lineage.png"))
    browser.get(base_of(url) + "/memories?view=revoked")
    assert [e.text for e in by_css(browser, ".memory .memory-text")] == ["用户每天早上喝龙井茶"]
    browser.get(base_of(url) + f"/memories/{seeded.tea}")
    assert by_css(browser, "textarea[name=statement]") == []  # a revoked memory offers no second correction


def test_a_correction_that_breaks_a_rule_is_explained(browser: Any, url: str, seeded: Seeded) -> None:
    browser.get(url)
    browser.get(base_of(url) + f"/memories/{seeded.tea}")
    one(browser, "textarea[name=statement]").send_keys("我喝碧螺春")
    one(browser, "#correct summary").click()
    one(browser, "input[name=quote]").send_keys("这句话不在陈述里")
    navigate(browser, one(browser, "#correct button[type=submit]"))
    assert "quote" in one(browser, "#correct .error").text
    assert one(browser, "textarea[name=statement]").get_attribute("value") == "我喝碧螺春"  # the form is kept
    browser.get(base_of(url) + "/memories?view=revoked")
    assert by_css(browser, ".memory") == []


def test_delete_with_preview_and_typed_confirmation(
    browser: Any, url: str, seeded: Seeded, db_path: Path, tmp_path: Path
) -> None:
    browser.get(url)
    browser.get(base_of(url) + f"/memories/{seeded.hike}")
    navigate(browser, one(browser, ".danger-zone a.button"))
    preview = one(browser, ".danger-zone").text
    assert "ev-hike" in preview and seeded.hike in preview and "We hiked up Baoshi Hill" in preview
    browser.save_screenshot(str(screenshots(tmp_path) / "ui-delete.png"))
    one(browser, "input[name=confirm]").send_keys("不删")
    navigate(browser, one(browser, "form.confirm button"))
    assert "没有删除任何内容" in one(browser, ".error").text
    assert seeded.hike in one(browser, ".danger-zone").text  # still previewed, still there
    one(browser, "input[name=confirm]").send_keys("删除")
    navigate(browser, one(browser, "form.confirm button"))
    assert "已删除 1 个事件和 1 条记忆" in one(browser, ".flash").text
    assert browser.current_url.endswith("/memories")  # a redirect: reloading deletes nothing again
    browser.save_screenshot(str(screenshots(tmp_path) / "ui-deleted.png"))
    browser.refresh()
    assert by_css(browser, ".flash") == []  # the confirmation is shown once
    browser.get(base_of(url) + "/memories?view=history")
    assert "Sunrise hike on Baoshi Hill" not in [e.text for e in by_css(browser, ".memory .memory-text")]
    browser.get(base_of(url) + f"/memories/{seeded.hike}")
    assert one(browser, ".error").text  # not found
    doctor = run_yiji(
        "--db", str(db_path), "doctor", "--json",
        "--scan-for", "ev-hike", "--scan-for", seeded.hike, "--scan-for", "Baoshi Hill",
    )  # fmt: skip
    assert doctor.code == 0, doctor.err
    assert doctor.json()["ok"] is True
    assert all(s["found_in"] == [] for s in doctor.json()["scan"])


def test_script_text_is_shown_as_text(browser: Any, url: str, seeded: Seeded) -> None:
    browser.get(url)
    browser.get(base_of(url) + "/memories?text=" + "提醒")
    assert [e.text for e in by_css(browser, ".memory .memory-text")] == [SCRIPT_TEXT]
    assert browser.title != "pwned"
    assert by_css(browser, "main script") == []
    browser.get(base_of(url) + f"/memories/{seeded.script}")
    assert one(browser, "h1.memory-title").text == SCRIPT_TEXT
    assert one(browser, ".source-text mark").text == SCRIPT_TEXT
    assert browser.title != "pwned" and by_css(browser, "script") == []


def test_a_write_without_the_csrf_token_is_refused(browser: Any, url: str, seeded: Seeded) -> None:
    browser.get(url)
    browser.get(base_of(url) + f"/memories/{seeded.tea}")
    one(browser, "textarea[name=statement]").send_keys("我喝碧螺春")
    browser.execute_script("document.querySelector('#correct input[name=csrf]').value = 'forged';")
    navigate(browser, one(browser, "#correct button[type=submit]"))
    assert "安全令牌" in one(browser, ".error").text
    browser.get(base_of(url) + "/memories?view=revoked")
    assert by_css(browser, ".memory") == []  # nothing was corrected


def test_token_host_csrf_and_origin_checks_over_http(url: str, seeded: Seeded) -> None:
    base = base_of(url)
    with httpx.Client(base_url=base, follow_redirects=False) as anonymous:
        assert anonymous.get("/memories").status_code == 403
        assert anonymous.get("/memories?token=wrong").status_code == 403
    with httpx.Client(base_url=base, follow_redirects=False) as client:
        first = client.get(url)
        assert first.status_code == 303 and "token" not in first.headers["location"]
        assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
        page = client.get("/memories", headers={"Accept-Language": "en-US,en;q=0.9"})
        assert page.status_code == 200 and ">Memories<" in page.text
        assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none' covers it
        assert "default-src 'none'" in page.headers["content-security-policy"]
        refused = client.get("/memories", headers={"Host": "evil.example"})
        assert refused.status_code == 421 and "127.0.0.1" in refused.text
        rebinding = client.get("/memories", headers={"Host": "127.0.0.1.evil.example:80"})
        assert rebinding.status_code == 421
        detail = client.get(f"/memories/{seeded.tea}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', detail.text)
        assert csrf
        target = f"/memories/{seeded.tea}/correct"
        missing = client.post(target, data={"statement": "我喝碧螺春"})
        assert missing.status_code == 403
        foreign = client.post(
            target,
            data={"statement": "我喝碧螺春", "csrf": csrf.group(1)},
            headers={"Origin": "http://evil.example"},
        )
        assert foreign.status_code == 403
        done = client.post(
            target, data={"statement": "我喝碧螺春", "csrf": csrf.group(1)}, headers={"Origin": base}
        )
        assert done.status_code == 303 and done.headers["location"].startswith("/memories/mem_")


def test_screenshots_of_recall_and_persona(browser: Any, url: str, seeded: Seeded, tmp_path: Path) -> None:
    shots = screenshots(tmp_path)
    browser.get(url)
    browser.get(base_of(url) + "/recall?q=" + "龙井茶")
    first = one(browser, ".memories .memory")
    assert "用户每天早上喝龙井茶" in first.text
    why = one(browser, ".why").text
    assert "词语匹配" in why and "新鲜度" in why and "lexical" not in why and "线索" not in why
    browser.save_screenshot(str(shots / "ui-recall.png"))
    browser.get(base_of(url) + "/persona")
    assert "第 2 版" in one(browser, ".version h3").text
    assert "中性默认" in by_css(browser, ".version h3")[-1].text
    assert "neutral default" not in one(browser, "main").text
    assert one(browser, ".gauge .value").text.startswith("+0.")
    browser.save_screenshot(str(shots / "ui-persona.png"))
    assert (shots / "ui-persona.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def browser_en() -> Iterator[Any]:
    with browser_session("en-US") as b:
        yield b


def test_read_a_conversation_and_go_back_and_forth(
    browser: Any, url: str, seeded: Seeded, tmp_path: Path
) -> None:
    shots = screenshots(tmp_path)
    browser.get(url)
    click_link(browser, "对话")
    assert one(browser, ".top nav a.active").text == "对话"
    assert [e.text for e in by_css(browser, ".session-link")] == ["s-2026", "s-2025"]
    browser.save_screenshot(str(shots / "ui-conversations.png"))
    click_link(browser, "s-2026")
    turns = by_css(browser, "li.turn")
    assert len(turns) == 4 and "最近工作挺忙的" in turns[0].text
    assert [e.text for e in by_css(turns[0], "ul.derived .memory-text")] == [
        "用户住在杭州",
        "用户每天早上喝龙井茶",
    ]
    assert "第 1–4 个事件，共 4 个" in one(browser, ".count").text
    browser.save_screenshot(str(shots / "ui-conversation.png"))
    navigate(browser, by_css(turns[0], "ul.derived .memory-text")[1])
    assert one(browser, "h1.memory-title").text == "用户每天早上喝龙井茶"
    navigate(browser, one(browser, "a.in-conversation"))
    assert browser.current_url.endswith("#e1")
    target = one(browser, "li.turn:target")
    assert target.get_attribute("id") == "e1" and "我住在杭州" in target.text


def test_recall_as_of_and_history_in_the_browser(browser: Any, url: str, seeded: Seeded) -> None:
    browser.get(url)
    browser.get(base_of(url) + "/recall")
    one(browser, "input[name=q]").send_keys("杭州")
    navigate(browser, one(browser, ".search button"))
    assert "用户住在杭州" not in [e.text for e in by_css(browser, ".memory .memory-text")]  # no longer true
    one(browser, "input[name=history]").click()
    navigate(browser, one(browser, ".search button"))
    assert "用户住在杭州" in [e.text for e in by_css(browser, ".memory .memory-text")]
    assert one(browser, "input[name=history]").is_selected()
    browser.get(base_of(url) + "/recall?q=杭州&as_of=2026-04-01")
    assert "用户住在杭州" in [e.text for e in by_css(browser, ".memory .memory-text")]
    assert one(browser, "input[name=as_of]").get_attribute("value") == "2026-04-01"


def test_times_in_the_configured_zone_and_the_pages_in_english(
    browser_en: Any, db_path: Path, seeded: Seeded, tmp_path: Path
) -> None:
    shots = screenshots(tmp_path)
    config = tmp_path / "shanghai.toml"
    config.write_text('[display]\ntimezone = "Asia/Shanghai"\n', encoding="utf-8")
    with ui_server(db_path, "--config", str(config)) as link:
        browser_en.get(link)
        browser_en.get(base_of(link) + f"/memories/{seeded.hangzhou}")
        assert "occurred 2026-03-01 09:00 (+08:00)" in one(browser_en, ".who").text
        browser_en.get(base_of(link) + "/conversation?session=s-2026")
        assert one(browser_en, "li.turn .when").text == "2026-03-01 09:00 (+08:00)"
        assert "Memories from this event" == one(browser_en, "ul.derived").get_attribute("aria-label")
        browser_en.save_screenshot(str(shots / "ui-conversation-en.png"))
        browser_en.get(base_of(link) + "/conversations")
        assert [e.text for e in by_css(browser_en, "table.sessions th")][:2] == ["Session", "Events"]
        browser_en.save_screenshot(str(shots / "ui-conversations-en.png"))
        browser_en.get(base_of(link) + "/recall?q=" + "龙井茶")
        why = one(browser_en, ".why").text
        assert "word match" in why and "freshness" in why and "lexical" not in why
        browser_en.save_screenshot(str(shots / "ui-recall-en.png"))
        browser_en.get(base_of(link) + "/persona")
        assert "neutral default" in by_css(browser_en, ".version h3")[-1].text
        browser_en.save_screenshot(str(shots / "ui-persona-en.png"))


def test_the_ui_follows_the_system_zone_by_default(browser_en: Any, db_path: Path, seeded: Seeded) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("YIJI_TIMEZONE", "YIJI_DISPLAY_TIMEZONE")}
    with ui_server(db_path, env={**env, "TZ": "Asia/Tokyo", "YIJI_CONFIG": os.devnull}) as link:
        browser_en.get(link)
        browser_en.get(base_of(link) + f"/memories/{seeded.hangzhou}")
        assert "occurred 2026-03-01 10:00 (+09:00)" in one(browser_en, ".who").text
