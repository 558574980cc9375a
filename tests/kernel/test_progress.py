"""Progress bars: ipywidgets in a kernel (forced here), nothing outside one."""

from __future__ import annotations

from typing import Any

import pytest

import pulsarlab.magic_messages as magics_module
from pulsarlab.progress import Progress, in_kernel


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_disabled_outside_a_kernel(ip) -> None:
    assert in_kernel(ip) is False
    progress = Progress(100, "work")
    assert progress.backend is None
    progress.update(50)
    progress.close()


def test_widget_bar_is_throttled_and_finished(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ipywidgets")
    clock = Clock()
    progress = Progress(1000, "producing", enabled=True, clock=clock)
    assert progress.backend == "ipywidgets"
    progress.update(1)
    assert progress._bar.value == 1
    progress.update(500)  # within 0.1 s of the last redraw: not drawn
    assert progress._bar.value == 1
    clock.now = 0.2
    progress.update(600)
    assert progress._bar.value == 600
    assert progress._label.value == "producing: 600/1000"
    progress.update(1000)
    clock.now = 1.5
    progress.close()
    assert progress._bar.value == 1000
    assert progress._bar.bar_style == "success"
    assert progress._label.value == "producing: 1000 in 1.5 s"


def test_failure_and_status_line() -> None:
    pytest.importorskip("ipywidgets")
    with pytest.raises(RuntimeError), Progress(10, "x", enabled=True) as progress:
        progress.update(3, force=True)
        raise RuntimeError("boom")
    assert progress._bar.bar_style == "danger"
    assert progress._label.value == "x: stopped after 3"
    status = Progress(None, "starting Spark", enabled=True)
    assert status._bar is None and status._label.value == "starting Spark…"


def test_produce_and_consume_show_progress_in_a_kernel(run, broker, monkeypatch) -> None:
    pytest.importorskip("ipywidgets")
    bars: list[Any] = []

    class Recording(Progress):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(magics_module, "Progress", Recording)
    monkeypatch.setattr("pulsarlab.progress.in_kernel", lambda shell=None: True)
    run("%pulsar produce few x --count 3")
    assert bars[-1].backend is None  # below the threshold: no bar
    assert run("%pulsar produce lots x --count 600").success
    assert bars[-1].backend == "ipywidgets"
    assert bars[-1]._bar.value == 600 and bars[-1]._bar.bar_style == "success"
    got = run("%pulsar consume lots --sub s --earliest -n 600 --timeout 2000")
    assert len(got.value) == 600
    assert bars[-1]._bar.value == 600
