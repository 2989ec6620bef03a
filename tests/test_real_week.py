"""A scripted week in one project, captured through the real hosts (Claude Code and Codex), with memories
extracted from a loopback OpenAI-compatible endpoint: what the next session's pack holds as each host
received it, and what the database file holds of the secrets pasted during the week.

One temporary home holds both hosts, each with yiji's hooks and ``remember`` skill installed by ``yiji
hook install`` (Codex with ``--trust``), one project folder and one yiji database whose configuration
turns the automatic run on (``[extraction] auto``) against :class:`tests.fakeprovider.FakeProvider`, which
plays the extraction model: it answers each request from the scripted data below by the text of the event
the request asks about (never by its context), so every memory still passes yiji's grounding (an exact
quote of that event, the speaker's role, the fact-key vocabulary). The hosts' own model is
:class:`tests.hostmodel.HostModel`, which records what each host sent.

The week, in order (the hosts stamp their own times; the week is the order of the sessions):

1. Claude Code, a new session: where the user lives (杭州), the user's coffee while coding, a decision
   (the cache stays on SQLite in WAL mode).
2. Codex, a new session: the user's job.
3. Claude Code, a new session: three secrets pasted (an OpenAI project key, a GitHub token, an AWS access
   key id).
4. Codex, the session of day 2 resumed: a correction (the user lives in 苏州, not 杭州).
5. Claude Code, a new session: the preference changed (green tea instead of coffee), and a request to
   remember something, which the host's model proposes by the ``remember`` skill's steps (played here
   through yiji's MCP server over stdio: ``event_submit``, then ``memory_derive`` with ``propose``).
6. An explicit ``yiji extraction run`` for the project (after the automatic runs), then the next session
   in each host.

The run happens once per module (the hosts cost seconds a turn); each test reads it.
"""

from __future__ import annotations

import fcntl
import json
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from .fakeprovider import CHAT_PATH, FakeProvider, Reply, chat_reply
from .hostmodel import MESSAGES_PATH, RESPONSES_PATH, HostModel, RecordedRequest
from .mcp_helpers import payload, stdio_client_session
from .test_real_hosts import (
    CODEX_VERSION,
    HostTurn,
    Sandbox,
    _claude,
    _claude_env,
    _codex_home,
    _first_request_with,
    _packs,
    _program,
)

OPENAI_KEY = (
    "sk-proj-WhEFKk5_kqjl9ObZOw2ReP0piuQr9WS0vtqFOjavFZKrGdpC_oXpIVtv_CajGiLLkt9w_bsSNpT3BlbkFJKQqb20-iJsu4"
    "dAoB2SWwCqx3_lLCKI2-vdapqFxIiWzHlIUL1unMaefdUouWSbMtcKSX39JeZW"
)
GITHUB_TOKEN = "ghp_73Tp4auBH6RCRdA2X5ogsUjn7R2B6KIcfLMF"
AWS_KEY_ID = "AKIA6KC65IA3SUN2W2N2"
SECRETS = {"openai": OPENAI_KEY, "github": GITHUB_TOKEN, "aws": AWS_KEY_ID}
"""Made up for this test, in the published formats (none was ever issued)."""
WINDOW = 12
"""Any run of this many characters of a secret counts as the secret (longer than each prefix)."""


def _fact(
    text: str, quote: str, kind: str, key: str | None = None, value: str | None = None
) -> dict[str, Any]:
    keyed = {"subject": "user", "fact_key": key, "value": value} if key else {}
    return {"text": text, "quote": quote, "kind": kind, "basis": "user_statement", "confidence": 0.9} | keyed


HANGZHOU = "我住在杭州，平时在家远程办公。"
COFFEE = "我写代码的时候习惯喝咖啡。"
DECISION = "Decision: the cache layer stays on SQLite in WAL mode; we will not add Redis."
JOB = "For the record, I work as a release engineer at Northwind."
PASTED = (
    "The deploy job fails with 401. From the vault: "
    f"OPENAI_API_KEY={OPENAI_KEY} GITHUB_TOKEN={GITHUB_TOKEN} AWS_ACCESS_KEY_ID={AWS_KEY_ID} what is wrong?"
)
CORRECTION = "更正一下，我不住在杭州。我住在苏州，一直在苏州远程办公。"
TEA = "I switched from coffee to green tea: these days I drink green tea while coding."
REMEMBER = "Please remember: commit messages in this repository are always written in English."
NEXT = {"claude-code": "Where were we on atlas?", "codex": "我们上次做到哪里了？"}

