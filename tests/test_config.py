from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config, build_config, load_config
from yiji.errors import InvalidInput

from .conftest import CliResult, run_yiji


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
        ({"extraction": {"api_key": "k"}}, "extraction.api_key", "(did you mean api_key_env? API keys"),
        ({"nonsense": 1}, "nonsense", "unknown key"),
        ({"extraction": {"user_name": ""}}, "extraction.user_name", "at least 1 character"),
        ({"embedding": {"provider": "cloud"}}, "embedding.provider", "'auto', 'local', 'openai' or 'off'"),
        ({"recall": {"default_mode": "smart"}}, "recall.default_mode", "'fast', 'semantic' or 'deep'"),
        ({"timezone": "Mars/Olympus"}, "timezone", "IANA timezone name"),
        ({"display": {"timezone": "Asia/Shang hai"}}, "display.timezone", "IANA timezone name"),
        ({"display": {"zone": "UTC"}}, "display.zone", "unknown key"),
        ({"dispaly": {}}, "dispaly", "unknown table (did you mean display?)"),
        ({"probe": {"a": {"max_tokens": 8}}}, "probe.a.max_tokens", "greater than or equal to 16"),
        ({"forgetting": 3}, "forgetting", "must be a table"),
        ({"extraction": {"entailment_check": "perhaps"}}, "extraction.entailment_check", "valid boolean"),
        (
            {"extraction": {"fact_keys": ["Home City"]}},
            "extraction.fact_keys",
            "lowercase snake_case with dots",
        ),
        ({"extraction": {"fact_keys": "home.city"}}, "extraction.fact_keys", "valid tuple"),
        ({"extraction": {"fact_keys": [1]}}, "extraction.fact_keys.0", "Input should be a valid string"),
        ({"extraction": {"timeout_seconds": "nan"}}, "extraction.timeout_seconds", "a finite number"),
        ({"extraction": {"timeout_seconds": 3601}}, "extraction.timeout_seconds", "or equal to 3600"),
        ({"extraction": {"max_tokens": 64.5}}, "extraction.max_tokens", "with a fractional part"),
        ({"extraction": {"max_tokens": "many"}}, "extraction.max_tokens", "parse string as an integer"),
        ({"recall": {"freshness_half_life_days": "soon"}}, "recall.freshness_half_life_days", "parse string"),
        ({"extraction": {"user_name": "x" * 65}}, "extraction.user_name", "at most 64 characters"),
        ({"embedding": {"dimensions": 0}}, "embedding.dimensions", "Input should be greater than 0"),
        ({"extraction": {"run_roles": ["user", "user"]}}, "extraction.run_roles", "each once"),
    ],
)
def test_a_broken_rule_names_the_field_and_the_rule(data: dict[str, Any], field: str, rule: str) -> None:
    with pytest.raises(InvalidInput) as info:
        build_config(data)
    assert info.value.field == field
    assert rule in info.value.rule


def test_the_providers_read_their_sections_themselves() -> None:
    """The extractor, the embedder and the probe's chat client take their configuration section as it is:
    nothing is copied into another shape on the way."""
    import httpx

    from yiji.providers.chat import ChatClient
    from yiji.providers.embeddings import OpenAIEmbedder
    from yiji.providers.extraction import OpenAIExtractor
    from yiji.service import build_embedder, build_extractor

    endpoint = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    config = build_config(
        {
            "extraction": {**endpoint, "timeout_seconds": 7, "max_tokens": 64},
            "embedding": {**endpoint, "provider": "openai", "batch_size": 3},
            "probe": {"a": {**endpoint, "temperature": None}},
        }
    )
    with httpx.Client() as http:
        extractor, embedder = build_extractor(config, http), build_embedder(config, http)
        chat = ChatClient(config.probe.a, http)
    assert isinstance(extractor, OpenAIExtractor) and extractor.config is config.extraction
    assert isinstance(embedder, OpenAIEmbedder) and embedder.config is config.embedding
    assert chat.config is config.probe.a


def test_a_provider_refuses_a_section_without_its_endpoint() -> None:
    import httpx

    from yiji.config import ChatModelConfig, EmbeddingConfig, ExtractionConfig
    from yiji.providers.chat import ChatClient
    from yiji.providers.embeddings import OpenAIEmbedder
    from yiji.providers.extraction import OpenAIExtractor

    with httpx.Client() as http:
        for build, field in (
            (lambda: OpenAIExtractor(ExtractionConfig(model="m"), http), "extraction"),
            (lambda: OpenAIEmbedder(EmbeddingConfig(base_url="http://127.0.0.1:9/v1"), http), "embedding"),
            (lambda: ChatClient(ChatModelConfig(), http), "probe"),
        ):
            with pytest.raises(InvalidInput) as info:
                build()
            assert (info.value.field, info.value.rule) == (field, "needs base_url and model")


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
    assert info.value.rule == f"must be an IANA timezone name such as Asia/Shanghai (in {path})"


# -- what a person reads when the configuration is wrong, run as users run yiji: the message names the file
# (or the environment variable) a value came from, calls an unknown key or table unknown and suggests the
# known key of that table it most likely meant, tells where an API key belongs, and places a TOML syntax
# error by line and column. It never quotes a value or a line of the file.

