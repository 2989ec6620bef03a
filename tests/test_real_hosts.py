"""The real hosts, Claude Code and Codex, driven non-interactively against a loopback model server, with
yiji's hooks installed the way docs/host-capture.md says.

Each host runs once per module through a scripted set of sessions (new, continued, resumed, compacted,
forked; for Codex ``exec`` and ``exec resume``) in a temporary home with a temporary yiji database; the tests
then check what yiji stored against what the host wrote and what the host sent to the model
(:mod:`tests.hostmodel` records every request): every turn captured once with the host's ids and times,
the pack in a new session's first request exactly once, no companion persona in a coding host,
`import-transcripts` equal to capture, and `hook uninstall` restoring the host's files byte for byte.

The hosts come from the npm registry, pinned below: ``$YIJI_CLAUDE`` and ``$YIJI_CODEX`` (``.ci/run`` installs
both into the user's cache and sets them), else that cache, else ``claude`` / ``codex`` on PATH. Without them
the tests skip with a reason, except in CI (``YIJI_CI_STRICT=1``), where they fail. A host release that
changes its transcript or hook format fails here first.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.host_pack import FOOTER, HEADER
from yiji.domain.personas import DEFAULT_PERSONA_TEXT

from .conftest import YIJI_CACHE, require_tool
from .hostmodel import MESSAGES_PATH, RESPONSES_PATH, HostModel, RecordedRequest

CLAUDE_CODE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
HOSTS_BIN = (
    YIJI_CACHE / f"hosts-claude-code-{CLAUDE_CODE_VERSION}-codex-{CODEX_VERSION}" / "node_modules" / ".bin"
)
YIJI = Path(sys.executable).with_name("yiji")
PACK_MARK = HEADER
"""The header line every pack starts with, once."""
PERSONA_MARK = DEFAULT_PERSONA_TEXT.split(".")[0]
"""The opening sentence of yiji's default companion persona, which a coding host must never receive."""
PACK_LIMIT = 8000
"""Characters of a pack as the host passes it on: Claude Code cuts ``additionalContext`` at 8,000."""
HOST_TIMEOUT = 120


