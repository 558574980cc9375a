"""A kernel that auto-loads the extension and then runs a tutorial's ``%load_ext pulsarlab``
prints nothing, and keeps the one broker runtime it had."""

from __future__ import annotations

from pulsarlab import magics


def test_second_load_ext_is_silent(ip, run):
    runtime = magics._STATE["runtime"]
    ran = run("%load_ext pulsarlab")
    assert ran.success
    assert ran.out == ""
    assert magics._STATE["runtime"] is runtime


def test_other_extensions_still_report_already_loaded(ip, run):
    run("%load_ext autoreload")
    ran = run("%load_ext autoreload")
    assert "already loaded" in ran.out
    run("%unload_ext autoreload")