SECRET = "sk-live-0123456789abcdef"
API_KEY_NOTE = (
    "did you mean api_key_env? API keys are not stored in the configuration file: keep the key in an "
    "environment variable and set api_key_env to that variable's name"
)


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default configuration file, ``~/.config/yiji/config.toml``, of a user whose environment names
    no other; the test writes it."""
    for name in ("YIJI_CONFIG", "YIJI_DB", "YIJI_DISPLAY_TIMEZONE", "YIJI_TIMEZONE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "config" / "yiji" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def _both(db: Path, *, env: dict[str, str] | None = None) -> tuple[CliResult, CliResult]:
    """A command that reads the configuration, and ``config show``: both stop with the same message."""
    listed = run_yiji("--db", str(db), "event", "list", env=env)
    shown = run_yiji("config", "show", env=env)
    assert listed.code == shown.code == 2, (listed, shown)
    assert listed.err == shown.err
    return listed, shown


def _message(text: str, config_file: Path, tmp_path: Path) -> str:
    config_file.write_text(text, encoding="utf-8")
    listed, _ = _both(tmp_path / "y.db")
    assert SECRET not in listed.err
    as_json = json.loads(run_yiji("--json", "config", "show").err)
    assert as_json["error"] == "invalid_input"
    assert f"yiji: invalid input: {as_json['message']}\n" == listed.err
    return listed.err


def test_an_unknown_table_names_the_file_and_the_closest_table(config_file: Path, tmp_path: Path) -> None:
    err = _message('[dispaly]\ntimezone = "Asia/Shanghai"\n', config_file, tmp_path)
    assert err == f"yiji: invalid input: dispaly: unknown table in {config_file} (did you mean display?)\n"


def test_an_unknown_key_in_a_table_names_the_closest_of_its_keys(config_file: Path, tmp_path: Path) -> None:
    err = _message('[recall]\ndefualt_mode = "fast"\n', config_file, tmp_path)
    expected = f"recall.defualt_mode: unknown key in {config_file} (did you mean default_mode?)"
    assert err == f"yiji: invalid input: {expected}\n"


def test_a_key_with_no_close_name_is_only_called_unknown(config_file: Path, tmp_path: Path) -> None:
    err = _message("colour = 3\n", config_file, tmp_path)
    assert err == f"yiji: invalid input: colour: unknown key in {config_file}\n"


@pytest.mark.parametrize("table", ["extraction", "embedding", "probe.a"])
def test_an_api_key_in_the_file_says_to_name_an_environment_variable(
    table: str, config_file: Path, tmp_path: Path
) -> None:
    err = _message(f'[{table}]\napi_key = "{SECRET}"\n', config_file, tmp_path)
    assert err == f"yiji: invalid input: {table}.api_key: unknown key in {config_file} ({API_KEY_NOTE})\n"


def test_every_problem_is_named(config_file: Path, tmp_path: Path) -> None:
    err = _message(f'[extraction]\napi_key = "{SECRET}"\nmodle = "m"\n', config_file, tmp_path)
    assert err == (
        f"yiji: invalid input: extraction.api_key: unknown key in {config_file} ({API_KEY_NOTE}); "
        f"extraction.modle: unknown key in {config_file} (did you mean model?)\n"
    )


def test_a_broken_rule_names_where_the_value_came_from(config_file: Path, tmp_path: Path) -> None:
    rule = "must be an IANA timezone name such as Asia/Shanghai"
    err = _message('[display]\ntimezone = "Nowhere/City"\n', config_file, tmp_path)
    assert err == f"yiji: invalid input: display.timezone: {rule} (in {config_file})\n"
    config_file.unlink()
    listed, _ = _both(tmp_path / "y.db", env={"YIJI_DISPLAY_TIMEZONE": "Nowhere/City"})
    assert listed.err == f"yiji: invalid input: display.timezone: {rule} (from $YIJI_DISPLAY_TIMEZONE)\n"
    err = _message('extraction = "on"\n', config_file, tmp_path)
    assert err == f"yiji: invalid input: extraction: must be a table (in {config_file})\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('persona = "mimi"\nproject = work\n', "at line 2, column 11"),
        (f"[{SECRET}]\n[{SECRET}]\n", "at line 2, column 26"),  # tomllib's own message quotes the table
        ('persona = "mimi', "at the end of the file"),
    ],
)
def test_invalid_toml_gives_the_file_line_and_column_only(
    text: str, where: str, config_file: Path, tmp_path: Path
) -> None:
    err = _message(text, config_file, tmp_path)
    expected = f"config: the configuration file {config_file} is not valid TOML {where}"
    assert err == f"yiji: invalid input: {expected}\n"


def test_a_named_file_that_is_missing_or_unreadable_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    result = run_yiji("--config", str(missing), "config", "show")
    assert (result.code, result.err) == (
        2,
        f"yiji: invalid input: config: the configuration file {missing} does not exist\n",
    )
    result = run_yiji("config", "show", env={"YIJI_CONFIG": str(tmp_path)})
    assert (result.code, result.err) == (
        2,
        f"yiji: invalid input: config: the configuration file {tmp_path} could not be read\n",
    )
