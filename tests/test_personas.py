from __future__ import annotations

from typing import Any

import pytest

from yiji.errors import InvalidInput, NotFound
from yiji.service import MemoryService
from yiji.service.personas import DEFAULT_PERSONA_TEXT


def test_absent_persona_initializes_neutral_default(service: MemoryService) -> None:
    record = service.persona_get("companion")
    assert record.version == 1
    assert record.text == DEFAULT_PERSONA_TEXT
    assert service.persona_get("companion").created_at == record.created_at  # not re-created


def test_set_appends_and_rollback_copies(service: MemoryService) -> None:
    service.persona_set("v2 text")
    service.persona_set("v3 text")
    rolled = service.persona_rollback(2)
    assert (rolled.version, rolled.text) == (4, "v2 text")
    history = service.persona_history()
    assert [(r.version, r.text) for r in history] == [
        (1, DEFAULT_PERSONA_TEXT),
        (2, "v2 text"),
        (3, "v3 text"),
        (4, "v2 text"),
    ]
    assert history[3].note == "rollback to version 2"


def test_rollback_to_missing_version(service: MemoryService) -> None:
    with pytest.raises(NotFound):
        service.persona_rollback(9)


@pytest.mark.parametrize("text", ["", "   \n"])
def test_empty_persona_refused(service: MemoryService, text: str) -> None:
    with pytest.raises(InvalidInput, match="text"):
        service.persona_set(text)


def test_cli_persona_commands(cli: Any, tmp_path: Any) -> None:
    assert cli("persona", "show").code == 0
    text_file = tmp_path / "persona.txt"
    text_file.write_text("你是一只温柔的猫。", encoding="utf-8")
    assert cli("persona", "set", "--file", str(text_file)).code == 0
    shown = cli("persona", "show", "--json").json()
    assert (shown["version"], shown["text"]) == (2, "你是一只温柔的猫。")
    assert cli("persona", "rollback", "--to", "1").code == 0
    history = cli("persona", "history", "--json").json()
    assert [h["version"] for h in history] == [1, 2, 3]
    assert history[2]["text"] == DEFAULT_PERSONA_TEXT
    missing = cli("persona", "rollback", "--to", "7")
    assert missing.code == 2 and "not found" in missing.err
