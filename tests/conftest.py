"""Shared fixtures: the loopback OpenAI-compatible server and an HTTP client to reach it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from fakeprovider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running :class:`fakeprovider.FakeProvider` on 127.0.0.1, stopped after the test."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    """A real ``httpx.Client`` (closed after the test), as the composition root would inject it."""
    with httpx.Client() as client:
        yield client
