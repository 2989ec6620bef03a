"""The extraction and embedding clients against a real loopback server (tests/fakeprovider.py)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

import yiji.providers.embeddings as embeddings_module
import yiji.providers.extraction as extraction_module
from yiji.config import EmbeddingConfig, ExtractionConfig, load_config
from yiji.domain.validation import PLACEHOLDER, PROMPT_EXAMPLE_TEXTS, Rule, SourceEvent, validate_batch
from yiji.errors import InvalidInput, ProviderError, ProviderPermanent, ProviderTransient
from yiji.providers.embeddings import OpenAIEmbedder
from yiji.providers.extraction import (
    ANSWER_SCHEMA,
    LANGUAGES,
    PROMPT_VERSION,
    ContextTurn,
    EventForExtraction,
    Extractor,
    OpenAIExtractor,
    event_language,
    load_prompt,
)
from yiji.service import build_extractor

from .fakeprovider import (
    CHAT_PATH,
    EMBEDDINGS_PATH,
    FAKE_SECRET,
    FakeProvider,
    Reply,
    chat_content,
    chat_reply,
    content_not_json,
    dripping,
    embeddings_reply,
    huge,
    malformed_json,
    rate_limited,
    raw_reply,
    server_error,
    slow,
)

KEY_ENV = "YIJI_TEST_EXTRACTION_KEY"
API_KEY = "sk-local-KEY-0123456789abcdef"
INPUT_MARK = "INPUT-MARK-7731"
EVENT_TEXT = f"我上个月从杭州搬到上海了，现在每天骑车上班。{INPUT_MARK}"
EVENT = EventForExtraction(
    role="user",
    category="conversation",
    text=EVENT_TEXT,
    occurred_at=datetime(2025, 6, 10, 9, 0, tzinfo=UTC),
    context=(ContextTurn("assistant", "最近怎么样？"),),
    timezone="Asia/Shanghai",
    persona="小忆，温柔的陪伴者",
    speakers=(("user", "阿明"), ("assistant", "xiaoyi")),
)

GOOD_ANSWER = {
    "memories": [
        {
            "text": "用户住在上海",
            "quote": "我上个月从杭州搬到上海了",
            "kind": "fact",
            "basis": "user_statement",
            "confidence": 0.9,
            "subject": "user",
            "fact_key": "home.city",
            "valid_at": "2025-05-01T00:00:00Z",
            "valence": None,
            "arousal": None,
            "gist": None,
            "related": [1],
        },
        {
            "text": "用户每天骑车上班",
            "quote": "现在每天骑车上班",
            "kind": "episode",
            "basis": "user_statement",
            "confidence": 0.8,
            "gist": "骑车通勤",
            "related": [0],
        },
        {
            "text": "用户住在北京",
            "quote": "我搬到北京了",
            "kind": "fact",
            "basis": "user_statement",
            "confidence": 0.4,
            "subject": "user",
            "fact_key": "home.city",
        },
    ]
}


def make_extractor(
    fake: FakeProvider,
    http: httpx.Client,
    *,
    timeout: float = 5.0,
    environ: dict[str, str] | None = None,
    api_key_env: str | None = KEY_ENV,
) -> OpenAIExtractor:
    config = ExtractionConfig(
        base_url=fake.base_url, model="fake-model", api_key_env=api_key_env, timeout_seconds=timeout
    )
    return OpenAIExtractor(config, http, environ={KEY_ENV: API_KEY} if environ is None else environ)


def make_embedder(
    fake: FakeProvider, http: httpx.Client, *, timeout: float = 5.0, batch_size: int = 64
) -> OpenAIEmbedder:
    config = EmbeddingConfig(
        base_url=fake.base_url,
        model="fake-embed",
        api_key_env=KEY_ENV,
        version="2",
        timeout_seconds=timeout,
        batch_size=batch_size,
    )
    return OpenAIEmbedder(config, http, environ={KEY_ENV: API_KEY})


def assert_sanitized(error: BaseException, *extra: str) -> None:
    """No secret, key, remote body or input text in the message, repr or anything chained."""
    forbidden = [FAKE_SECRET, API_KEY, INPUT_MARK, EVENT_TEXT, "杭州", *extra]
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for exc in chain:
        for text in (str(exc), repr(exc)):
            for secret in forbidden:
                assert secret not in text
    if isinstance(error, ProviderError):
        assert FAKE_SECRET not in json.dumps(error.to_dict())


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- extraction: the happy path -------------------------------------------------------------------


def test_extract_sends_prompt_event_and_bearer_key(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    fake_provider.script_chat(chat_reply(GOOD_ANSWER))
    extractor: Extractor = make_extractor(fake_provider, http_client)

    batch = extractor.extract(EVENT)

    assert batch.prompt_version == PROMPT_VERSION == "extraction-v5"
    assert batch.model == "fake-model"
    assert [m.kind for m in batch.memories] == ["fact", "episode", "fact"]
    (request,) = fake_provider.requests
    assert request.path == CHAT_PATH
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json()
    assert body["model"] == "fake-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    assert body["max_tokens"] == 1024
    assert body["temperature"] == 0.0
    system, user = body["messages"]
    assert system == {"role": "system", "content": load_prompt()}
    assert user["role"] == "user"
    assert "杭州" in request.body.decode()  # sent as UTF-8 text, not \u escapes
    # Background, then the read-only context, then the event last, in numbered clauses; the local
    # time carries its timezone.
    assert user["content"].splitlines() == [
        "BACKGROUND (read-only)",
        "persona (the assistant's character, never a memory): 小忆，温柔的陪伴者",
        "speakers: user = 阿明, assistant = xiaoyi",
        "local time: 2025-06-10 17:00 (Tuesday), Asia/Shanghai, UTC+0800",
        "",
        "CONTEXT (earlier turns, READ-ONLY: never extract them)",
        "assistant: 最近怎么样？",
        "",
        "EVENT (role: user, category: conversation)",
        "[1] 我上个月从杭州搬到上海了，",
        "[2] 现在每天骑车上班。",
        f"[3] {INPUT_MARK}",
    ]


def test_items_naming_clauses_get_the_exact_span_as_quote(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    answer = {
        "memories": [
            {"clause": 1, "kind": "fact", "text": "用户住在上海", "fact_key": "home.city", "value": "上海"},
            {"clause": [1, 2], "kind": "episode", "text": "用户搬家后骑车上班"},
            {"clause": 9, "kind": "episode", "text": "用户骑车"},
            {"clause": 2, "quote": "每天骑车", "kind": "episode", "text": "用户每天骑车"},
            {"kind": "episode", "text": "用户骑车"},
            {"clause": "2", "kind": "episode", "text": "用户每天骑车上班"},
        ]
    }
    fake_provider.script_chat(chat_reply(answer))
    batch = make_extractor(fake_provider, http_client).extract(EVENT)
    assert [m.quote for m in batch.memories] == [
        "我上个月从杭州搬到上海了",
        "我上个月从杭州搬到上海了，现在每天骑车上班",
        "",  # no such clause: refused later as an empty quote
        "每天骑车",  # a quote of its own is kept
        "",  # neither: refused later, without failing the other items
        "现在每天骑车上班",  # a number written as a string
    ]
    first = batch.memories[0]
    assert (first.basis, first.confidence, first.subject) == ("", 0.7, None)  # role and key decide later
    verdicts = validate_batch(
        [
            replace(c, basis="user_statement", subject="user" if c.fact_key else None)
            for c in batch.candidates()
        ],
        SourceEvent("user", "conversation", EVENT_TEXT),
    )
    assert [sorted(v.rule for v in found) for found in verdicts] == [
        [],
        [],
        [Rule.QUOTE_EMPTY],
        [],
        [Rule.QUOTE_EMPTY],
        [],
    ]


def test_batch_items_feed_validation(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    fake_provider.script_chat(chat_reply(GOOD_ANSWER))
    batch = make_extractor(fake_provider, http_client).extract(EVENT)

    results = validate_batch(
        batch.candidates(), SourceEvent(role=EVENT.role, category=EVENT.category, text=EVENT.text)
    )

    assert results[0] == []
    assert results[1] == []
    assert [v.rule for v in results[2]] == [Rule.QUOTE_NOT_IN_SOURCE]
    first = batch.candidates()[0]
    assert first.valid_at == "2025-05-01T00:00:00Z"
    assert first.related == (1,)


def test_items_are_normalized_leniently(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    item = {
        "text": "  The user prefers tea  ",
        "quote": " I prefer tea ",
        "kind": "Preference",
        "basis": "USER_STATEMENT",
        "confidence": "0.7",
        "subject": "",
        "fact_key": "   ",
        "valid_at": "",
        "gist": "",
        "related": None,
        "reason": "extra keys are ignored",
    }
    fake_provider.script_chat(chat_content("```json\n" + json.dumps({"memories": [item]}) + "\n```"))

    (memory,) = make_extractor(fake_provider, http_client).extract(EVENT).memories

    assert memory.text == "The user prefers tea"
    assert memory.quote == "I prefer tea"
    assert (memory.kind, memory.basis, memory.confidence) == ("preference", "user_statement", 0.7)
    assert (memory.subject, memory.fact_key, memory.valid_at, memory.gist) == (None,) * 4
    assert memory.related == []


def test_empty_answer_is_a_batch_of_nothing(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    fake_provider.script_chat(chat_reply({"memories": []}))
    assert make_extractor(fake_provider, http_client).extract(EVENT).memories == ()


def test_no_key_variable_sends_no_authorization(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    make_extractor(fake_provider, http_client, api_key_env=None, environ={}).extract(EVENT)
    assert "authorization" not in fake_provider.requests[0].headers


def test_key_is_read_from_the_process_environment_by_default(
    fake_provider: FakeProvider, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-from-process-env")
    config = ExtractionConfig(base_url=fake_provider.base_url, model="m", api_key_env=KEY_ENV)
    OpenAIExtractor(config, http_client).extract(EVENT)
    assert fake_provider.requests[0].headers["authorization"] == "Bearer sk-from-process-env"


def test_missing_key_variable_is_permanent_and_sends_nothing(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    with pytest.raises(ProviderPermanent) as info:
        make_extractor(fake_provider, http_client, environ={}).extract(EVENT)
    assert KEY_ENV in str(info.value)  # the variable's name helps the operator; it is no secret
    assert fake_provider.requests == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_prompt_ships_in_the_package_and_covers_the_rules(language: str) -> None:
    prompt = load_prompt(PROMPT_VERSION, language=language)
    for word in (
        "clause",
        "fact_key",
        "value",
        "gist",
        "reference",
        "persona",
        "valence",
        "arousal",
        "JSON",
        "READ-ONLY",
        "ASSISTANT event only",
    ):
        assert word in prompt
    assert "{keys}" not in prompt
    assert "home.city (fact): 现在住的城市 / city the user lives in now" in prompt  # kind and meaning
    assert "food.dislike (preference)" in prompt
    assert PLACEHOLDER.search(prompt)  # examples with placeholders only


def test_a_chinese_event_gets_the_previous_prompt_unchanged_and_an_english_one_its_own() -> None:
    chinese, english = load_prompt(language="zh"), load_prompt(language="en")
    assert chinese == load_prompt("extraction-v4")  # the same request, so the same answer
    assert "如果" in chinese and "搬到【城市B】" in chinese
    assert PROMPT_VERSION in english and "The EVENT is in English" in english
    assert "I moved from 【City A】 to 【City B】" in english
    assert not re.search(r"[\u4e00-\u9fff]", english.split("KEYS")[0])  # no Chinese in its instructions
    for text in PROMPT_EXAMPLE_TEXTS:  # every example's text is refused if a model copies it
        assert f'"text": "{text}"' in chinese + english
    assert load_prompt("extraction-v4", language="en") == load_prompt("extraction-v4")  # one file for all


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("I moved to Leeds in March.", "en"),
        ("我上个月搬到杭州了。", "zh"),
        ("今天去了Costco，买了好多东西", "zh"),  # a CJK character anywhere: the Chinese prompt
        ("ok 👍", "en"),
        ("👍 !!", "zh"),  # no letter at all
        ("2026-05-01", "zh"),
    ],
)
def test_event_language_is_english_only_without_cjk_and_with_latin_letters(text: str, language: str) -> None:
    assert event_language(text) == language


def test_an_english_event_is_sent_the_english_prompt(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    fake_provider.script_chat(chat_reply(GOOD_ANSWER))
    fake_provider.script_chat(chat_reply(GOOD_ANSWER))
    extractor = make_extractor(fake_provider, http_client)

    extractor.extract(replace(EVENT, text="I moved from York to Leeds last month."))
    extractor.extract(EVENT)

    systems = [r.json()["messages"][0]["content"] for r in fake_provider.requests]
    assert systems == [load_prompt(language="en"), load_prompt(language="zh")]


def test_prompt_lists_the_configured_vocabulary() -> None:
    prompt = load_prompt(PROMPT_VERSION, ("home.city", "garden.plant"))
    keys = prompt[prompt.index("KEYS\n") : prompt.index("EXAMPLES")]
    assert keys.split("\n")[1:3] == [
        "home.city (fact): 现在住的城市 / city the user lives in now",
        "garden.plant (fact)",
    ]
    assert "food.dislike" not in keys
    assert "never give a fact_key" in load_prompt(PROMPT_VERSION, ())


def test_earlier_prompts_stay_readable() -> None:
    assert "extraction-v2" in load_prompt("extraction-v2")


# -- extraction: every fault against the real server ----------------------------------------------

FAULTS: list[tuple[str, Callable[[], Reply], type[ProviderError]]] = [
    ("slower than the timeout", lambda: slow(5.0), ProviderTransient),
    ("429", rate_limited, ProviderTransient),
    ("500 with a secret body", server_error, ProviderTransient),
    ("503", lambda: raw_reply(503, FAKE_SECRET, "text/plain"), ProviderTransient),
    ("400", lambda: raw_reply(400, json.dumps({"error": FAKE_SECRET})), ProviderPermanent),
    ("401", lambda: raw_reply(401, json.dumps({"error": FAKE_SECRET})), ProviderPermanent),
    ("404", lambda: raw_reply(404, FAKE_SECRET, "text/plain"), ProviderPermanent),
    ("malformed JSON", malformed_json, ProviderPermanent),
    ("content is not JSON", content_not_json, ProviderPermanent),
    ("content is null", lambda: chat_content(None), ProviderPermanent),
    ("no choices", lambda: raw_reply(200, json.dumps({"choices": []})), ProviderPermanent),
    ("envelope is a list", lambda: raw_reply(200, json.dumps([FAKE_SECRET])), ProviderPermanent),
    ("answer is a list", lambda: chat_reply([FAKE_SECRET]), ProviderPermanent),
    ("no memories key", lambda: chat_reply({"items": [FAKE_SECRET]}), ProviderPermanent),
    ("memories not a list", lambda: chat_reply({"memories": FAKE_SECRET}), ProviderPermanent),
    (
        "body nested 5,000 deep",
        lambda: raw_reply(
            200, '{"choices": [{"message": {"content": "{}"}, "x": ' + "[" * 5000 + "]" * 5000 + "}]}"
        ),
        ProviderPermanent,
    ),
    (
        "content nested 5,000 deep",
        lambda: chat_content('{"memories": [' + "[" * 5000 + "]" * 5000 + "]}"),
        ProviderPermanent,
    ),
    (
        "content nested 100,000 deep, cut off",
        lambda: chat_content('{"memories": [{"clause": 1}, ' + "[" * 100_000, finish_reason="length"),
        ProviderPermanent,
    ),
    ("a 5,000-digit number", lambda: chat_content('{"memories": [' + "1" * 5000 + "]}"), ProviderPermanent),
    (
        "too many items",
        lambda: chat_reply(
            {
                "memories": [{"text": "t", "quote": "q", "kind": "fact", "basis": "x", "confidence": 1}]
                * (extraction_module.MAX_ITEMS + 1)
            }
        ),
        ProviderPermanent,
    ),
]


def test_a_malformed_item_holds_its_place_and_costs_no_other_item(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    good = GOOD_ANSWER["memories"][0]
    malformed = [
        {"quote": FAKE_SECRET, "kind": "fact", "basis": "inference"},  # no text
        {"text": "t", "quote": "q", "kind": "fact", "basis": "inference", "confidence": FAKE_SECRET},
        {"text": "t", "quote": "q", "kind": "fact", "value": -0.5},  # a number where text belongs
        FAKE_SECRET,  # not an object at all
    ]
    fake_provider.script_chat(chat_reply({"memories": [*malformed, good]}))
    batch = make_extractor(fake_provider, http_client).extract(EVENT)
    assert batch.malformed == (0, 1, 2, 3)
    candidates = batch.candidates()
    assert len(candidates) == 5 and candidates[4].text == good["text"]
    assert all(c.text == "" and c.quote == "" for c in candidates[:4])
    assert FAKE_SECRET not in repr(candidates)


@pytest.mark.parametrize(
    ("tail", "kept", "malformed"),
    [
        (', {"clause": 1, "kind": "fa', 2, (2,)),  # cut inside an item
        (",", 2, (2,)),  # cut after a comma
        ("", 2, (2,)),  # cut after an item
        ("]} Those are the memories.", 2, ()),  # whole, with words after it
    ],
)
def test_an_answer_cut_off_keeps_its_complete_items(
    fake_provider: FakeProvider, http_client: httpx.Client, tail: str, kept: int, malformed: tuple[int, ...]
) -> None:
    items = ",\n ".join(json.dumps(m, ensure_ascii=False) for m in GOOD_ANSWER["memories"][:2])
    fake_provider.script_chat(chat_content('{"memories": [\n ' + items + tail, finish_reason="length"))
    batch = make_extractor(fake_provider, http_client).extract(EVENT)
    assert [m.text for m in batch.memories if m is not None] == [
        m["text"] for m in GOOD_ANSWER["memories"][:kept]
    ]
    assert batch.malformed == malformed


@pytest.mark.parametrize("finish_reason", ["stop", "content_filter", None])
@pytest.mark.parametrize(
    "tail",
    [
        ', {"clause": 1, "kind": "fa',  # broken inside an item
        ', {"text": "用户住在\\u676\\uZZZZ", "clause": 1, "kind": "fact"}]}',  # invalid \u escapes
        ', {"text": "\\ud800", "clause": 1, "kind": "fact"}',  # a lone surrogate, then broken
        ', {"text": "\\ud800", "clause": 1, "kind": "fact"}]}',  # JSON, but a lone surrogate no text holds
    ],
)
def test_an_answer_that_ended_malformed_is_a_provider_failure(
    fake_provider: FakeProvider, http_client: httpx.Client, tail: str, finish_reason: str | None
) -> None:
    # only finish_reason "length" says the answer was cut off; anything else ended as written
    items = ",\n ".join(json.dumps(m, ensure_ascii=False) for m in GOOD_ANSWER["memories"][:2])
    content = '{"memories": [\n ' + items + tail
    envelope = {"choices": [{"message": {"content": content}, "finish_reason": finish_reason}]}
    fake_provider.script_chat(raw_reply(200, json.dumps(envelope, ensure_ascii=False)))
    with pytest.raises(ProviderPermanent, match="not JSON"):
        make_extractor(fake_provider, http_client).extract(EVENT)


def test_an_answer_cut_off_before_any_item_says_to_raise_max_tokens(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    fake_provider.script_chat(chat_content('{"memories": [{"clause": 1, "ki', finish_reason="length"))
    with pytest.raises(ProviderPermanent, match="max_tokens"):
        make_extractor(fake_provider, http_client).extract(EVENT)


@pytest.mark.parametrize(
    ("reply", "expected"), [(r, e) for _, r, e in FAULTS], ids=[name for name, _, _ in FAULTS]
)
def test_extraction_faults_are_classified_and_sanitized(
    fake_provider: FakeProvider,
    http_client: httpx.Client,
    reply: Callable[[], Reply],
    expected: type[ProviderError],
) -> None:
    refused = reply().status == 400
    fake_provider.script_chat(*[reply() for _ in range(3 if refused else 1)])
    extractor = make_extractor(fake_provider, http_client, timeout=2.0)

    with pytest.raises(ProviderError) as info:
        extractor.extract(EVENT)

    assert type(info.value) is expected
    assert str(info.value).startswith("extraction ")
    assert_sanitized(info.value)
    # A 400 may mean "no json_schema here": the client steps down to json_object twice at most.
    assert len(fake_provider.requests) == (3 if refused else 1)


def test_status_is_named_in_the_message(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    fake_provider.script_chat(server_error())
    with pytest.raises(ProviderTransient, match="extraction endpoint answered HTTP 500"):
        make_extractor(fake_provider, http_client).extract(EVENT)


def test_connection_refused_is_transient(http_client: httpx.Client) -> None:
    config = ExtractionConfig(base_url=f"http://127.0.0.1:{unused_port()}/v1", model="m", api_key_env=KEY_ENV)
    extractor = OpenAIExtractor(config, http_client, environ={KEY_ENV: API_KEY})
    with pytest.raises(ProviderTransient) as info:
        extractor.extract(EVENT)
    assert_sanitized(info.value)


def test_unusable_url_is_permanent(http_client: httpx.Client) -> None:
    config = ExtractionConfig(base_url="ftp://127.0.0.1/v1", model="m")
    with pytest.raises(ProviderPermanent) as info:
        OpenAIExtractor(config, http_client, environ={}).extract(EVENT)
    assert_sanitized(info.value)


def test_a_failed_request_does_not_spoil_the_next(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    fake_provider.script_chat(rate_limited(), chat_reply(GOOD_ANSWER))
    extractor = make_extractor(fake_provider, http_client)
    with pytest.raises(ProviderTransient):
        extractor.extract(EVENT)
    assert len(extractor.extract(EVENT).memories) == 3


# -- embeddings -----------------------------------------------------------------------------------


def test_embed_returns_vectors_in_input_order(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    fake_provider.script_embeddings(embeddings_reply([[1.0, 0.0], [0.0, 1.0]], reverse=True))

    vectors = make_embedder(fake_provider, http_client).embed(["我喜欢绿茶", "I like tea"])

    assert vectors == [[1.0, 0.0], [0.0, 1.0]]
    (request,) = fake_provider.requests
    assert request.path == EMBEDDINGS_PATH
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.json() == {
        "model": "fake-embed",
        "input": ["我喜欢绿茶", "I like tea"],
        "encoding_format": "float",
    }


def test_embed_sends_batches(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    texts = [f"text {i}" for i in range(5)]
    vectors = make_embedder(fake_provider, http_client, batch_size=2).embed(texts)
    assert len(vectors) == 5
    assert [len(r.json()["input"]) for r in fake_provider.requests] == [2, 2, 1]
    assert vectors == make_embedder(fake_provider, http_client).embed(texts)


def test_embed_nothing_makes_no_request(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    assert make_embedder(fake_provider, http_client).embed([]) == []
    assert fake_provider.requests == []


def test_dimensions_are_requested_and_fingerprinted(
    fake_provider: FakeProvider, http_client: httpx.Client
) -> None:
    config = EmbeddingConfig(base_url=fake_provider.base_url, model="e", dimensions=8)
    embedder = OpenAIEmbedder(config, http_client, environ={})
    embedder.embed(["x"])
    assert fake_provider.requests[0].json()["dimensions"] == 8
    assert embedder.fingerprint.endswith("|dim=8")


def test_fingerprint_uses_no_network_and_no_credentials(http_client: httpx.Client) -> None:
    def fingerprint(base_url: str, model: str = "bge-m3", version: str = "1") -> str:
        config = EmbeddingConfig(base_url=base_url, model=model, version=version)
        return OpenAIEmbedder(config, http_client, environ={}).fingerprint

    # Nothing listens on this port: computing the fingerprint must not try.
    base = f"http://127.0.0.1:{unused_port()}/v1"
    assert fingerprint(base) == f"{base}|bge-m3|1"
    assert fingerprint(base + "/") == fingerprint(base)
    assert fingerprint(base, model="other") != fingerprint(base)
    assert fingerprint(base, version="2") != fingerprint(base)
    secret_url = f"https://alice:{FAKE_SECRET}@api.example.com/v1?key={FAKE_SECRET}"
    assert fingerprint(secret_url) == "https://api.example.com/v1|bge-m3|1"


EMBEDDING_FAULTS: list[tuple[str, Callable[[], Reply], type[ProviderError]]] = [
    ("slower than the timeout", lambda: slow(5.0, embeddings_reply([[1.0]])), ProviderTransient),
    ("429", rate_limited, ProviderTransient),
    ("500 with a secret body", server_error, ProviderTransient),
    ("400", lambda: raw_reply(400, json.dumps({"error": FAKE_SECRET})), ProviderPermanent),
    ("malformed JSON", malformed_json, ProviderPermanent),
    ("no data", lambda: raw_reply(200, json.dumps({"vectors": FAKE_SECRET})), ProviderPermanent),
    ("too few vectors", lambda: embeddings_reply([[1.0, 0.0]]), ProviderPermanent),
    (
        "too many vectors",
        lambda: embeddings_reply([[1.0], [0.0], [0.5]]),
        ProviderPermanent,
    ),
    ("mixed dimensions", lambda: embeddings_reply([[1.0, 0.0], [1.0]]), ProviderPermanent),
    ("empty vector", lambda: embeddings_reply([[], []]), ProviderPermanent),
    (
        "not a number",
        lambda: embeddings_reply([[FAKE_SECRET], [1.0]]),  # type: ignore[list-item]
        ProviderPermanent,
    ),
    (
        "NaN",
        lambda: raw_reply(
            200,
            '{"data": [{"index": 0, "embedding": [NaN]}, {"index": 1, "embedding": [1.0]}]}',
        ),
        ProviderPermanent,
    ),
    (
        "nested 5,000 deep",
        lambda: raw_reply(200, '{"data": [{"index": 0, "embedding": ' + "[" * 5000 + "]" * 5000 + "}]}"),
        ProviderPermanent,
    ),
    ("invalid escape", lambda: raw_reply(200, '{"data": [], "model": "\\uZZZZ"}'), ProviderPermanent),
    ("not UTF-8", lambda: raw_reply(200, b'{"data": [], "model": "\xff\xfe"}'), ProviderPermanent),
]


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * 64 + "]" * 64, False),
        ("[" * 65 + "]" * 65, True),
        ('"' + "[" * 1000 + '"', False),  # brackets inside a string do not nest
        ('"\\"' + "[" * 65, False),  # an escaped quote: the string goes on to the end
        ('"\\\\"' + "[" * 65, True),  # an escaped backslash: the string ends before the brackets
        ('["\\"[[[", ' + "{" * 65, True),
        ("[]" * 10_000, False),
        ("[" * 65, True),  # unclosed, as in an answer cut off
    ],
)
def test_nesting_is_bounded_before_parsing(text: str, deep: bool) -> None:
    from yiji.providers._openai import MAX_DEPTH, NOT_JSON, loads_or_none, too_deep

    assert MAX_DEPTH == 64
    assert too_deep(text) is deep
    if deep:
        assert loads_or_none(text) is NOT_JSON


@pytest.mark.parametrize(
    ("reply", "expected"),
    [(r, e) for _, r, e in EMBEDDING_FAULTS],
    ids=[name for name, _, _ in EMBEDDING_FAULTS],
)
def test_embedding_faults_are_classified_and_sanitized(
    fake_provider: FakeProvider,
    http_client: httpx.Client,
    reply: Callable[[], Reply],
    expected: type[ProviderError],
) -> None:
    fake_provider.script_embeddings(reply())
    embedder = make_embedder(fake_provider, http_client, timeout=2.0)

    with pytest.raises(ProviderError) as info:
        embedder.embed([EVENT_TEXT, "second"])

    assert type(info.value) is expected
    assert str(info.value).startswith("embedding ")
    assert_sanitized(info.value)


# -- module surface -------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [extraction_module, embeddings_module])
def test_all_names_exist(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        assert hasattr(module, name)


# -- the whole request is bounded in time and size -------------------------------------------------


@pytest.mark.parametrize("headers", [False, True], ids=["slow body", "slow headers"])
def test_timeout_bounds_the_whole_request(
    fake_provider: FakeProvider, http_client: httpx.Client, headers: bool
) -> None:
    # Each byte arrives well within the timeout; the whole answer would take several seconds.
    fake_provider.script_chat(dripping(0.05, headers=headers))
    extractor = make_extractor(fake_provider, http_client, timeout=1.0)
    with pytest.raises(ProviderTransient, match="timed out after 1 s") as info:
        extractor.extract(EVENT)
    assert_sanitized(info.value)


@pytest.mark.parametrize("send_length", [True, False], ids=["declared length", "no length"])
def test_answers_larger_than_the_cap_are_refused(
    fake_provider: FakeProvider, http_client: httpx.Client, send_length: bool
) -> None:
    fake_provider.script_chat(huge(3_000_000, send_length=send_length))
    extractor = make_extractor(fake_provider, http_client)
    assert extractor.config.max_answer_bytes == 1_000_000
    with pytest.raises(ProviderPermanent, match="larger than the 1000000-byte limit") as info:
        extractor.extract(EVENT)
    assert_sanitized(info.value)


def test_answers_within_the_cap_are_read(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    fake_provider.script_chat(huge(900_000, send_length=False))
    assert make_extractor(fake_provider, http_client).extract(EVENT).memories == ()


def test_one_request_in_flight_per_endpoint(fake_provider: FakeProvider, http_client: httpx.Client) -> None:
    # The first request is given up on at its deadline (its connection is shut); the second is sent
    # only then, so the server never holds an abandoned request and a queued one at once.
    fake_provider.script_chat(slow(5.0), chat_reply(GOOD_ANSWER))
    patient = make_extractor(fake_provider, http_client, timeout=4.0)
    hasty = make_extractor(fake_provider, http_client, timeout=1.0)
    results: list[object] = []

    def run(extractor: OpenAIExtractor) -> None:
        try:
            results.append(len(extractor.extract(EVENT).memories))
        except ProviderError as exc:
            results.append(type(exc))

    threads = [threading.Thread(target=run, args=(e,)) for e in (hasty, patient)]
    threads[0].start()
    while not fake_provider.requests:
        time.sleep(0.01)
    threads[1].start()
    for thread in threads:
        thread.join()
    assert sorted(map(str, results)) == sorted(map(str, [ProviderTransient, 3]))


def test_the_configured_prompt_version_is_the_one_sent_and_recorded(
    fake_provider: FakeProvider, http_client: httpx.Client, tmp_path: Path
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'[extraction]\nbase_url = "{fake_provider.base_url}"\nmodel = "fake-model"\n'
        'prompt = "extraction-v3"\n',
        encoding="utf-8",
    )
    config = load_config(path, env={})
    fake_provider.script_chat(chat_reply(GOOD_ANSWER))
    extractor = build_extractor(config, http_client)

    batch = extractor.extract(EVENT)

    assert batch.prompt_version == extractor.prompt_version == "extraction-v3"
    system = fake_provider.requests[0].json()["messages"][0]["content"]
    assert system == load_prompt("extraction-v3") != load_prompt()
    path.write_text('[extraction]\nprompt = "extraction-v9"\n', encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        load_config(path, env={})
    assert info.value.field == "extraction.prompt"
