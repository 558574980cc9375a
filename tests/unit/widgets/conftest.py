"""Widget test helpers: recorded stats fixtures and an in-process stand-in for Admin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def recorded_stats():
    """Load a recorded ``pulsar-admin topics stats`` dump by file name."""

    def load(name: str) -> dict[str, Any]:
        return json.loads((FIXTURES / name).read_text())

    return load


class CoreAdmin:
    """``Admin``'s ``topics`` calls answered by a broker core in this process (no sockets)."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.topics = self
        self.calls = 0

    def get_partitioned_topic_metadata(self, topic: str) -> dict[str, int]:
        self.calls += 1
        return {"partitions": self.service.get_partitioned_topic_metadata(topic)}

    def get_stats(self, topic: str) -> dict[str, Any]:
        self.calls += 1
        return self.service.topic_stats(topic)

    def get_internal_stats(self, topic: str) -> dict[str, Any]:
        self.calls += 1
        return self.service.internal_stats(topic)


@pytest.fixture
def core_admin():
    return CoreAdmin
