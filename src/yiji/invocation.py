"""How this process was started, so that every hint yiji prints names a command that works here.

Decided once per process (:func:`invocation`) from where the package sits and how it was installed:

* ``checkout``: the package is the ``src/yiji`` of a yiji project (an editable install, ``uv run``):
  ``uv run --no-dev yiji`` inside that folder (``.uv/bin/uv run --no-dev yiji`` when the uv that runs it
  is not the one on ``PATH``, as after the Quickstart), ``uv run --project <folder> --no-dev yiji``
  outside it; an extra is added with ``uv sync --inexact --no-dev --extra NAME`` (the same uv).
  ``--no-dev`` keeps the Quickstart's lean environment (without it, the first run installs the
  development tools); ``--inexact`` removes nothing already installed (another extra, the tools);
* ``uvx``: the package runs from uv's cache (``uvx --from <wheel or folder> yiji``): the same
  ``uvx --from ...`` line, with the extra in brackets after the source;
* ``uv-tool``: an environment of ``uv tool install`` (it holds ``uv-receipt.toml``): ``yiji``, and
  ``uv tool install '<source>[NAME]'`` for an extra;
* ``installed``: anything else (pip or pipx into an environment): ``yiji``, and ``python -m pip install
  '<source>[NAME]'`` with this interpreter for an extra (``uv pip install --python ...`` where the
  environment has no pip).

``<source>`` is where the package came from as its installer recorded it (PEP 610 ``direct_url.json``: a
wheel file, a folder, a VCS URL), or the name ``yiji`` when it came from an index. When the ``yiji`` that
runs is a script that is not the one on ``PATH`` (an environment that is not activated), its full path
is the command. Only the standard library is imported; nothing is read before a hint is needed.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

__all__ = ["Invocation", "detect", "host_command", "install_hint", "invocation", "yiji_command"]

Kind = Literal["checkout", "uvx", "uv-tool", "installed"]
PACKAGE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Invocation:
    """How to run yiji (``command``) and how to add an optional extra (:meth:`install`) in this place."""

    kind: Kind
    command: str
    source: str
    """The checkout folder, or where the installed package came from (``yiji`` when from an index)."""
    python: str = ""
    has_pip: bool = True
    outside: bool = False
    """For a checkout: the working directory is outside it, so uv is pointed at it."""
    uv: str = "uv"
    """For a checkout: the uv that runs it (the Quickstart's ``.uv/bin/uv`` when ``PATH`` has none)."""

    def run(self, words: str) -> str:
        """The command line ``yiji <words>`` as it works here."""
        return f"{self.command} {words}".rstrip()

    def install(self, extra: str) -> str:
        """How to add the optional dependencies ``extra`` (``embed``, ``tokenizers``) here: ``install it
        with `<command>``` (for uvx: ``run yiji as `uvx --from '<source>[extra]' yiji```)."""
        if self.kind == "checkout":
            project = f" --project {shlex.quote(self.source)}" if self.outside else ""
            return f"install it with `{self.uv} sync{project} --inexact --no-dev --extra {extra}`"
        wanted = shlex.quote(f"{self.source}[{extra}]")
        if self.kind == "uvx":
            return f"run yiji as `uvx --from {wanted} yiji`"
        return f"install it with `{self._installer(wanted)}`"

    def _installer(self, wanted: str) -> str:
        if self.kind == "uv-tool":
            return f"uv tool install {wanted}"
        python = shlex.quote(self.python)
        if self.has_pip:
            return f"{python} -m pip install {wanted}"
        return f"uv pip install --python {python} {wanted}"


def _checkout() -> Path | None:
    """The project folder when this package is the ``src/yiji`` of a yiji project."""
    pyproject = PACKAGE.parent.parent / "pyproject.toml"
    if PACKAGE.parent.name != "src" or not pyproject.is_file():
        return None
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return pyproject.parent if project.get("name") == "yiji" else None


def _source() -> str:
    """Where the installed distribution came from (PEP 610), or ``yiji`` (an index, or unknown)."""
    from importlib import metadata

    try:
        text = metadata.distribution("yiji").read_text("direct_url.json")
        url = json.loads(text or "{}").get("url", "")
    except (metadata.PackageNotFoundError, OSError, ValueError, AttributeError):
        return "yiji"
    if not isinstance(url, str) or not url:
        return "yiji"
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return url


def _script() -> str:
    """``yiji``, or the full path of the running ``yiji`` script when ``PATH`` finds another or none."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name != "yiji":
        return "yiji"
    running = Path(argv0).resolve()
    found = shutil.which("yiji")
    if found is not None and Path(found).resolve() == running:
        return "yiji"
    return shlex.quote(str(Path(argv0).absolute()))


def _uv(here: Path) -> str:
    """``uv``, or the uv running this process (``uv run`` names it in ``$UV``) when ``PATH`` finds another
    or none, as the Quickstart's ``.uv/bin/uv`` is: relative to ``here`` when it lies below it."""
    running = os.environ.get("UV")
    if not running:
        return "uv"
    found = shutil.which("uv")
    if found is not None and Path(found).resolve() == Path(running).resolve():
        return "uv"
    path = Path(running).absolute()
    if here in path.parents:
        return shlex.quote(str(path.relative_to(here)))
    return shlex.quote(str(path))


def detect(cwd: Path | None = None) -> Invocation:
    """How this process runs yiji (see the module docstring); ``cwd`` defaults to the working directory."""
    here = (cwd or Path.cwd()).resolve()
    root = _checkout()
    if root is not None:
        outside = here != root and root not in here.parents
        uv = _uv(here)
        project = f" --project {shlex.quote(str(root))}" if outside else ""
        command = f"{uv} run{project} --no-dev yiji"
        return Invocation("checkout", command, str(root), outside=outside, uv=uv)
    prefix = Path(sys.prefix)
    source = _source()
    if any(part.startswith("archive-v") for part in prefix.parts):
        return Invocation("uvx", f"uvx --from {shlex.quote(source)} yiji", source)
    python = sys.executable
    if (prefix / "uv-receipt.toml").is_file():
        return Invocation("uv-tool", _script(), source, python=python)
    import importlib.util

    has_pip = importlib.util.find_spec("pip") is not None
    return Invocation("installed", _script(), source, python=python, has_pip=has_pip)


@functools.cache
def invocation() -> Invocation:
    """:func:`detect` once per process (the working directory of a process does not change here)."""
    try:
        return detect()
    except OSError:  # a working directory that was removed: the plain command
        return Invocation("installed", "yiji", "yiji", python=sys.executable)


def yiji_command(words: str = "") -> str:
    """The command line ``yiji <words>`` as it works where this process runs."""
    return invocation().run(words)


def install_hint(extra: str) -> str:
    """How to add the optional dependencies ``extra`` where this process runs (:meth:`Invocation.install`)."""
    return invocation().install(extra)


def host_command() -> str:
    """The command another program (a host running yiji's hooks, with its own ``PATH``) starts this
    yiji with: the absolute path of the running ``yiji`` script (symbolic links kept, so an upgrade in
    place keeps it working), or this interpreter with ``-m yiji``. ``ValueError`` says why there is
    none: yiji runs from uv's cache (``uvx``), which uv may clean, or its script cannot be found."""
    if invocation().kind == "uvx":
        raise ValueError(
            "yiji runs from uv's cache (uvx), which uv may clean: install it (uv tool install) or name "
            "the command with --command"
        )
    argv0 = sys.argv[0] if sys.argv else ""
    name = Path(argv0).name
    if name in ("yiji", "yiji.exe"):
        found = argv0 if os.sep in argv0 else shutil.which(argv0)
        if found and os.path.isfile(found) and os.access(found, os.X_OK):
            return shlex.quote(os.path.abspath(found))
        raise ValueError("the running yiji script cannot be found: name the command with --command")
    if name == "__main__.py" and Path(argv0).parent.name == "yiji" and os.path.isabs(sys.executable):
        return f"{shlex.quote(sys.executable)} -m yiji"
    raise ValueError("yiji was not started as a command: name the command with --command")
