"""Frame coalescing: bursts of events become a bounded number of figure updates."""

from __future__ import annotations

import msgpack

from pulsarlab.widgets import FrameThrottle, HashRangeView, LiveBinding, RedeliveryTimeline, WhatIf


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_burst_of_10k_requests_draws_a_bounded_number_of_frames():
    clock = FakeClock()
    drawn: list[int] = []
    state = {"value": 0}
    throttle = FrameThrottle(lambda: drawn.append(state["value"]), max_fps=10, clock=clock)
    for i in range(10_000):  # 10k events over one simulated second
        state["value"] = i
        throttle.request()
        clock.now += 0.0001
    assert throttle.requests == 10_000
    assert 1 <= len(drawn) <= 11
    # The last state is still owed a frame, due within one interval.
    assert throttle.dirty and 0 <= throttle.delay() <= 0.1
    clock.now += throttle.delay()
    assert throttle.poll()
    assert drawn[-1] == 9_999
    assert not throttle.dirty and throttle.delay() is None


def test_first_request_draws_at_once_and_flush_ignores_the_rate():
    clock = FakeClock()
    frames = []
    throttle = FrameThrottle(lambda: frames.append(clock.now), max_fps=10, clock=clock)
    assert throttle.request()
    assert not throttle.request()  # same instant: coalesced
    assert throttle.flush()
    assert not throttle.flush()  # nothing new
    assert len(frames) == 2


def test_a_failing_render_is_logged_not_raised(caplog):
    def boom() -> None:
        raise RuntimeError("draw failed")

    throttle = FrameThrottle(boom, clock=FakeClock())
    assert throttle.request()
    assert "failed to render" in caplog.text


def _frames(event: dict) -> list[bytes]:
    return [event["type"].encode(), msgpack.packb(event, use_bin_type=True)]


def test_live_binding_coalesces_an_event_flood_into_few_stats_fetches_and_frames(core_admin):
    """The live path without sockets: events in, stats from a core, views redrawn."""
    whatif = WhatIf("Key_Shared", topic="flood", key_shared_use_consistent_hashing=False)
    whatif.add_consumer("C1")
    clock = FakeClock()
    admin = core_admin(whatif.service)
    binding = LiveBinding("zmq://127.0.0.1:1", "tcp://127.0.0.1:2", "flood", whatif.subscription,
                          clock=clock, admin=admin)
    ranges = HashRangeView(binding)
    timeline = RedeliveryTimeline(binding)
    assert ranges.frames == 0 and "waiting" in ranges.message.value
    for i in range(10_000):
        event = {"type": "published", "time": whatif.start_ms + i, "topic": whatif.topic,
                 "subscription": None, "consumer": None, "position": [0, i]}
        if binding.ingest(_frames(event)):
            binding.throttle.request()
        clock.now += 0.0001
        binding.step()
    assert binding.throttle.requests == 10_000
    assert 1 <= binding.fetches <= 11
    assert ranges.frames == timeline.frames == binding.fetches
    clock.now += 1.0
    binding.step()  # the final state is drawn
    assert timeline.summary()["lanes"] == 10_000
    assert ranges.ranges == {"C1": [(0, 65536)]}


def test_live_binding_keeps_only_its_topics_events():
    binding = LiveBinding("zmq://127.0.0.1:1", "tcp://127.0.0.1:2", "mine", "s", admin=object())
    other = {"type": "published", "time": 1, "topic": "persistent://public/default/other"}
    mine = {"type": "published", "time": 1, "topic": "persistent://public/default/mine"}
    partition = {"type": "published", "time": 1,
                 "topic": "persistent://public/default/mine-partition-3"}
    assert not binding.ingest(_frames(other))
    assert binding.ingest(_frames(mine))
    assert binding.ingest(_frames(partition))
    assert not binding.ingest([b"published"])
    assert not binding.ingest([b"published", b"\xc1not msgpack"])
    assert len(binding.events) == 2
