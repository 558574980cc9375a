"""The CLI terminates a topic (what clients of a terminated topic see, on every face, is in
tests/integration/behaviour/test_producers.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from pulsarlab import Admin

from .client_support import unique


def test_cli_terminates_a_topic(broker):
    topic = unique("cli-ended")
    with Admin(broker.web_url) as admin:
        admin.topics.create_non_partitioned_topic(topic)
    result = subprocess.run(
        [sys.executable, "-m", "pulsarlab.broker.cli", "admin", "topics", "terminate", topic,
         "--admin-url", broker.web_url],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["entryId"] == -1
