"""The review UI at the ends of the calendar: every date field is read through the CLI's time rule.

Eight forms take a date (the memory list's since, until and as of; recall's as of; a correction's
valid_at and occurred_at; a proposal's edit, and its edit with accept), each tried with the first and the
last day of the calendar, with no display zone (the system's: ``TZ``), with a configured one, and with
``TZ`` set. Each answers a page that names the field and the rule, or a page of results, never a 500.
Real service, real SQLite file, the app in process through Starlette's test client.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from yiji.config import Config, DisplayConfig
from yiji.errors import InvalidInput
from yiji.service import MemoryService
from yiji.ui import views
from yiji.ui.app import build_app

from .conftest import run_yiji
from .factory import make_service
from .ui_helpers import Seeded, seed

TOKEN = "test-token-dates"
EDGES = ("0001-01-01", "9999-12-31")
OUT_OF_RANGE = "is out of the supported time range"


@pytest.fixture(params=["UTC", "Asia/Tokyo", "America/New_York"])
def system_zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The process's ``TZ`` (the zone a UI without ``[display] timezone`` reads dates in)."""
    monkeypatch.setenv("TZ", request.param)
    time.tzset()
    yield request.param
    monkeypatch.undo()
    time.tzset()


def _proposal(db_path: Path, seeded: Seeded) -> str:
    """A waiting proposal beside the seeded memories (as extraction with review would store it)."""
    with sqlite3.connect(db_path) as conn:
        event_id, quote, valid_at = conn.execute(
            "SELECT event_id, quote, valid_at FROM memories WHERE id = ?", (seeded.tea,)
        ).fetchone()
        conn.execute(
            "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, "
            "confidence, valid_at, origin, created_at, review_state) VALUES ('mem_waiting', 'default', "
            "'default', ?, 'preference', 'user_statement', 'User drinks tea', ?, 0.9, ?, 'extraction', ?, "
            "'proposed')",
            (event_id, quote, valid_at, valid_at),
        )
    conn.close()
    return "mem_waiting"


def _client(db_path: Path, zone: str | None) -> tuple[MemoryService, TestClient]:
    config = Config(db=db_path, display=DisplayConfig(timezone=zone)) if zone else Config(db=db_path)
    service = make_service(db_path, config)
    client = TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765")
    client.__enter__()
    assert client.get(f"/memories?token={TOKEN}", follow_redirects=False).status_code == 303
    return service, client


def _csrf(client: TestClient, path: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found
    return found.group(1)


def _every_form(client: TestClient, seeded: Seeded, proposal: str, day: str) -> dict[str, tuple[int, str]]:
    csrf = _csrf(client, f"/memories/{seeded.hike}/delete")
    correction = {"csrf": csrf, "statement": "我每天早上喝碧螺春", "event_id": "corr-edge"}
    edit = {"csrf": csrf, "subject": "", "fact_key": "", "text": "User drinks green tea"}
    answers = {
        "since": client.get(f"/memories?view=history&since={day}"),
        "until": client.get(f"/memories?view=history&until={day}"),
        "as_of": client.get(f"/memories?as_of={day}"),
        "recall as_of": client.get(f"/recall?q=tea&as_of={day}"),
        "correct valid_at": client.post(
            f"/memories/{seeded.tea}/correct", data={**correction, "valid_at": day}, follow_redirects=False
        ),
        "correct occurred_at": client.post(
            f"/memories/{seeded.tea}/correct",
            data={**correction, "occurred_at": day},
            follow_redirects=False,
        ),
        "edit valid_at": client.post(
            f"/review/{proposal}/edit", data={**edit, "valid_at": day}, follow_redirects=False
        ),
        "edit and accept valid_at": client.post(
            f"/review/{proposal}/edit", data={**edit, "valid_at": day, "accept": "1"}, follow_redirects=False
        ),
    }
    return {name: (r.status_code, r.text) for name, r in answers.items()}


END_OF_DAY = ("until", "as_of", "recall as_of")
"""Forms whose date means its last microsecond (a bound or an instant to look at); the others its start."""


def _edge_expected(zone_name: str, form: str, day: str) -> bool:
    """Whether the form's instant of ``day`` cannot be brought to UTC in the zone: the first day's start
    east of UTC is in year 0, the last day's end west of UTC in year 10000."""
    if day == EDGES[0]:
        return form not in END_OF_DAY and zone_name == "Asia/Tokyo"
    return form in END_OF_DAY and zone_name == "America/New_York"


@pytest.mark.parametrize("configured", [None, "UTC", "Asia/Tokyo", "America/New_York"])
def test_every_date_form_answers_the_calendar_edges_without_a_server_error(
    db_path: Path, system_zone: str, configured: str | None
) -> None:
    seeded = seed(db_path, datetime.now(UTC))
    proposal = _proposal(db_path, seeded)
    service, client = _client(db_path, configured)
    try:
        for day in EDGES:
            for form, (status, page) in _every_form(client, seeded, proposal, day).items():
                where = f"{form} with {day}, TZ={system_zone}, display zone {configured}"
                assert status < 500, where
                refused = _edge_expected(configured or system_zone, form, day)
                if refused:
                    field = form.rsplit(" ", 1)[-1]
                    assert status == 400 and f"{field}: {OUT_OF_RANGE}" in page, where
    finally:
        client.__exit__(None, None, None)
        service.close()


@pytest.mark.parametrize("day", EDGES)
def test_the_cli_refuses_the_same_edges_with_the_same_words(tmp_path: Path, day: str) -> None:
    db = str(tmp_path / "cli.db")
    start = f"{day}T00:00:00+09:00" if day == EDGES[0] else f"{day}T23:59:59-05:00"
    assert run_yiji("--db", db, "event", "submit", "--session", "s", "--role", "user", "hello").code == 0
    answer = run_yiji("--db", db, "memory", "list", "--as-of", start)
    assert answer.code == 2 and f"--as-of: {OUT_OF_RANGE}" in answer.err


@pytest.mark.parametrize(
    ("day", "end_of_day", "zone"),
    [("0001-01-01", False, "Asia/Tokyo"), ("9999-12-31", True, "America/New_York")],
)
def test_time_input_names_the_field_at_the_edges(day: str, end_of_day: bool, zone: str) -> None:
    from zoneinfo import ZoneInfo

    with pytest.raises(InvalidInput) as refused:
        views.time_input(day, ZoneInfo(zone), "valid_at", end_of_day=end_of_day)
    assert refused.value.field == "valid_at" and refused.value.rule == "is out of the supported time range"
