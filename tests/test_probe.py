"""``yiji probe`` against two loopback fake chat models, and ``yiji probe summarize``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from yiji.evaluation.probe import load_script, shipped_script

from .conftest import config_env
from .fakeprovider import FakeProvider, chat_content, server_error
from .inprocess import run_cli


@pytest.fixture
def second_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def config_for(tmp_path: Path, a: FakeProvider, b: FakeProvider) -> dict[str, str]:
    return config_env(
        tmp_path,
        f'[probe.a]\nbase_url = "{a.base_url}"\nmodel = "model-one"\ntimeout_seconds = 10\n'
        f'[probe.b]\nbase_url = "{b.base_url}"\nmodel = "model-two"\ntimeout_seconds = 10\n',
        db="unused.db",
    )


def test_shipped_scripts_span_sessions_in_both_languages() -> None:
    for lang in ("zh", "en"):
        script = load_script(shipped_script(lang))
        assert len(script.sessions) >= 2 and script.persona


def test_probe_writes_a_blind_side_by_side_report(
    tmp_path: Path, fake_provider: FakeProvider, second_provider: FakeProvider
) -> None:
    turns = sum(len(t) for _, t in load_script(shipped_script("zh")).sessions)
    fake_provider.script_chat(*[chat_content(f"一号回答{i} <b>") for i in range(turns)])
    second_provider.script_chat(server_error(), *[chat_content(f"二号回答{i}") for i in range(1, turns)])
    out = tmp_path / "report"
    result = run_cli(
        "--json",
        "probe",
        "--out",
        str(out),
        "--seed",
        "7",
        env=config_for(tmp_path, fake_provider, second_provider),
    )
    assert result.code == 0, result.err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    assert key["models"] == {"a": "model-one", "b": "model-two"}
    assert len(report["turns"]) == turns
    # Both models saw the same messages at every turn: the same pack and the same user turn.
    for one, two in zip(fake_provider.requests, second_provider.requests, strict=True):
        assert one.json()["messages"] == two.json()["messages"]
    later = fake_provider.requests[-1].json()["messages"][0]["content"]
    assert "西湖" in later  # an earlier session's turn reached the pack
    # Labels are randomized per turn and resolved only through the key.
    sides = [key["labels"][t["id"]]["A"] for t in report["turns"]]
    assert set(sides) == {"a", "b"}
    for turn in report["turns"]:
        a_label = "A" if key["labels"][turn["id"]]["A"] == "a" else "B"
        assert turn["answers"][a_label].startswith("一号回答")
        assert "model-one" not in json.dumps(turn)
    first = report["turns"][0]
    b_label = "A" if key["labels"]["t1"]["A"] == "b" else "B"
    assert first["answers"][b_label] == "[no answer: chat endpoint answered HTTP 500]"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;" in page and "<b>" not in page
    assert "exportRatings" in page and 'name="naturalness"' in page and "model-one" not in page

    ratings = {
        "ratings": [
            {
                "turn": t["id"],
                "label": label,
                "naturalness": 5 if key["labels"][t["id"]][label] == "a" else 2,
                "memory_use": 3,
                "error": key["labels"][t["id"]][label] == "b",
            }
            for t in report["turns"]
            for label in ("A", "B")
        ]
    }
    (tmp_path / "ratings.json").write_text(json.dumps(ratings), encoding="utf-8")
    summary = run_cli(
        "--json",
        "probe",
        "summarize",
        "--ratings",
        str(tmp_path / "ratings.json"),
        "--key",
        str(out / "key.json"),
        env=config_for(tmp_path, fake_provider, second_provider),
    )
    assert summary.code == 0, summary.err
    models = json.loads(summary.out)["models"]
    assert models["a"] == {
        "model": "model-one",
        "rated": turns,
        "naturalness": 5.0,
        "memory_use": 3.0,
        "errors": 0,
        "preferred": turns,
    }
    assert models["b"]["naturalness"] == 2.0 and models["b"]["errors"] == turns


def test_probe_needs_both_models(tmp_path: Path) -> None:
    empty = tmp_path / "c.toml"
    empty.write_text("", encoding="utf-8")
    result = run_cli(
        "probe",
        "--out",
        str(tmp_path / "o"),
        env={"YIJI_CONFIG": str(empty), "YIJI_DB": str(tmp_path / "d.db")},
    )
    assert result.code == 2 and "probe.a" in result.err
