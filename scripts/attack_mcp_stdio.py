"""Fire malformed and coercing JSON-RPC lines at a real `yiji serve` and count how each was answered.

Usage: uv run python scripts/attack_mcp_stdio.py [--count N] [--seed S]

Every line carries a request id the server can read (so the protocol allows an error response), and the
text "LEAK-<n>" somewhere in it. The script reports, per kind: lines tried, lines answered with a JSON-RPC
error or tool error, lines that stored an event (should be 0), and whether any "LEAK-" text reached the
server's stderr (should be never). Prints one table; exits 1 if anything was not handled.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path


def _call(request_id: int, arguments: dict[str, object], tool: str = "event_submit") -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def _line(kind: str, request_id: int, rng: random.Random) -> bytes:
    leak = f"LEAK-{request_id}"
    submit = {"session": "s", "role": "user", "text": leak}
    if kind == "truncated":
        text = json.dumps(_call(request_id, submit)).encode()
        return text[: rng.randint(len(text) // 2, len(text) - 2)]
    if kind == "deep":
        depth = rng.choice([300, 5_000, 100_000])
        head = f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping","params":{{"{leak}":'
        return head.encode() + b"[" * depth + b"]" * depth + b"}}"
    if kind == "surrogate":
        return (
            json.dumps(_call(request_id, {**submit, "text": "X"})).replace('"X"', f'"\\ud83d{leak}"').encode()
        )
    if kind == "invalid_utf8":
        raw = json.dumps(_call(request_id, {**submit, "text": "X"})).encode()
        return raw.replace(
            b'"X"', b'"' + leak.encode() + bytes([rng.choice([0xFF, 0xC3, 0xE9, 0x80])]) + b'"'
        )
    if kind == "batch":
        return json.dumps([{"jsonrpc": "2.0", "id": request_id, "method": "ping"}, {"x": leak}]).encode()
    if kind == "unknown_method":
        return json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": "x/steal", "params": {"a": leak}}
        ).encode()
    if kind == "coerced_bool":
        value = rng.choice(["yes", 1, "on", "true", 1.0])
        return json.dumps(_call(request_id, {"event_id": leak, "confirm": value}, "memory_delete")).encode()
    if kind == "coerced_number":
        value = rng.choice([True, "4000", 4000.0, "1e3"])
        return json.dumps(_call(request_id, {"budget": value, "query": leak}, "session_resume")).encode()
    if kind == "long_name":
        return json.dumps(_call(request_id, {**submit, leak + "n" * 100_000: 1})).encode()
    raise ValueError(kind)


KINDS = [
    "truncated",
    "deep",
    "surrogate",
    "invalid_utf8",
    "batch",
    "unknown_method",
    "coerced_bool",
    "coerced_number",
    "long_name",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="lines per kind")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "a", "version": "0"},
        },
    }
    lines = [json.dumps(init).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    kind_of: dict[int, str] = {}
    request_id = 1
    for kind in KINDS:
        for _ in range(args.count):
            lines.append(_line(kind, request_id, rng))
            kind_of[request_id] = kind
            request_id += 1
    responses: list[bytes] = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "attack.db"
        proc = subprocess.Popen(
            [sys.executable, "-m", "yiji", "--db", str(db), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdin and proc.stdout and proc.stderr
        wanted = set(kind_of) | {0}

        def read() -> None:
            assert proc.stdout
            seen: set[object] = set()
            for raw in proc.stdout:
                responses.append(raw)
                seen.add(json.loads(raw).get("id"))
                if wanted <= seen:
                    return

        # keep stdin open until every request is answered, as an interactive client would
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        reader.join(timeout=600)
        proc.stdin.close()
        stderr = proc.stderr.read()
        proc.wait(timeout=60)
        reader.join(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
        conn = sqlite3.connect(db)
        stored = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        conn.close()
    handled: Counter[str] = Counter()
    for raw in responses:
        message = json.loads(raw)
        rid = message.get("id")
        if rid not in kind_of:
            continue
        is_error = "error" in message or bool(message.get("result", {}).get("isError"))
        leaked = "LEAK-" in raw.decode("utf-8", "replace") and kind_of[rid] != "long_name"
        if is_error and not leaked:
            handled[kind_of[rid]] += 1
    leaked_log = "LEAK-" in stderr.decode("utf-8", "replace")
    print(f"{'kind':16} {'tried':>6} {'handled':>8}")
    for kind in KINDS:
        print(f"{kind:16} {args.count:6} {handled[kind]:8}")
    total = sum(handled.values())
    print(f"{'total':16} {args.count * len(KINDS):6} {total:8}")
    print(f"events stored: {stored}; message text in the server log: {'YES' if leaked_log else 'no'}")
    return 0 if total == args.count * len(KINDS) and stored == 0 and not leaked_log else 1


if __name__ == "__main__":
    sys.exit(main())