EXTRACTED: dict[str, dict[str, Any]] = {
    HANGZHOU: _fact("用户住在杭州", "我住在杭州", "fact", "home.city", "杭州"),
    COFFEE: _fact(
        "用户写代码时习惯喝咖啡", "我写代码的时候习惯喝咖啡", "preference", "preference.drink", "咖啡"
    ),
    DECISION: _fact(
        "The cache layer stays on SQLite in WAL mode, without Redis",
        "the cache layer stays on SQLite in WAL mode; we will not add Redis",
        "agreement",
    ),
    JOB: _fact(
        "The user works as a release engineer",
        "I work as a release engineer at Northwind",
        "fact",
        "job.title",
        "release engineer",
    ),
    CORRECTION: _fact("用户住在苏州", "我住在苏州", "fact", "home.city", "苏州"),
    TEA: _fact(
        "The user drinks green tea while coding",
        "these days I drink green tea while coding",
        "preference",
        "preference.drink",
        "green tea",
    ),
}
"""What the loopback extraction model answers for the event whose text is the key (every other event:
no memories)."""
CURRENT = (EXTRACTED[DECISION], EXTRACTED[JOB], EXTRACTED[CORRECTION], EXTRACTED[TEA])
SUPERSEDED = (EXTRACTED[HANGZHOU], EXTRACTED[COFFEE])
PROPOSED = _fact(
    "Commit messages in this repository are written in English",
    "commit messages in this repository are always written in English",
    "preference",
)


def _event_part(request: Any) -> str:
    """The EVENT section of an extraction request: what it asks about, not its context."""
    return str(request["messages"][-1]["content"].split("\nEVENT (", 1)[1])


def _event_text(request: Any) -> str:
    """The event's text as the request shows it, in numbered clauses, put back together (without spaces:
    a clause ends where the text had a space or none)."""
    shown = re.findall(r"^\[\d+\] (.*)$", _event_part(request), re.M)
    return "".join("".join(shown).split())


def _is(request: Any, said: str) -> bool:
    """Whether ``request`` asks about the turn whose text is ``said``."""
    return _event_text(request) == "".join(said.split())


def _extraction_model(request: Any) -> Reply:
    return chat_reply({"memories": [m for said, m in EXTRACTED.items() if _is(request, said)]})


@dataclass
class Week:
    box: Sandbox
    extractor: FakeProvider
    project: str
    turns: list[HostTurn] = field(default_factory=list)
    """Every host command of the week, the next sessions last."""
    explicit_run: dict[str, Any] = field(default_factory=dict)
    """What ``yiji extraction run --json`` said before the next sessions."""

    def next_request(self, host: str) -> RecordedRequest:
        """The first request the next session of ``host`` made to its model."""
        path = MESSAGES_PATH if host == "claude-code" else RESPONSES_PATH
        return _first_request_with(self.box.model.requests_to(path), NEXT[host])


def _yiji_config(box: Sandbox, extractor: FakeProvider, *, auto: bool) -> None:
    (box.root / "yiji.toml").write_text(
        "[extraction]\n"
        f'base_url = "{extractor.base_url}"\n'
        'model = "loopback-extractor"\n'
        "timeout_seconds = 30\n"
        f"auto = {json.dumps(auto)}\n"
        "\n[embedding]\n"
        'provider = "off"\n',
        encoding="utf-8",
    )


def _claude_turn(box: Sandbox, claude: str, prompt: str, *flags: str) -> HostTurn:
    argv = [claude, *flags, "-p", "--output-format", "json", prompt]
    seen = len(box.model.requests_to(MESSAGES_PATH))
    result = json.loads(box.run(*argv).stdout)
    made = box.model.requests_to(MESSAGES_PATH)[seen:]
    return HostTurn(prompt, result["session_id"], result["result"], argv, made)


def _codex_turn(box: Sandbox, codex: str, prompt: str, *command: str) -> HostTurn:
    argv = [codex, "exec", *command, "--skip-git-repo-check", "--json", prompt]
    seen = len(box.model.requests_to(RESPONSES_PATH))
    lines = [json.loads(line) for line in box.run(*argv).stdout.splitlines() if line.startswith("{")]
    made = box.model.requests_to(RESPONSES_PATH)[seen:]
    thread = next(e["thread_id"] for e in lines if e.get("type") == "thread.started")
    (reply,) = [
        e["item"]["text"]
        for e in lines
        if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"
    ]
    return HostTurn(prompt, thread, reply, argv, made)


