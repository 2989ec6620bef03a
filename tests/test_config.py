from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config, build_config, load_config
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


@pytest.mark.parametrize(
    ("plain", "converted"),
    [
        ({"extraction": {"timeout_seconds": 30}}, {"extraction": {"timeout_seconds": "30"}}),
        ({"extraction": {"max_tokens": 64}}, {"extraction": {"max_tokens": 64.0}}),
        ({"db": "/tmp/a.db"}, {"db": Path("/tmp/a.db")}),
        ({"recall": {"cosine_threshold": 0.5}}, {"recall": {"cosine_threshold": "0.5"}}),
        (
            {"timezone": "Asia/Shanghai", "synchronous": "NORMAL"},
            {"timezone": "Asia/Shanghai", "synchronous": "NORMAL"},
        ),
        (
            {"extraction": {"fact_keys": ("home.city", "pet.name")}},
            {"extraction": {"fact_keys": ["home.city", "pet.name"]}},
        ),
    ],
)
def test_values_needing_conversion_give_the_same_configuration(
    plain: dict[str, Any], converted: dict[str, Any]
) -> None:
    assert build_config(converted) == build_config(plain)
    assert build_config(plain).public_dict() == build_config(converted).public_dict()


@pytest.mark.parametrize(
    ("data", "field", "rule"),
    [
        ({"recall": {"freshness_half_life_days": 0}}, "recall.freshness_half_life_days", "greater than 0"),
        ({"extraction": {"api_key": "k"}}, "extraction.api_key", "Extra inputs are not permitted"),
        ({"nonsense": 1}, "nonsense", "Extra inputs are not permitted"),
        ({"extraction": {"user_name": ""}}, "extraction.user_name", "at least 1 character"),
        ({"embedding": {"provider": "cloud"}}, "embedding.provider", "'auto', 'local', 'openai' or 'off'"),
        ({"recall": {"default_mode": "smart"}}, "recall.default_mode", "'fast', 'semantic' or 'deep'"),
        ({"timezone": "Mars/Olympus"}, "timezone", "IANA timezone name"),
        ({"display": {"timezone": "Asia/Shang hai"}}, "display.timezone", "IANA timezone name"),
        ({"display": {"zone": "UTC"}}, "display.zone", "Extra inputs are not permitted"),
        ({"probe": {"a": {"max_tokens": 8}}}, "probe.a.max_tokens", "greater than or equal to 16"),
        ({"forgetting": 3}, "forgetting", "valid dictionary"),
        ({"extraction": {"entailment_check": "perhaps"}}, "extraction.entailment_check", "valid boolean"),
        (
            {"extraction": {"fact_keys": ["Home City"]}},
            "extraction.fact_keys",
            "lowercase snake_case with dots",
        ),
        ({"extraction": {"fact_keys": "home.city"}}, "extraction.fact_keys", "valid tuple"),
    ],
)
def test_a_broken_rule_names_the_field_and_the_rule(data: dict[str, Any], field: str, rule: str) -> None:
    with pytest.raises(InvalidInput) as info:
        build_config(data)
    assert info.value.field == field
    assert rule in info.value.rule


def test_directly_built_sections_coerce_a_string_path() -> None:
    assert Config(db="x.db").db == Path("x.db")  # type: ignore[arg-type]
    assert build_config({}) == Config(db=build_config({}).db)


def test_the_display_zone_falls_back_to_the_user_zone_then_the_system(tmp_path: Path) -> None:
    assert build_config({}).display_timezone is None  # the system's local zone
    assert build_config({"timezone": "Asia/Tokyo"}).display_timezone == "Asia/Tokyo"
    both = {"timezone": "Asia/Tokyo", "display": {"timezone": "Asia/Shanghai"}}
    assert build_config(both).display_timezone == "Asia/Shanghai"
    path = tmp_path / "c.toml"
    path.write_text('[display]\ntimezone = "Europe/Berlin"\n', encoding="utf-8")
    assert load_config(path, env={}).display_timezone == "Europe/Berlin"
    assert load_config(path, env={"YIJI_DISPLAY_TIMEZONE": "UTC"}).display_timezone == "UTC"
    path.write_text('[display]\ntimezone = "Nowhere/City"\n', encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        load_config(path, env={})
    assert info.value.field == "display.timezone" and "Nowhere" not in info.value.rule
    assert info.value.rule == "must be an IANA timezone name such as Asia/Shanghai"
