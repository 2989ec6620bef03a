from __future__ import annotations

from pathlib import Path

import pytest

from yiji.config import load_config
from yiji.errors import InvalidInput


def test_defaults_file_and_env(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('persona = "mimi"\n[recall]\nfreshness_half_life_days = 90\n', encoding="utf-8")
    config = load_config(path, env={"YIJI_PROJECT": "work", "YIJI_DB": str(tmp_path / "x.db")})
    assert (config.persona, config.project) == ("mimi", "work")
    assert config.recall.freshness_half_life_days == 90
    assert config.forgetting.emotion_half_life_hours == 6
    assert config.db == tmp_path / "x.db"
    assert not config.extraction.enabled


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        load_config(tmp_path / "nope.toml", env={})


def test_bad_values_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[recall]\nfreshness_half_life_days = -1\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        load_config(path, env={})
    assert info.value.field == "recall.freshness_half_life_days"


def test_invalid_toml(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("persona = [", encoding="utf-8")
    with pytest.raises(InvalidInput, match="TOML"):
        load_config(path, env={})
