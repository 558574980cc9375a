"""Every holder of plotly figures opens them afresh when it is displayed, and its one-line
text says its title without markup.

A figure's comm opens empty (plotly's constructor) and gets its data as updates; a browser
view drawn from that opening state was blank (tutorial 06, one Run All in three). So just
before the display message a figure never shown gets a new comm, born with its data — for a
:class:`View` (the backlog chart among them) and equally for a holder that is not a view
(``CompareView``)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import pytest
from test_widget_backlog import FakeSource

from pulsarlab.widgets import FailoverView, FlowView, WhatIf
from pulsarlab.widgets.backlog import BacklogView
from pulsarlab.widgets.compare import CompareView


def _figures(widget: Any) -> list[go.FigureWidget]:
    if isinstance(widget, go.FigureWidget):
        return [widget]
    return [f for child in getattr(widget, "children", ()) for f in _figures(child)]


def _compare() -> tuple[Any, Any]:
    view = CompareView([("join", "c1"), ("publish", ["a", "b"])])
    return view, view


def _backlog() -> tuple[Any, Any]:
    source = FakeSource()
    source.push(0, {"subscriptions": {"payments": {"msgBacklog": 3}}})
    view = BacklogView(source, subscription="payments")
    return view, view


@pytest.mark.parametrize("make", [_compare, _backlog], ids=["CompareView", "BacklogView"])
def test_a_figure_holder_reopens_its_figures_on_display(make):
    holder, box = make()
    (figure,) = _figures(box)[:1]
    assert figure.comm is not None
    born = figure.model_id
    holder._repr_mimebundle_()
    assert figure.model_id != born  # a new front-end model, opened with the data
    again = figure.model_id
    holder._repr_mimebundle_()
    assert figure.model_id == again  # once only: a shown figure keeps its views


def test_the_text_line_of_a_failover_view_has_no_html():
    view_class = FailoverView
    whatif = WhatIf("Failover")
    view = view_class(whatif)
    whatif.add_consumer("C1")
    whatif.add_consumer("C2")
    whatif.publish(["a", "b"])
    whatif.advance(1000)
    title = view.figures()[0].layout.title.text
    text = view.describe()
    assert text.startswith(f"<{view_class.__name__} step ")
    assert "<" not in text[1:-1] and ">" not in text[1:-1] and "&" not in text, text
    plain = title.split("<br>")[0].split("<")[0].strip()
    assert plain and plain in text


def test_a_two_line_flow_title_is_one_line_of_text():
    whatif = WhatIf("Key_Shared")
    view = FlowView(whatif)
    whatif.add_consumer("C1")
    view.fig.layout.title.text = ("flow — C1: 10 permits<br><span style='font-size:11px'>"
                                  "waiting for the mark-delete: C2 &amp; C3</span>")
    assert view.describe().endswith(
        ": flow — C1: 10 permits · waiting for the mark-delete: C2 & C3>")