def _program(variable: str, name: str, reason: str) -> str:
    for candidate in (os.environ.get(variable), str(HOSTS_BIN / name)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return require_tool(name, reason)


def _yiji() -> str:
    return str(YIJI) if os.access(YIJI, os.X_OK) else require_tool("yiji", "the hooks run the yiji command")


@dataclass
class Sandbox:
    """A temporary home for one host: its configuration folder, a project folder (a git work tree), a yiji
    database and configuration of its own, and the environment the host and its hooks run in."""

    root: Path
    model: HostModel
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "atlas"

    @property
    def db(self) -> Path:
        return self.root / "data" / "yiji.db"

    def __post_init__(self) -> None:
        self.home.mkdir()
        self.project.mkdir()
        (self.project / ".git").mkdir()
        (self.root / "data").mkdir()
        (self.root / "yiji.toml").write_text("", encoding="utf-8")
        node = os.environ.get("YIJI_NODE") or shutil.which("node")
        path = [str(Path(_yiji()).parent), *([str(Path(node).parent)] if node else []), "/usr/bin", "/bin"]
        self.env = {
            "HOME": str(self.home),
            "PATH": os.pathsep.join(path),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.root),
            "YIJI_DB": str(self.db),
            "YIJI_CONFIG": str(self.root / "yiji.toml"),
            # Nothing but loopback: whatever a host would fetch from elsewhere fails at once.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        }

    def yiji(self, *args: str, db: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = self.env | ({"YIJI_DB": str(db)} if db else {})
        return subprocess.run(
            [_yiji(), *args],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=HOST_TIMEOUT,
            check=False,
        )

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """Run a host command in the project folder; a failure fails the test with its output."""
        proc = subprocess.run(
            argv,
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=HOST_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, f"{argv[1:]} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def events(self, db: Path | None = None) -> list[dict[str, Any]]:
        """Every stored event, in commit order (read-only)."""
        conn = sqlite3.connect(f"file:{db or self.db}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            rows = conn.execute(
                "SELECT id, role, session_id, project_id, source, text, occurred_at FROM events ORDER BY seq"
            ).fetchall()
        finally:
            conn.close()
        return [dict(row) for row in rows]

    def hook_log(self) -> str:
        log = self.db.parent / "hooks.log"
        return log.read_text(encoding="utf-8") if log.exists() else ""


def _first_request_with(requests: list[RecordedRequest], text: str) -> RecordedRequest:
    found = [r for r in requests if text in r.text]
    assert found, f"no request to the model carried {text!r}"
    return found[0]


def _packs(request: RecordedRequest) -> list[str]:
    """Each pack a request carries, as the host passed it on: from the start of the line that holds the
    pack's header (with whatever the host put before it on that line) through its footer line; a pack
    without its footer (cut by the host) runs to the end of the hook's output: a blank line, a closing tag
    on a line of its own, or the end of the string (a pack's own lines are never blank, and every stored
    text in it is one quoted string)."""
    packs = []
    for piece in request.strings:
        at = piece.find(PACK_MARK)
        while at >= 0:
            start = piece.rfind("\n", 0, at) + 1
            ends = [e for e in (piece.find("\n\n", at), piece.find("\n</", at)) if e >= 0]
            end = min(ends, default=len(piece))
            footer = piece.find(FOOTER, at, end)
            end = footer + len(FOOTER) if footer >= 0 else end
            packs.append(piece[start:end])
            at = piece.find(PACK_MARK, end)
    return packs


def _assert_one_pack_per_request(requests: list[RecordedRequest]) -> None:
    per_request = [len(_packs(r)) for r in requests]
    assert any(per_request), "no pack reached the model"
    assert max(per_request) <= 1, f"packs in each request to the model: {per_request}"


def _assert_no_pack(turns: Sequence[ClaudeTurn | CodexTurn], argv_from: int) -> None:
    """No request of ``turns`` carries a pack; a failure names the turn by its command from ``argv_from``."""
    for turn in turns:
        assert turn.requests, turn.argv[argv_from:]
        assert [len(_packs(r)) for r in turn.requests] == [0] * len(turn.requests), turn.argv[argv_from:]


def _assert_packs_fit(requests: list[RecordedRequest], limit: int) -> None:
    sizes = [len(p) for r in requests for p in _packs(r)]
    assert sizes, "no pack reached the model"
    assert max(sizes) <= limit, f"pack sizes as the host passed them on: {sizes}"
    cut = [p[-200:] for r in requests for p in _packs(r) if not p.endswith(FOOTER)]
    assert not cut, f"packs the host cut short: {cut}"


def _assert_no_companion_persona(requests: list[RecordedRequest]) -> None:
    assert any(_packs(r) for r in requests), "no pack reached the model"
    persona = [i for i, r in enumerate(requests) if PERSONA_MARK in r.text]
    assert persona == [], f"{len(persona)} of {len(requests)} requests carry the companion persona"


# -- Claude Code --------------------------------------------------------------------------------------


@dataclass
class HostTurn:
    """One command run against a host: its prompt, session, reply, command line and model requests."""

    prompt: str
    session_id: str
    reply: str
    argv: list[str]
    requests: list[RecordedRequest]
    """The requests to the model the command made."""


ClaudeTurn = HostTurn


@dataclass
class ClaudeRun:
    sandbox: Sandbox
    turns: list[ClaudeTurn]
    settings_before: bytes
    settings_installed: bytes

    @property
    def config_dir(self) -> Path:
        return self.sandbox.home / ".claude"

    def transcripts(self) -> dict[str, list[dict[str, Any]]]:
        """Each session's transcript lines, by session id (the file name)."""
        return {
            path.stem: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
            for path in (self.config_dir / "projects").glob("*/*.jsonl")
        }


SESSION_PROMPTS = {
    "new": "alpha: the staging database is PostgreSQL 16",
    "continued": "beta: the deploy window is Tuesday",
    "resumed": "gamma: rename the billing worker",
    "after compaction": "delta: the cache key needs the tenant id",
    "forked": "epsilon: try the migration on a copy",
    "next session": "zeta: where were we",
}


def _claude() -> str:
    return _program(
        "YIJI_CLAUDE", "claude", f"@anthropic-ai/claude-code {CLAUDE_CODE_VERSION} from npm (see .ci/run)"
    )


def _claude_env(box: Sandbox, model: HostModel) -> Path:
    """Points Claude Code run in ``box`` at ``model``, with its configuration folder (returned) in the
    sandbox's home and nothing sent anywhere else."""
    config_dir = box.home / ".claude"
    box.env |= {
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    return config_dir


def _claude_box(root: Path, model: HostModel) -> Sandbox:
    """A sandbox for Claude Code pointed at ``model``, with a settings file of the person's own and yiji's
    hooks installed in it."""
    box = Sandbox(root, model)
    config_dir = _claude_env(box, model)
    config_dir.mkdir()
    settings = config_dir / "settings.json"
    settings.write_text(json.dumps({"cleanupPeriodDays": 30}, indent=2) + "\n", encoding="utf-8")
    installed = box.yiji("hook", "install", "claude-code")
    assert installed.returncode == 0, installed.stderr
    return box


@pytest.fixture(scope="module")
def claude_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClaudeRun]:
    """Claude Code through new, continued, resumed, compacted and forked sessions, then a new one."""
    claude = _claude()
    with HostModel() as model:
        box = _claude_box(tmp_path_factory.mktemp("claude"), model)
        settings = box.home / ".claude" / "settings.json"
        before = json.dumps({"cleanupPeriodDays": 30}, indent=2).encode() + b"\n"

        turns: list[ClaudeTurn] = []

        def turn(label: str, *flags: str) -> ClaudeTurn:
            prompt = SESSION_PROMPTS.get(label, label)
            argv = [claude, *flags, "-p", "--output-format", "json", prompt]
            seen = len(model.requests_to(MESSAGES_PATH))
            result = json.loads(box.run(*argv).stdout)
            made = model.requests_to(MESSAGES_PATH)[seen:]
            done = ClaudeTurn(prompt, result["session_id"], result["result"], argv, made)
            turns.append(done)
            return done

        first = turn("new")
        turn("continued", "-c")
        turn("resumed", "-r", first.session_id)
        turn("/compact", "-r", first.session_id)
        turn("after compaction", "-c")
        turn("forked", "-r", first.session_id, "--fork-session")
        turn("next session")
        yield ClaudeRun(box, turns, before, settings.read_bytes())


def test_claude_code_sessions_are_what_the_scenario_says(claude_run: ClaudeRun) -> None:
    """The host did what each command asks: one session continued, resumed and compacted in place, a fork
    and a new session under ids of their own, and each turn answered by the loopback model."""
    sessions = [t.session_id for t in claude_run.turns]
    first, fork, last = sessions[0], sessions[5], sessions[6]
    assert sessions[:5] == [first] * 5
    assert len({first, fork, last}) == 3
    conversational = [t for t in claude_run.turns if not t.prompt.startswith("/")]
    assert all(t.reply.startswith("reply ") for t in conversational), [t.reply for t in conversational]
    transcripts = claude_run.transcripts()
    assert {first, fork, last} <= set(transcripts)
    assert any(line.get("isCompactSummary") for line in transcripts[first]), "no compaction happened"


def test_claude_code_every_turn_captured_once(claude_run: ClaudeRun) -> None:
    """Every prompt and every reply is one event, under the session that said it, with the id and time of
    its transcript line, in one project; no hook logged a failure."""
    box = claude_run.sandbox
    events = box.events()
    stored = Counter((e["session_id"], e["role"], e["text"]) for e in events)
    expected = _expected_turns(claude_run.turns)
    assert {turn: stored[turn] for turn in expected} == dict.fromkeys(expected, 1), box.hook_log()
    lines = {
        (session, line["uuid"]): line
        for session, transcript in claude_run.transcripts().items()
        for line in transcript
        if "uuid" in line
    }
    for event in events:
        host, session, uuid = event["id"].split(":", 2)
        assert (host, session) == ("claude-code", event["session_id"])
        assert _utc(lines[(session, uuid)]["timestamp"]) == _utc(event["occurred_at"])
        assert event["source"] == "host-capture"
    assert len({e["project_id"] for e in events}) == 1
    assert "error" not in box.hook_log().lower(), box.hook_log()


def test_claude_code_stores_nothing_but_the_turns(claude_run: ClaudeRun) -> None:
    """Nothing else is stored: no compaction summary or command echo, and not the lines a fork copies from
    its parent (the parent's session holds them)."""
    box = claude_run.sandbox
    stored = Counter((e["session_id"], e["role"], e["text"]) for e in box.events())
    extra = stored - Counter(_expected_turns(claude_run.turns))
    assert not extra, f"stored besides the turns: {sorted(extra.items())}"


def _expected_turns(turns: list[ClaudeTurn]) -> list[tuple[str, str, str]]:
    """(session, role, text) of each prompt and reply; a slash command is the host's, not a turn."""
    said = [t for t in turns if not t.prompt.startswith("/")]
    return [(t.session_id, "user", t.prompt) for t in said] + [
        (t.session_id, "assistant", t.reply) for t in said
    ]


def test_claude_code_pack_reaches_the_next_session_once(claude_run: ClaudeRun) -> None:
    """A new session's first request to the model carries yiji's pack exactly once, holding the previous
    session's last turn."""
    requests = claude_run.sandbox.model.requests_to(MESSAGES_PATH)
    first = _first_request_with(requests, SESSION_PROMPTS["next session"])
    assert len(_packs(first)) == 1, _packs(first)
    (pack,) = _packs(first)
    assert SESSION_PROMPTS["forked"] in pack


def test_claude_code_one_pack_per_request(claude_run: ClaudeRun) -> None:
    """No request carries more than one pack: continuing, resuming, compacting or forking a session adds no
    second pack beside the one the host already holds."""
    _assert_one_pack_per_request(claude_run.sandbox.model.requests_to(MESSAGES_PATH))


def test_claude_code_no_pack_when_nothing_is_new(claude_run: ClaudeRun) -> None:
    """Continuing, resuming or compacting a session that nothing else added to since brings no pack: the
    host already holds the session's own turns."""
    _assert_no_pack(claude_run.turns[1:5], 1)


def test_claude_code_import_equals_capture(claude_run: ClaudeRun) -> None:
    """`import-transcripts` of the host's folder into a new database gives exactly the captured events (same
    ids, text, sessions, times), and into the captured database adds nothing."""
    box = claude_run.sandbox
    fresh = box.root / "data" / "imported.db"
    folder = str(claude_run.config_dir / "projects")
    imported = box.yiji("import-transcripts", "claude-code", folder, db=fresh)
    assert imported.returncode == 0, imported.stderr
    assert _comparable(box.events(fresh)) == _comparable(box.events())
    again = box.yiji("import-transcripts", "claude-code", folder)
    assert again.returncode == 0, again.stderr
    assert _comparable(box.events()) == _comparable(box.events(fresh))


def test_claude_code_uninstall_restores_the_settings(claude_run: ClaudeRun) -> None:
    """`hook uninstall` gives back the person's settings file byte for byte."""
    settings = claude_run.config_dir / "settings.json"
    assert claude_run.settings_installed != claude_run.settings_before
    done = claude_run.sandbox.yiji("hook", "uninstall", "claude-code")
    assert done.returncode == 0, done.stderr
    assert settings.read_bytes() == claude_run.settings_before


def test_claude_code_session_start_under_a_writers_lock(tmp_path: Path) -> None:
    """With another process holding the database's write lock, a new session still starts with its pack:
    `SessionStart` only reads. The turn is captured once the lock is let go."""
    claude = _claude()
    with HostModel() as model:
        box = _claude_box(tmp_path, model)
        box.run(claude, "-p", "alpha: the build runs on Buildkite")
        assert box.events(), box.hook_log()
        writer = sqlite3.connect(box.db, timeout=0, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        seen = len(model.requests_to(MESSAGES_PATH))
        host = subprocess.Popen(
            [claude, "-p", "beta: and the cache lives in S3"],
            cwd=box.project,
            env=box.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            while len(model.requests_to(MESSAGES_PATH)) == seen and host.poll() is None:
                time.sleep(0.05)
        finally:
            writer.rollback()
            writer.close()
            out, err = host.communicate(timeout=HOST_TIMEOUT)
        assert host.returncode == 0, err
        first = _first_request_with(model.requests_to(MESSAGES_PATH), "beta: and the cache lives in S3")
        assert len(_packs(first)) == 1, box.hook_log()
        assert "alpha: the build runs on Buildkite" in _packs(first)[0]
        assert "beta: and the cache lives in S3" in [e["text"] for e in box.events()], box.hook_log()


def test_claude_code_hooks_run_without_yiji_on_the_path(tmp_path: Path) -> None:
    """`hook install` run by its full path, for a host whose PATH does not hold yiji's folder: the hooks
    still run (install writes a command that works from the host's environment)."""
    claude = _claude()
    with HostModel() as model:
        box = _claude_box(tmp_path, model)
        folder = str(Path(_yiji()).parent)
        box.env["PATH"] = os.pathsep.join(p for p in box.env["PATH"].split(os.pathsep) if p != folder)
        assert shutil.which("yiji", path=box.env["PATH"]) is None
        box.run(claude, "-p", "alpha: the build runs on Buildkite")
        texts = [e["text"] for e in box.events()] if box.db.exists() else []
        assert "alpha: the build runs on Buildkite" in texts, box.hook_log()


def test_claude_code_keeps_capturing_a_moved_folder(tmp_path: Path) -> None:
    """A session resumed after its project folder was renamed goes on being captured, each turn once, in
    the session's project."""
    claude = _claude()
    with HostModel() as model:
        box = _claude_box(tmp_path, model)
        first = json.loads(box.run(claude, "-p", "--output-format", "json", "alpha: before the move").stdout)
        box.project.rename(box.root / "atlas-renamed")
        proc = subprocess.run(
            [claude, "-r", first["session_id"], "-p", "--output-format", "json", "beta: after the move"],
            cwd=box.root / "atlas-renamed",
            env=box.env,
            capture_output=True,
            text=True,
            timeout=HOST_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr
        second = json.loads(proc.stdout)
        events = box.events()
        said = Counter((e["session_id"], e["role"], e["text"]) for e in events)
        expected = [
            (first["session_id"], "user", "alpha: before the move"),
            (first["session_id"], "assistant", first["result"]),
            (second["session_id"], "user", "beta: after the move"),
            (second["session_id"], "assistant", second["result"]),
        ]
        assert said == Counter(expected), box.hook_log()
        assert len({e["project_id"] for e in events}) == 1
        assert "conflict" not in box.hook_log(), box.hook_log()


def test_claude_code_deleted_turn_stays_deleted(tmp_path: Path) -> None:
    """A captured prompt deleted in yiji is not stored again when the host resumes the session, forks it
    (the fork copies the line under a new session id) or its transcripts are imported again; the residue
    scan finds nothing."""
    claude = _claude()
    secret = "alpha: the vault token rotates on Fridays"
    with HostModel() as model:
        box = _claude_box(tmp_path, model)
        first = json.loads(box.run(claude, "-p", "--output-format", "json", secret).stdout)
        (event,) = [e for e in box.events() if e["text"] == secret]
        project = event["project_id"]
        deleted = box.yiji("--project", project, "delete", "--event", event["id"], "--yes")
        assert deleted.returncode == 0, deleted.stderr
        box.run(claude, "-r", first["session_id"], "-p", "beta: resumed")
        box.run(claude, "-r", first["session_id"], "--fork-session", "-p", "gamma: forked")
        folder = str(box.home / ".claude" / "projects")
        imported = box.yiji("import-transcripts", "claude-code", folder)
        assert imported.returncode == 0, imported.stderr
        texts = [e["text"] for e in box.events()]
        assert secret not in texts, box.hook_log()
        assert {"beta: resumed", "gamma: forked"} <= set(texts), box.hook_log()
        scan = box.yiji("--project", project, "doctor", "--scan-for", secret)
        assert scan.returncode == 0, scan.stdout + scan.stderr


def _comparable(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("id", "role", "session_id", "project_id", "text", "occurred_at")
    return sorted(tuple(e[k] for k in keys) for e in events)


def _utc(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)


# -- Codex --------------------------------------------------------------------------------------------


CodexTurn = HostTurn


@dataclass
class CodexRun:
    sandbox: Sandbox
    turns: list[CodexTurn]
    files_before: dict[str, bytes | None]

    @property
    def codex_home(self) -> Path:
        return self.sandbox.home / ".codex"


CODEX_PROMPTS = {
    "new": "alpha: the queue is RabbitMQ",
    "resumed last": "beta: retries back off exponentially",
    "resumed by id": "gamma: the dead letter queue is kept a week",
    "forked": "delta: try Redis streams instead",
    "next session": "epsilon: where were we",
}
CODEX_COMPACT_LIMIT = 50_000
"""`model_auto_compact_token_limit`: Codex compacts before a turn when the last answer used more tokens."""
CODEX_FILES = ("config.toml", "hooks.json")
"""The files `hook install codex` and trusting hooks touch, compared after `hook uninstall`."""


def _codex_turn(box: Sandbox, codex: str, label: str, *command: str) -> CodexTurn:
    """``codex exec [command...] PROMPT`` with hooks run without the interactive trust step and the
    project folder accepted as it is; the thread id and the reply come from the ``--json`` events."""
    prompt = CODEX_PROMPTS[label]
    flags = ["--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json"]
    argv = [codex, "exec", *command, *flags, prompt]
    seen = len(box.model.requests_to(RESPONSES_PATH))
    events = [json.loads(line) for line in box.run(*argv).stdout.splitlines() if line.startswith("{")]
    made = box.model.requests_to(RESPONSES_PATH)[seen:]
    thread = next(e["thread_id"] for e in events if e.get("type") == "thread.started")
    replies = [
        e["item"]["text"]
        for e in events
        if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
    ]
    assert len(replies) == 1, events
    return CodexTurn(prompt, thread, replies[0], argv, made)


def _codex_home(box: Sandbox) -> Path:
    """Codex's folder in the sandbox, its `config.toml` naming the loopback server as a custom provider."""
    codex_home = box.home / ".codex"
    codex_home.mkdir()
    box.env |= {"CODEX_HOME": str(codex_home), "LOOPBACK_API_KEY": "dummy"}
    (codex_home / "config.toml").write_text(
        'model = "loopback-model"\n'
        'model_provider = "loopback"\n'
        f"model_auto_compact_token_limit = {CODEX_COMPACT_LIMIT}\n"
        "\n"
        "[model_providers.loopback]\n"
        'name = "loopback"\n'
        f'base_url = "{box.model.url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "LOOPBACK_API_KEY"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n",
        encoding="utf-8",
    )
    return codex_home


@pytest.fixture(scope="module")
def codex_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodexRun]:
    """Codex through `exec`, `exec resume --last` (which compacts first), `exec resume ID`, `exec fork ID`,
    then a new session."""
    codex = _program("YIJI_CODEX", "codex", f"@openai/codex {CODEX_VERSION} from npm (see .ci/run)")
    with HostModel() as model:
        box = Sandbox(tmp_path_factory.mktemp("codex"), model)
        codex_home = _codex_home(box)
        before = {
            name: (codex_home / name).read_bytes() if (codex_home / name).exists() else None
            for name in CODEX_FILES
        }
        installed = box.yiji("hook", "install", "codex")
        assert installed.returncode == 0, installed.stderr
        # The first answer reports more tokens used than the compaction limit: the next turn compacts first.
        model.usage_tokens = 2 * CODEX_COMPACT_LIMIT
        first = _codex_turn(box, codex, "new")
        model.usage_tokens = 15
        turns = [
            first,
            _codex_turn(box, codex, "resumed last", "resume", "--last"),
            _codex_turn(box, codex, "resumed by id", "resume", first.session_id),
            _codex_turn(box, codex, "forked", "fork", first.session_id),
            _codex_turn(box, codex, "next session"),
        ]
        yield CodexRun(box, turns, before)


def test_codex_sessions_are_what_the_scenario_says(codex_run: CodexRun) -> None:
    """One session resumed twice and compacted once, a fork and a new session under ids of their own, each
    turn answered by the loopback model through the Responses API."""
    sessions = [t.session_id for t in codex_run.turns]
    rollouts = {
        path: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        for path in (codex_run.codex_home / "sessions").rglob("rollout-*.jsonl")
    }
    assert len(rollouts) == 3
    (compacted,) = [p for p, lines in rollouts.items() if any(x.get("type") == "compacted" for x in lines)]
    assert sessions[0] in compacted.name
    assert sessions[:3] == [sessions[0]] * 3
    assert len(set(sessions)) == 3
    assert all(t.reply.startswith("reply ") for t in codex_run.turns)
    assert len(codex_run.sandbox.model.requests_to(RESPONSES_PATH)) >= len(codex_run.turns)


def test_codex_every_turn_captured_once(codex_run: CodexRun) -> None:
    """Every prompt and every reply is one event under the session that said it, and nothing else (no
    fork's copy of its parent) is stored; no hook logged a failure."""
    box = codex_run.sandbox
    events = box.events() if box.db.exists() else []
    stored = Counter((e["session_id"], e["role"], e["text"]) for e in events)
    expected = Counter(
        [(t.session_id, "user", t.prompt) for t in codex_run.turns]
        + [(t.session_id, "assistant", t.reply) for t in codex_run.turns]
    )
    assert stored == expected, box.hook_log()
    assert all(e["id"].startswith(f"codex:{e['session_id']}:") for e in events)
    assert "error" not in box.hook_log().lower(), box.hook_log()


def test_codex_pack_reaches_the_next_session_once(codex_run: CodexRun) -> None:
    """A new session's first request carries yiji's pack exactly once, holding the previous session's last
    turn."""
    requests = codex_run.sandbox.model.requests_to(RESPONSES_PATH)
    first = _first_request_with(requests, CODEX_PROMPTS["next session"])
    assert len(_packs(first)) == 1, _packs(first)
    assert CODEX_PROMPTS["forked"] in _packs(first)[0]


def test_codex_one_pack_per_request(codex_run: CodexRun) -> None:
    """No request carries more than one pack: resuming, compacting or forking adds none beside the one the
    host already holds."""
    _assert_one_pack_per_request(codex_run.sandbox.model.requests_to(RESPONSES_PATH))


def test_codex_no_pack_when_nothing_is_new(codex_run: CodexRun) -> None:
    """Resuming a session (and compacting it) that nothing else added to since brings no pack: the host
    already holds the session's own turns."""
    _assert_no_pack(codex_run.turns[1:3], 2)


def test_codex_import_equals_capture(codex_run: CodexRun) -> None:
    """`import-transcripts codex` of the sessions folder into a new database gives exactly the captured
    events, and into the captured database adds nothing."""
    box = codex_run.sandbox
    fresh = box.root / "data" / "imported.db"
    folder = str(codex_run.codex_home / "sessions")
    imported = box.yiji("import-transcripts", "codex", folder, db=fresh)
    assert imported.returncode == 0, imported.stderr
    captured = box.events() if box.db.exists() else []
    assert captured, "nothing was captured"
    assert _comparable(box.events(fresh)) == _comparable(captured)
    again = box.yiji("import-transcripts", "codex", folder)
    assert again.returncode == 0, again.stderr
    assert _comparable(box.events()) == _comparable(captured)


@pytest.fixture(scope="module")
def codex_uninstalled(codex_run: CodexRun) -> dict[str, bytes | None]:
    """The files of :data:`CODEX_FILES` after `hook uninstall codex` (None: no such file)."""
    done = codex_run.sandbox.yiji("hook", "uninstall", "codex")
    assert done.returncode == 0, done.stderr
    return {
        name: (codex_run.codex_home / name).read_bytes() if (codex_run.codex_home / name).exists() else None
        for name in CODEX_FILES
    }


def test_codex_uninstall_restores_the_configuration(
    codex_run: CodexRun, codex_uninstalled: dict[str, bytes | None]
) -> None:
    """After the sessions and `hook uninstall codex`, Codex's `config.toml` is byte for byte what it was
    before `install` (no trust entries left behind)."""
    assert codex_run.files_before["config.toml"] is not None
    assert codex_uninstalled["config.toml"] == codex_run.files_before["config.toml"]


def test_codex_uninstall_leaves_no_hooks_file(
    codex_run: CodexRun, codex_uninstalled: dict[str, bytes | None]
) -> None:
    """`install` made `hooks.json`; `uninstall` takes it away again."""
    assert codex_run.files_before["hooks.json"] is None
    assert codex_uninstalled["hooks.json"] is None


def test_codex_runs_hooks_a_person_trusted_with_install(tmp_path: Path) -> None:
    """`codex exec` runs no hook nobody trusted; after `hook install codex --trust` it runs yiji's without
    `--dangerously-bypass-hook-trust` (the trust yiji records is the trust Codex checks), and `uninstall`
    takes the trust out of `config.toml` again, byte for byte."""
    codex = _program("YIJI_CODEX", "codex", f"@openai/codex {CODEX_VERSION} from npm (see .ci/run)")
    with HostModel() as model:
        box = Sandbox(tmp_path, model)
        codex_home = _codex_home(box)
        config = (codex_home / "config.toml").read_bytes()
        exec_ = [codex, "exec", "--skip-git-repo-check"]
        assert box.yiji("hook", "install", "codex").returncode == 0
        untrusted = box.run(*exec_, "alpha: untrusted hooks")
        assert "hook: Stop" not in untrusted.stderr, untrusted.stderr
        trusted = box.yiji("hook", "install", "codex", "--trust")
        assert trusted.returncode == 0, trusted.stderr
        assert (codex_home / "config.toml").read_bytes() != config
        ran = box.run(*exec_, "beta: trusted hooks")
        assert "hook: SessionStart Completed" in ran.stderr, ran.stderr
        assert "hook: Stop Completed" in ran.stderr, ran.stderr
        assert box.yiji("hook", "uninstall", "codex").returncode == 0
        assert (codex_home / "config.toml").read_bytes() == config


# -- the pins -----------------------------------------------------------------------------------------


def test_pins_agree_with_ci_and_the_docs() -> None:
    """`.ci/run` installs the releases these tests name, and docs/development.md names the same."""
    root = Path(__file__).resolve().parent.parent
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    assert f"CLAUDE_CODE_VERSION={CLAUDE_CODE_VERSION}\n" in ci
    assert f"CODEX_VERSION={CODEX_VERSION}\n" in ci
    assert "hosts-claude-code-$CLAUDE_CODE_VERSION-codex-$CODEX_VERSION" in ci
    docs = (root / "docs" / "development.md").read_text(encoding="utf-8")
    assert f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}" in docs
    assert f"@openai/codex@{CODEX_VERSION}" in docs
    assert HOSTS_BIN.parent.parent.name in docs


RUNS = {"claude-code": ("claude_run", MESSAGES_PATH), "codex": ("codex_run", RESPONSES_PATH)}
"""Each host's recorded run and the path its model requests go to."""


def _model_requests(request: pytest.FixtureRequest, host: str) -> Any:
    run, path = RUNS[host]
    return request.getfixturevalue(run).sandbox.model.requests_to(path)


@pytest.mark.parametrize("host", RUNS)
def test_packs_fit_the_host(request: pytest.FixtureRequest, host: str) -> None:
    """Every pack, as the host passes it on, is at most 8,000 characters and whole (through its footer)."""
    _assert_packs_fit(_model_requests(request, host), PACK_LIMIT)


@pytest.mark.parametrize("host", RUNS)
def test_no_companion_persona(request: pytest.FixtureRequest, host: str) -> None:
    """A coding host is never told it is a companion."""
    _assert_no_companion_persona(_model_requests(request, host))
