"""If the broker loop dies anyway, nobody is left waiting: ``Broker.call`` raises a clear
error at once and ``pulsarlab broker`` exits non-zero (issue 23, item 3)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from pulsarlab import Broker
from pulsarlab.broker.service import BrokerService


def test_a_dead_loop_fails_calls_with_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    broker = Broker(storage="memory").start()
    try:
        assert broker.call(lambda service: len(service.topics)) == 0

        entered, release = threading.Event(), threading.Event()

        def broken_tick(self: BrokerService) -> None:
            entered.set()
            release.wait(30)
            raise RuntimeError("a bug in housekeeping")

        monkeypatch.setattr(BrokerService, "tick", broken_tick)
        assert entered.wait(30)
        future = broker.submit(lambda service: None)  # queued while the loop is in tick()
        release.set()
        with pytest.raises(RuntimeError, match=r"broker loop crashed .*a bug in housekeeping"):
            future.result(30)
        with pytest.raises(RuntimeError, match="broker loop crashed"):
            broker.call(lambda service: None)  # at once, not after a timeout
        assert isinstance(broker.loop_error, RuntimeError)
    finally:
        broker.stop()


_CRASHING_BROKER = textwrap.dedent("""
    import sys
    from pulsarlab.broker import cli, server, service

    armed = []
    call = server.Broker.call

    def call_then_arm(self, fn, timeout=30.0):
        result = call(self, fn, timeout)
        armed.append(True)  # the command line has its report: now the loop dies
        return result

    def tick(self):
        if armed:
            raise RuntimeError("a bug in housekeeping")

    server.Broker.call = call_then_arm
    service.BrokerService.tick = tick
    sys.exit(cli.main(["broker", "--storage", "memory", "--port", "0", "--pulsar-port", "0",
                       "--web-port", "0"]))
""")


def test_the_command_line_exits_non_zero_when_the_loop_dies() -> None:
    result = subprocess.run([sys.executable, "-c", _CRASHING_BROKER], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert '"status": "ready"' in result.stdout
    assert "the broker loop crashed: RuntimeError('a bug in housekeeping')" in result.stderr
