"""Writes the labelled set of the secret-redaction measurement (``secrets.jsonl``, ``lookalikes.jsonl``).

Every secret is random text in a provider's published format (seeded, so the files are reproducible);
none is a real credential. Run: ``uv run python tests/data/secrets/make_set.py``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
rng = random.Random(20261206)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"


def pick(chars: str, n: int) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt() -> str:
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(
        json.dumps({"sub": pick(string.digits, 8), "iat": rng.randint(1_600_000_000, 1_800_000_000)}).encode()
    )
    return f"{head}.{body}.{b64url(rng.randbytes(32))}"


def pem(kind: str) -> str:
    body = base64.b64encode(rng.randbytes(rng.choice([180, 300, 600]))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{lines}\n-----END {kind}PRIVATE KEY-----"


SECRETS: dict[str, Callable[[], str]] = {
    "openai-project": lambda: "sk-proj-" + pick(URLSAFE, 74) + "T3BlbkFJ" + pick(URLSAFE, 74),
    "openai-legacy": lambda: "sk-" + pick(ALNUM, 20) + "T3BlbkFJ" + pick(ALNUM, 20),
    "openai-svcacct": lambda: "sk-svcacct-" + pick(URLSAFE, 58) + "T3BlbkFJ" + pick(URLSAFE, 58),
    "deepseek": lambda: "sk-" + pick(HEX, 32),
    "anthropic": lambda: "sk-ant-api03-" + pick(URLSAFE, 93) + "AA",
    "github-pat": lambda: "ghp_" + pick(ALNUM, 36),
    "github-oauth": lambda: "gho_" + pick(ALNUM, 36),
    "github-app": lambda: "ghs_" + pick(ALNUM, 36),
    "github-fine-grained": lambda: "github_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59),
    "gitlab": lambda: "glpat-" + pick(URLSAFE, 20),
    "slack-bot": lambda: f"xoxb-{pick(string.digits, 12)}-{pick(string.digits, 13)}-{pick(ALNUM, 24)}",
    "slack-user": lambda: (
        f"xoxp-{pick(string.digits, 12)}-{pick(string.digits, 12)}-{pick(string.digits, 13)}-{pick(HEX, 32)}"
    ),
    "stripe": lambda: rng.choice(["sk_live_", "rk_live_", "sk_test_"]) + pick(ALNUM, 24),
    "google": lambda: "AIza" + pick(URLSAFE, 35),
    "aws-key-id": lambda: rng.choice(["AKIA", "ASIA"]) + pick(B32, 16),
    "huggingface": lambda: "hf_" + pick(string.ascii_letters, 34),
    "npm": lambda: "npm_" + pick(ALNUM, 36),
    "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + pick(URLSAFE, 70),
    "sendgrid": lambda: "SG." + pick(URLSAFE, 22) + "." + pick(URLSAFE, 43),
    "digitalocean": lambda: "dop_v1_" + pick(HEX, 64),
    "shopify": lambda: "shpat_" + pick(HEX, 32),
    "telegram": lambda: f"{pick(string.digits, 10)}:AA{pick(URLSAFE, 33)}",
    "jwt": jwt,
    "pem-rsa": lambda: pem("RSA "),
    "pem-openssh": lambda: pem("OPENSSH "),
    "pem-pkcs8": lambda: pem(""),
}

CONTEXTS = [
    "here is my key {s} can you check why it fails",
    "export API_CREDENTIAL={s}",
    "我把密钥贴在这里：{s} 帮我看看为什么 401",
    'client = OpenAI(api_key="{s}")',
    "Error: invalid credential '{s}' (status 401)",
    "{s}",
    "config:\n  credential: {s}\n  region: us-east-1",
    '{{"auth": "{s}", "retries": 3}}',
]

ASSIGNED: dict[str, Callable[[], tuple[str, str]]] = {
    "env-password": lambda: (s := pick(ALNUM + "!@%^&*", 14), f"DB_PASSWORD={s}"),
    "env-secret": lambda: (s := pick(ALNUM, 32), f"export CLIENT_SECRET={s}"),
    "python-password": lambda: (s := pick(ALNUM + "!#%", 12), f'password = "{s}"'),
    "python-token": lambda: (s := pick(HEX, 40), f"self.token = '{s}'"),
    "json-password": lambda: (s := pick(ALNUM, 16), f'{{"username": "admin", "password": "{s}"}}'),
    "json-api-key": lambda: (s := pick(ALNUM, 32), f'{{"api_key": "{s}", "timeout": 30}}'),
    "yaml-secret": lambda: (s := pick(ALNUM, 24), f"auth:\n  secret: {s}\n  ttl: 3600"),
    "yaml-token": lambda: (s := pick(ALNUM + "-_", 30), f"  access_token: {s}"),
    "go-apikey": lambda: (s := pick(ALNUM, 28), f'apiKey := "{s}"'),
    "js-secret-key": lambda: (s := pick(ALNUM, 40), f"const SECRET_KEY = '{s}';"),
    "zh-password": lambda: (s := pick(ALNUM, 10), f"服务器密码：{s}，别告诉别人"),
    "aws-secret-key": lambda: (s := pick(ALNUM + "/+", 40), f"aws_secret_access_key = {s}"),
    "url-password": lambda: (
        s := pick(ALNUM, 16),
        f"DATABASE_URL=postgres://app:{s}@db.internal:5432/prod",
    ),
    "url-password-redis": lambda: (
        s := pick(ALNUM, 20),
        f"connect to redis://default:{s}@cache:6379/0 please",
    ),
    "bearer-header": lambda: (
        s := pick(ALNUM + "._-", 40),
        f"curl -H 'Authorization: Bearer {s}' https://api.example.com",
    ),
    "prose-password": lambda: (
        s := pick(string.ascii_letters, 6) + pick(string.digits, 3),
        rng.choice(["my password is {s} for the staging box", "wifi 密码是 {s}"]).format(s=s),
    ),
    # known misses: no prefix, no name, no digit to tell them from words
    "unlabelled-hex-key": lambda: (s := pick(HEX, 32), f"use {s} for the maps service"),
    "prose-password-letters": lambda: (s := pick(string.ascii_lowercase, 10), f"the password is {s} now"),
    "slack-webhook": lambda: (
        s := f"T{pick(B32, 8)}/B{pick(B32, 10)}/{pick(ALNUM, 24)}",
        f"post alerts to https://hooks.slack.com/services/{s}",
    ),
    "basic-header": lambda: (
        s := base64.b64encode(f"user:{pick(ALNUM, 12)}".encode()).decode(),
        f"Authorization: Basic {s}",
    ),
}

KNOWN_MISSES = {"unlabelled-hex-key", "prose-password-letters"}


def lookalikes() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []

    def add(kind: str, make: Callable[[], str], n: int) -> None:
        out.extend((kind, make()) for _ in range(n))

    sha1 = lambda: hashlib.sha1(rng.randbytes(16)).hexdigest()  # noqa: E731
    sha256 = lambda: hashlib.sha256(rng.randbytes(16)).hexdigest()  # noqa: E731
    b64 = lambda n: base64.b64encode(rng.randbytes(n)).decode()  # noqa: E731
    add("git-hash", lambda: f"commit {sha1()}\nAuthor: Li Wei <li@example.com>", 15)
    add("git-short-hash", lambda: f"fixed in {sha1()[:7]}, reverted by {sha1()[:10]}", 10)
    add("git-log-line", lambda: f"{sha1()} refs/heads/main", 5)
    add("uuid", lambda: f"request id {uuid.UUID(bytes=rng.randbytes(16), version=4)} failed", 15)
    add("uuid-json", lambda: f'{{"id": "{uuid.UUID(bytes=rng.randbytes(16), version=4)}", "ok": true}}', 10)
    add("base64-image", lambda: f'<img src="data:image/png;base64,{b64(240)}">', 15)
    add("sha256-sum", lambda: f"{sha256()}  yiji-0.4.0.tar.gz", 10)
    add("sha256-digest", lambda: f"image: python@sha256:{sha256()}", 10)
    add("npm-integrity", lambda: f'"integrity": "sha512-{b64(64)}"', 15)
    words = [
        "Abstract",
        "Singleton",
        "Proxy",
        "Factory",
        "Bean",
        "Request",
        "Handler",
        "Token",
        "Secret",
        "Manager",
        "Provider",
        "Session",
        "Key",
        "Cache",
        "Resolver",
        "Adapter",
        "Password",
        "Validator",
    ]
    add("long-identifier", lambda: "".join(rng.sample(words, 6)) + "Impl", 15)
    add("snake-identifier", lambda: "_".join(w.lower() for w in rng.sample(words, 5)) + "_v2", 10)
    add(
        "chinese-digits",
        lambda: rng.choice(
            [
                f"我的订单号是{pick(string.digits, 16)}，下单时间 2024年5月{rng.randint(1, 28)}日",
                f"会议室在{rng.randint(1, 30)}楼{rng.randint(100, 999)}，电话 138{pick(string.digits, 8)}",
                f"快递单号 SF{pick(string.digits, 12)} 已签收，共 {rng.randint(2, 9)} 件",
                f"身份证后四位 {pick(string.digits, 4)}，学号 2021{pick(string.digits, 6)}",
            ]
        ),
        20,
    )
    add(
        "code-reference",
        lambda: rng.choice(
            [
                'password = os.environ["DB_PASSWORD"]',
                "api_key = settings.OPENAI_API_KEY",
                "token = get_token(session)",
                "secret: ${CLIENT_SECRET}",
                "DATABASE_URL=postgres://app:${DB_PASS}@db:5432/prod",
                '"password": "<your password>"',
                "export OPENAI_API_KEY=$OPENAI_API_KEY",
                "Authorization: Bearer ${TOKEN}",
                "password: null",
                "api_key=None",
            ]
        ),
        20,
    )
    add(
        "token-counts",
        lambda: rng.choice(
            [
                f"max_tokens: {rng.randint(1000, 200000)}",
                f"token_count={rng.randint(100000, 999999)}",
                f'"total_tokens": {rng.randint(10000, 99999)}',
                f"prompt used {rng.randint(1000, 99999)} tokens",
                f"num_tokens = {rng.randint(100000, 999999)}",
            ]
        ),
        15,
    )
    add(
        "prose-mention",
        lambda: rng.choice(
            [
                "GitHub tokens start with ghp_ and OpenAI keys with sk-proj-",
                "the bearer token expired again, please refresh it",
                "AWS access key ids begin with AKIA; rotate them every 90 days",
                "sk-learn is not a package; you mean scikit-learn",
                "the password reset email never arrived",
                "用 Authorization: Bearer 加上你的令牌访问接口",
                "a JWT has three parts: header.payload.signature",
                "-----BEGIN PUBLIC KEY----- blocks are safe to share",
                "the password is incorrect, try again",
                "密码是必填项，长度至少 8 位",
                "password was reset on 2026-03-01",
            ]
        ),
        25,
    )
    add(
        "url-no-password",
        lambda: rng.choice(
            [
                f"git clone git@github.com:org/{pick(string.ascii_lowercase, 8)}.git",
                f"https://user@example.com/{pick(ALNUM, 20)}",
                f"https://example.com/download?sig={pick(HEX, 12)}&ts={rng.randint(10**9, 2 * 10**9)}",
                f"ssh://git@gitlab.com:2222/{pick(string.ascii_lowercase, 6)}/repo.git",
                f"mailto:{pick(string.ascii_lowercase, 6)}@example.com",
            ]
        ),
        15,
    )
    add(
        "misc-ids",
        lambda: rng.choice(
            [
                f"arn:aws:iam::{pick(string.digits, 12)}:role/deploy",
                f"ip 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}"
                f" port {rng.randint(1000, 65535)}",
                f"version 1.{rng.randint(0, 40)}.{rng.randint(0, 9)}+build.{pick(HEX, 8)}",
                f"docker run -d --name web {pick(HEX, 12)}",
                f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:{rng.randint(0, 59):02d}:00Z",
                f"ORDER-{pick(string.ascii_uppercase + string.digits, 20)}",
                f"ev_{pick(HEX, 32)}",
            ]
        ),
        20,
    )
    return out


def main() -> None:
    with (HERE / "secrets.jsonl").open("w", encoding="utf-8") as out:
        for kind, make in SECRETS.items():
            for context in CONTEXTS:
                secret = make()
                out.write(
                    json.dumps(
                        {"kind": kind, "secret": secret, "text": context.format(s=secret)}, ensure_ascii=False
                    )
                    + "\n"
                )
        for kind, make_pair in ASSIGNED.items():
            for _ in range(3 if kind in KNOWN_MISSES else 6):
                secret, text = make_pair()
                out.write(
                    json.dumps({"kind": kind, "secret": secret, "text": text}, ensure_ascii=False) + "\n"
                )
    with (HERE / "lookalikes.jsonl").open("w", encoding="utf-8") as out:
        for kind, text in lookalikes():
            out.write(json.dumps({"kind": kind, "text": text}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
