"""The client's layer (ARCHITECTURE.md): importing it loads neither the server, tornado nor
the core, checked in a fresh interpreter so no other test's imports hide a breach."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# The server, the web face, the protocol sessions and the core (service, topics,
# subscriptions, cursors, dispatchers, storage).
FORBIDDEN = (
    "tornado", "pulsarlab.broker.server", "pulsarlab.broker.web", "pulsarlab.broker.transports",
    "pulsarlab.broker.pulsar_protocol.session", "pulsarlab.broker.admin_handler",
    "pulsarlab.broker.service", "pulsarlab.broker.topic", "pulsarlab.broker.non_persistent",
    "pulsarlab.broker.subscription", "pulsarlab.broker.cursor", "pulsarlab.broker.dispatchers",
    "pulsarlab.broker.storage", "pulsarlab.broker.compaction",
)


def loaded_after(statement: str) -> list[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def breaches(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


@pytest.mark.parametrize("statement", [
    "import pulsarlab.broker.client",
    "from pulsarlab import Client",
    "import pulsarlab.broker.format",
])
def test_the_client_loads_neither_the_server_nor_the_core(statement):
    assert breaches(loaded_after(statement)) == []


def test_the_check_catches_a_breach():
    """The server does load them: the check is not vacuous."""
    found = breaches(loaded_after("from pulsarlab import Broker"))
    assert "pulsarlab.broker.server" in found and "pulsarlab.broker.service" in found