def _propose_by_the_skill(box: Sandbox, project: str) -> None:
    """The ``remember`` skill's steps, as the host's model follows them, through ``yiji serve``."""

    async def steps() -> None:
        async with stdio_client_session(box.db, env=box.env) as client:
            event = payload(
                await client.call_tool(
                    "event_submit",
                    {"role": "user", "text": REMEMBER, "session": "remember", "project": project},
                )
            )["event"]
            payload(
                await client.call_tool(
                    "memory_derive",
                    {"event_id": event["id"], "propose": True, "memories": [PROPOSED], "project": project},
                )
            )

    anyio.run(steps)


def _lock(box: Sandbox) -> Path:
    return box.db.with_name(box.db.name + "-extraction.lock")


def _hold_the_lock(box: Sandbox, seconds: float = 120) -> Any:
    """The extraction lock, taken once the automatic run under way (if any) let it go: no other run
    starts while the test holds it."""
    file = _lock(box).open("a+b")
    end = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return file
        except OSError:
            if time.monotonic() > end:
                file.close()
                raise AssertionError("an automatic run did not end in time") from None
            time.sleep(0.05)


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Week]:
    claude = _claude()
    codex = _program("YIJI_CODEX", "codex", f"@openai/codex {CODEX_VERSION} from npm (see .ci/run)")
    with HostModel() as model, FakeProvider() as extractor:
        extractor.answer_chat(_extraction_model)
        box = Sandbox(tmp_path_factory.mktemp("week"), model)
        _yiji_config(box, extractor, auto=True)
        _claude_env(box, model)
        _codex_home(box)
        for install in (("claude-code",), ("codex", "--trust")):
            done = box.yiji("hook", "install", *install)
            assert done.returncode == 0, done.stderr
        found = box.yiji("hook", "project")
        assert found.returncode == 0, found.stderr
        run = Week(box, extractor, found.stdout.strip())
        try:
            day1 = _claude_turn(box, claude, HANGZHOU)
            run.turns += [
                day1,
                _claude_turn(box, claude, COFFEE, "-c"),
                _claude_turn(box, claude, DECISION, "-c"),
            ]
            day2 = _codex_turn(box, codex, JOB)
            run.turns += [day2, _claude_turn(box, claude, PASTED)]
            run.turns.append(_codex_turn(box, codex, CORRECTION, "resume", day2.session_id))
            run.turns += [_claude_turn(box, claude, TEA), _claude_turn(box, claude, REMEMBER, "-c")]
            _propose_by_the_skill(box, run.project)
            held = _hold_the_lock(box)
            try:
                done = box.yiji("--project", run.project, "--json", "extraction", "run")
                assert done.returncode == 0, done.stdout + done.stderr
                run.explicit_run = json.loads(done.stdout)
            finally:
                held.close()
            # The next sessions start no automatic run: what they are shown is what the week left.
            _yiji_config(box, extractor, auto=False)
            run.turns += [
                _claude_turn(box, claude, NEXT["claude-code"]),
                _codex_turn(box, codex, NEXT["codex"]),
            ]
            yield run
        finally:
            _hold_the_lock(box).close()  # no automatic run outlives the endpoint it talks to


def _memories_section(pack: str) -> list[str]:
    """The lines of the pack's memories section, in order."""
    _, _, rest = pack.partition("Decisions, preferences and facts (newest first):\n")
    lines = []
    for line in rest.splitlines():
        if not line.startswith("- "):
            break
        lines.append(line)
    return lines


def _shown(memory: dict[str, Any]) -> str:
    """How a pack shows a memory the user stated: its text, then the user's words it rests on."""
    return f'"{memory["text"]}" (the user said: "{memory["quote"]}")'


HOSTS = ("claude-code", "codex")


def _stored(week: Week, start: str) -> str:
    """The text of the one stored event that starts with ``start``."""
    (text,) = [e["text"] for e in week.box.events() if e["text"].startswith(start)]
    return str(text)


