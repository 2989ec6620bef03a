"""An extraction endpoint's answers kept on disk, for ``yiji bench extraction --answers DIR``.

A local model at temperature 0 answers the same request with the same bytes, and an extraction request
depends only on the prompt and the conversation, not on yiji's grounding and validation rules. So when
only the rules change, the answers of an earlier run can be replayed: a labelled set that takes minutes
of a CPU model is checked again in seconds. Any request not answered before (another model, another
prompt, a set never run) goes to the endpoint, and its answer is kept for the next run.

:class:`AnswerCache` is an httpx transport: POST requests are keyed by their path and body (the body
names the model; headers are never read, so no API key is written to disk); only successful answers are
kept, each in its own file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import httpx

from yiji.fileutil import temp_beside

__all__ = ["AnswerCache"]


class AnswerCache(httpx.BaseTransport):
    """Replays answers kept in ``folder``; asks ``inner`` (the network) for any other request."""

    def __init__(self, folder: Path, inner: httpx.BaseTransport | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder
        self._inner = inner or httpx.HTTPTransport()
        self.replayed = 0
        self.asked = 0

    def _path(self, request: httpx.Request) -> Path:
        digest = hashlib.sha256(request.url.raw_path + request.read()).hexdigest()
        return self._folder / f"{digest}.json"

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return self._inner.handle_request(request)
        path = self._path(request)
        if path.is_file():
            self.replayed += 1
            return httpx.Response(
                200, headers={"Content-Type": "application/json"}, content=path.read_bytes()
            )
        answer = self._inner.handle_request(request)
        try:
            body = answer.read()
        finally:
            answer.close()
        self.asked += 1
        if answer.status_code == 200:  # whole, or not at all: a run stopped midway leaves no half answer
            tmp = temp_beside(path)
            tmp.write_bytes(body)
            os.replace(tmp, path)
        content_type = answer.headers.get("Content-Type", "application/json")
        return httpx.Response(answer.status_code, headers={"Content-Type": content_type}, content=body)

    def close(self) -> None:
        self._inner.close()
