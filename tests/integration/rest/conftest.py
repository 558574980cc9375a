"""One in-process broker per test module, and a plain-``urllib`` caller for its REST API."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from typing import Any

import pytest

from pulsarlab import Broker


@dataclass
class Answer:
    status: int
    body: bytes
    headers: Message  # looked up case-insensitively, as HTTP header names are

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def reason(self) -> str:
        return self.json["reason"]


class Rest:
    """``rest.get("/admin/v2/tenants")`` → :class:`Answer`; bodies are sent as JSON."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        self.base_url = base_url
        self.token = token

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Answer:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"Content-Type": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return Answer(resp.status, resp.read(), resp.headers)
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, exc.read(), exc.headers)

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    def put(self, path: str, body: Any = None) -> Answer:
        return self.call("PUT", path, body)

    def post(self, path: str, body: Any = None) -> Answer:
        return self.call("POST", path, body)

    def delete(self, path: str) -> Answer:
        return self.call("DELETE", path)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(storage="memory") as running:
        yield running


@pytest.fixture(scope="module")
def rest(broker: Broker) -> Rest:
    return Rest(broker.web_url)