@pytest.mark.parametrize("host", HOSTS)
def test_the_next_sessions_pack_leads_with_the_current_memories(week: Week, host: str) -> None:
    """The next session's first request carries one pack, whose memories are the current preference (not
    the one it replaced), the corrected fact (not the wrong one), the decision and the user's job, each
    with the user's words it rests on, and which counts the proposal that waits."""
    packs = _packs(week.next_request(host))
    assert len(packs) == 1, packs
    (pack,) = packs
    lines = _memories_section(pack)
    for memory in CURRENT:
        assert [line for line in lines if _shown(memory) in line], (memory["text"], lines)
    assert len(lines) == len(CURRENT), lines
    for memory in SUPERSEDED:
        assert memory["text"] not in pack
        assert not [line for line in lines if memory["quote"] in line], lines
    assert PROPOSED["text"] not in pack
    assert "\n1 proposed memory waits for a person's review: yiji review, or yiji ui.\n" in pack


def test_secret_characters_are_nowhere_in_the_database_file(week: Week) -> None:
    """After the week, no secret, and no run of :data:`WINDOW` characters of one, is in the raw bytes of
    the database file, its write-ahead log or its shared-memory file; the pasted turn is stored with a
    marker in each place, and the extraction model never saw a secret either."""
    files = [p for p in (week.box.db.parent.glob(week.box.db.name + "*")) if p.is_file()]
    assert {p.name for p in files} >= {"yiji.db"}, files
    data = {p.name: p.read_bytes() for p in files}
    seen = "\n".join(r.body.decode("utf-8") for r in week.extractor.requests)
    for name, secret in SECRETS.items():
        runs = {secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)}
        for file, raw in data.items():
            assert [r for r in runs if r.encode() in raw] == [], (name, file)
        assert [r for r in runs if r in seen] == [], name
    pasted = _stored(week, "The deploy job fails")
    assert pasted.count("[redacted:") == 3, pasted
    assert pasted.startswith("The deploy job fails with 401. From the vault: OPENAI_API_KEY=")


def test_the_extraction_model_saw_each_user_turn_once_with_its_session(week: Week) -> None:
    """Every user turn of the week reached the extraction model once (the automatic runs and the explicit
    run never sent one twice; the skill's event too), with the session's earlier turns as context; the
    explicit run found nothing left pending and failed nothing; the automatic runs logged no failure."""
    requests = [json.loads(r.body) for r in week.extractor.requests_to(CHAT_PATH)]
    for turn in week.turns[:-2]:
        said = turn.prompt if turn.prompt != PASTED else _stored(week, "The deploy job fails")
        # the words the skill stored are an event of their own, beside the captured turn
        events = 2 if turn.prompt == REMEMBER else 1
        assert [_is(r, said) for r in requests].count(True) == events, turn.prompt
    assert len(requests) == len(week.turns) - 2 + 1  # the next sessions' turns were never sent
    (decision,) = [r for r in requests if _is(r, DECISION)]
    context = decision["messages"][-1]["content"].split("CONTEXT (", 1)[1].split("\nEVENT (", 1)[0]
    assert COFFEE.rstrip("。") in context and HANGZHOU.rstrip("。") in context
    assert week.explicit_run["still_pending"] == 0 and week.explicit_run["failures"] == []
    log = week.box.hook_log()
    assert "extraction run --auto: tried" in log, log
    assert "error" not in log.lower() and "failed" not in log.lower(), log


def test_both_hosts_captured_into_one_project_and_list_the_skill(week: Week) -> None:
    """Both hosts' turns are stored, each once, in one project (the one ``yiji hook project`` names); each
    host offered its model the ``remember`` skill that ``hook install`` put in the home."""
    events = week.box.events()
    assert {e["project_id"] for e in events} == {week.project}
    hosts = Counter(e["id"].split(":", 1)[0] for e in events if e["role"] == "user")
    assert hosts["claude-code"] == 7 and hosts["codex"] == 3, hosts
    for turn in week.turns:
        host = "claude-code" if "claude" in Path(turn.argv[0]).name else "codex"
        stored = [e for e in events if e["role"] == "user" and e["session_id"] == turn.session_id]
        assert stored, host
    for host, path in (("claude-code", MESSAGES_PATH), ("codex", RESPONSES_PATH)):
        first = week.box.model.requests_to(path)[0].text
        assert "- remember: Propose a lasting memory to yiji for the user to review." in first, host
    conn = sqlite3.connect(f"file:{week.box.db}?mode=ro", uri=True)
    try:
        states = Counter(state for (state,) in conn.execute("SELECT review_state FROM memories"))
    finally:
        conn.close()
    assert states == {"accepted": len(CURRENT) + len(SUPERSEDED), "proposed": 1}, states
