"""A static SVG of a view: what GitHub, nbviewer and a notebook opened without a kernel show.

A widget needs a kernel to draw; a notebook's saved output does not have one. Every view
therefore also renders the step it shows as one self-contained SVG (no script, no font
download, no browser needed to make it), drawn here from the view's own plotly figures:
horizontal bars, markers and lines (with NaN breaks), heatmaps with a stepped colour
scale, polar bars and markers, line shapes, annotations, a legend of the named traces, and
the view's table as text lines underneath — within the view window the live figure has
(the axes' ranges, a polar subplot's sector). It is a faithful sketch of the figure, not a
pixel copy of plotly's rendering.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["html_to_lines", "picture_bundle", "picture_svg"]

WIDTH = 760
_FONT = "font-family='Helvetica,Arial,sans-serif'"
_TAG = re.compile(r"<[^>]+>")
_BREAK = re.compile(r"</tr>|<br\s*/?>|</p>|</li>|</div>|</h\d>|<table[^>]*>", re.IGNORECASE)
_CELL = re.compile(r"</t[dh]>", re.IGNORECASE)


def html_to_lines(text: str) -> list[str]:
    """The text of an HTML snippet, one line per row, paragraph or ``<br>``."""
    text = _CELL.sub("  ", _BREAK.sub("\n", text))
    lines = (html.unescape(_TAG.sub("", line)).strip() for line in text.split("\n"))
    return [" ".join(line.split()) for line in lines if line.strip()]


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _seq(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | bytes):
        return [value]
    try:
        return list(value)
    except TypeError:
        return [value]


def _at(value: Any, i: int, default: Any = None) -> Any:
    """``value[i]`` for an array attribute, ``value`` itself for a scalar one."""
    if value is None:
        return default
    if isinstance(value, str) or not hasattr(value, "__len__"):
        return value
    return value[i] if i < len(value) else default


def _get(obj: Any, *path: str) -> Any:
    for name in path:
        if obj is None:
            return None
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return obj


class _Axis:
    """A linear or categorical axis mapped onto ``[lo, hi]`` pixels."""

    def __init__(self, layout_axis: Any, values: Iterable[Any], lo: float, hi: float,
                 reverse: bool = False) -> None:
        self.lo, self.hi = lo, hi
        categories = _seq(_get(layout_axis, "categoryarray"))
        values = [v for v in values if v is not None]
        self.categories: list[Any] | None = None
        if categories or any(isinstance(v, str) for v in values):
            cats = list(categories)
            for v in values:
                if isinstance(v, str) and v not in cats:
                    cats.append(v)
            self.categories = cats
            self.min, self.max = -0.5, len(cats) - 0.5
        else:
            rng = _seq(_get(layout_axis, "range"))
            numbers = [n for n in (_num(v) for v in values) if n is not None]
            if len(rng) == 2 and _num(rng[0]) is not None and _num(rng[1]) is not None:
                self.min, self.max = float(rng[0]), float(rng[1])
            elif numbers:
                self.min, self.max = min(numbers), max(numbers)
                pad = (self.max - self.min) * 0.05 or 0.5
                self.min, self.max = self.min - pad, self.max + pad
            else:
                self.min, self.max = 0.0, 1.0
        if _get(layout_axis, "autorange") == "reversed":
            reverse = not reverse
        self.reverse = reverse
        self.layout = layout_axis

    def __call__(self, value: Any) -> float | None:
        if self.categories is not None and isinstance(value, str):
            if value not in self.categories:
                return None
            number: float | None = float(self.categories.index(value))
        else:
            number = _num(value)
        if number is None:
            return None
        span = (self.max - self.min) or 1.0
        t = (number - self.min) / span
        if self.reverse:
            t = 1 - t
        return self.lo + t * (self.hi - self.lo)

    def ticks(self) -> list[tuple[float, str]]:
        vals = _seq(_get(self.layout, "tickvals"))
        texts = _seq(_get(self.layout, "ticktext"))
        if vals:
            out = []
            for i, v in enumerate(vals):
                pos = self(v)
                if pos is not None:
                    out.append((pos, str(texts[i]) if i < len(texts) else _short(v)))
            return out
        if self.categories is not None:
            return [(p, str(c)) for c in self.categories if (p := self(c)) is not None]
        dtick = _num(_get(self.layout, "dtick"))
        if dtick:
            first = math.ceil(self.min / dtick) * dtick
            count = int((self.max - first) / dtick) + 1
            if count <= 60:
                return [(p, _short(v)) for v in (first + i * dtick for i in range(count))
                        if (p := self(v)) is not None]
        return [(p, _short(v)) for v in _nice_ticks(self.min, self.max)
                if (p := self(v)) is not None]


def _short(value: Any) -> str:
    number = _num(value)
    if number is None:
        return str(value)
    if number == int(number):
        return f"{int(number):,}".replace(",", " ") if abs(number) >= 10_000 else str(int(number))
    return f"{number:.3g}"


def _nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _color_of(scale: Sequence[Any], t: float) -> str:
    """A colour of a stepped plotly colour scale at ``t`` in ``[0, 1]``."""
    chosen = scale[0][1] if scale else "#999999"
    for stop, color in scale:
        if float(stop) <= t + 1e-9:
            chosen = color
    return str(chosen)


def _marker(x: float, y: float, symbol: str, size: float, color: str,
            line_color: str | None = None, line_width: float = 1.0) -> str:
    r = max(2.0, size / 2)
    is_open = symbol.endswith("-open") or "open" in symbol
    base = symbol.replace("-open", "").replace("-dot", "")
    fill = "none" if is_open else color
    stroke = color if is_open else (line_color or "none")
    width = max(1.5, line_width) if is_open else line_width
    style = f"fill='{_esc(fill)}' stroke='{_esc(stroke)}' stroke-width='{width:.1f}'"
    if base in ("x", "cross"):
        d = r * 0.8
        return (f"<path d='M{x - d:.1f},{y - d:.1f}L{x + d:.1f},{y + d:.1f}M{x - d:.1f},"
                f"{y + d:.1f}L{x + d:.1f},{y - d:.1f}' stroke='{_esc(color)}' "
                "stroke-width='2' fill='none'/>")
    if base == "line-ns":
        return (f"<path d='M{x:.1f},{y - r:.1f}V{y + r:.1f}' stroke='{_esc(color)}' "
                f"stroke-width='{max(2.0, line_width):.1f}'/>")
    if base in ("diamond", "square", "hourglass"):
        if base == "diamond":
            pts = [(x, y - r), (x + r, y), (x, y + r), (x - r, y)]
        elif base == "square":
            pts = [(x - r * 0.8, y - r * 0.8), (x + r * 0.8, y - r * 0.8),
                   (x + r * 0.8, y + r * 0.8), (x - r * 0.8, y + r * 0.8)]
        else:
            pts = [(x - r, y - r), (x + r, y - r), (x - r, y + r), (x + r, y + r)]
        return _polygon(pts, style)
    if base in ("star", "hexagon"):
        corners = 10 if base == "star" else 6
        pts = []
        for i in range(corners):
            radius = r if base == "hexagon" or i % 2 == 0 else r * 0.45
            angle = math.pi / 2 + i * 2 * math.pi / corners
            pts.append((x + radius * math.cos(angle), y - radius * math.sin(angle)))
        return _polygon(pts, style)
    return f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r:.1f}' {style}/>"


class _Dots:
    """Plain filled circles, drawn as one round-capped path per colour and size."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, float], list[str]] = {}

    def add(self, x: float, y: float, symbol: str, size: float, color: str,
            line_color: Any) -> bool:
        if symbol != "circle" or line_color or not color.startswith("#"):
            return False
        self.groups.setdefault((color, round(size, 1)), []).append(f"M{x:.1f},{y:.1f}h0")
        return True

    def svg(self) -> list[str]:
        return [f"<path d='{''.join(d)}' stroke='{_esc(c)}' stroke-width='{size:.1f}' "
                "stroke-linecap='round'/>" for (c, size), d in self.groups.items()]


def _polygon(points: Sequence[tuple[float, float]], style: str) -> str:
    coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    return f"<polygon points='{coords}' {style}/>"


def _text(x: float, y: float, text: Any, size: int = 11, anchor: str = "middle",
          color: str = "#222", weight: str = "normal") -> str:
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}' "
            f"fill='{_esc(color)}' font-weight='{weight}' {_FONT}>{_esc(text)}</text>")


def _visible(trace: Any) -> bool:
    return _get(trace, "visible") not in (False, "legendonly")


def _legend_entries(fig: Any) -> list[tuple[str, str, str]]:
    """(name, colour, symbol) of the traces shown in the legend."""
    if _get(fig, "layout", "showlegend") is False:
        return []
    out = []
    for trace in fig.data:
        name = _get(trace, "name")
        if not name or _get(trace, "showlegend") is False:
            continue
        if not _visible(trace):
            continue
        if not (_seq(_get(trace, "x")) or _seq(_get(trace, "r")) or _seq(_get(trace, "z"))
                or _get(trace, "meta") == "legend"):
            continue
        color = _get(trace, "marker", "color")
        if color is None or not isinstance(color, str):
            color = _get(trace, "line", "color")
        color = color if isinstance(color, str) else "#555555"
        symbol = _get(trace, "marker", "symbol")
        mode = _get(trace, "mode") or ""
        if trace.type in ("scatter", "scattergl") and "markers" not in mode:
            symbol = "line"
        elif trace.type in ("bar", "barpolar") and not isinstance(symbol, str):
            symbol = "square"
        out.append((str(name), color, symbol if isinstance(symbol, str) else "circle"))
    return out


def _figure_svg(fig: Any, top: float) -> tuple[list[str], float]:
    """SVG elements of one plotly figure starting at ``top``; returns them and the height."""
    layout = fig.layout
    height = float(_get(layout, "height") or 400)
    margin = _get(layout, "margin")
    m_l = float(_get(margin, "l") or 60)
    m_r = float(_get(margin, "r") or 20)
    m_t = float(_get(margin, "t") or 40)
    m_b = float(_get(margin, "b") or 40)
    legend = _legend_layout(_legend_entries(fig))
    legend_rows = max((row for row, *_ in legend), default=-1) + 1
    out: list[str] = []
    title = _get(layout, "title", "text")
    lines = [part for line in re.split(r"<br\s*/?>", title or "", flags=re.IGNORECASE)
             for part in textwrap.wrap(_TAG.sub("", line), 100)]
    for number, line in enumerate(lines):  # a subtitle's lines are smaller, as plotly's
        out.append(_text(WIDTH / 2, top + 18 + 16 * number, line, 11 if number else 13,
                         weight="normal" if number else "bold"))
    top += 16 * max(0, len(lines) - 1)
    plot_top = top + max(m_t, 30)
    plot_bottom = top + height - m_b
    if any(t.type in ("barpolar", "scatterpolar") for t in fig.data):
        out += _polar(fig, m_l, plot_top, WIDTH - m_r, plot_bottom)
    else:
        out += _cartesian(fig, m_l, plot_top, WIDTH - m_r, plot_bottom)
    for row, x, (name, color, symbol) in legend:
        y = top + height + 4 + row * 18
        if symbol == "line":
            out.append(f"<path d='M{x:.1f},{y + 8:.1f}h18' stroke='{_esc(color)}' "
                       "stroke-width='3'/>")
        else:
            out.append(_marker(x + 9, y + 8, symbol, 10, color))
        out.append(_text(x + 24, y + 12, name, 11, anchor="start"))
    return out, height + 4 + legend_rows * 18 + 16 * max(0, len(lines) - 1)


def _legend_layout(
    entries: list[tuple[str, str, str]],
) -> list[tuple[int, float, tuple[str, str, str]]]:
    """Legend entries placed left to right, wrapping: (row, x, entry)."""
    placed = []
    row, x = 0, 20.0
    for entry in entries:
        width = 34 + 6.5 * len(entry[0])
        if x > 20 and x + width > WIDTH - 10:
            row, x = row + 1, 20.0
        placed.append((row, x, entry))
        x += width + 16
    return placed


def _axis_pair(fig: Any, trace: Any) -> tuple[str, str]:
    return (_get(trace, "xaxis") or "x"), (_get(trace, "yaxis") or "y")


def _layout_axis(layout: Any, ref: str, letter: str) -> Any:
    suffix = ref[1:]
    return _get(layout, f"{letter}axis{suffix}")


def _linked(layout: Any, ref: str, letter: str) -> str:
    """The axis ``ref`` is drawn with: the end of its chain of ``matches`` (or itself)."""
    seen = {ref}
    while (target := _get(_layout_axis(layout, ref, letter), "matches")) and target not in seen:
        seen.add(ref := str(target))
    return ref


def _extent(traces: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The x and y values ``traces`` span (a bar from its base to its end)."""
    xs: list[Any] = []
    ys: list[Any] = []
    for t in traces:
        if t.type == "bar" and _get(t, "orientation") != "h":
            xs += _seq(_get(t, "x"))
            ys += [0, *_seq(_get(t, "y"))]
        elif t.type == "bar":
            bases = _seq(_get(t, "base"))
            widths = _seq(_get(t, "x"))
            xs += bases + [(_num(b) or 0) + (_num(w) or 0) for b, w in zip(bases, widths,
                                                                         strict=False)]
            ys += _seq(_get(t, "y"))
        else:
            xs += _seq(_get(t, "x"))
            ys += _seq(_get(t, "y"))
    return xs, ys


def _cartesian(fig: Any, left: float, top: float, right: float, bottom: float) -> list[str]:
    layout = fig.layout
    out: list[str] = []
    pairs: dict[tuple[str, str], list[Any]] = {}
    for trace in fig.data:
        pairs.setdefault(_axis_pair(fig, trace), []).append(trace)
    if not pairs:
        pairs[("x", "y")] = []
    # axes linked by ``matches`` (make_subplots' shared axes) span the values of all of them,
    # as plotly draws them: one step is at one x in every panel
    values: dict[tuple[str, str], list[Any]] = {}
    for (xref, yref), traces in pairs.items():
        xs, ys = _extent(traces)
        values.setdefault(("x", _linked(layout, xref, "x")), []).extend(xs)
        values.setdefault(("y", _linked(layout, yref, "y")), []).extend(ys)
    axes: dict[tuple[str, str], tuple[_Axis, _Axis]] = {}
    for (xref, yref), traces in pairs.items():
        lx, ly = _layout_axis(layout, xref, "x"), _layout_axis(layout, yref, "y")
        xdom = _seq(_get(lx, "domain")) or [0, 1]
        ydom = _seq(_get(ly, "domain")) or [0, 1]
        x0 = left + float(xdom[0]) * (right - left)
        x1 = left + float(xdom[1]) * (right - left)
        y0 = bottom - float(ydom[1]) * (bottom - top)
        y1 = bottom - float(ydom[0]) * (bottom - top)
        xa = _Axis(lx, values[("x", _linked(layout, xref, "x"))], x0, x1)
        ya = _Axis(ly, values[("y", _linked(layout, yref, "y"))], y1, y0)
        axes[(xref, yref)] = (xa, ya)
        out.append(f"<rect x='{x0:.1f}' y='{y0:.1f}' width='{x1 - x0:.1f}' "
                   f"height='{y1 - y0:.1f}' fill='#f7f9fc' stroke='#d0d7e2'/>")
        if _get(lx, "visible") is not False:
            for pos, label in xa.ticks()[:40]:
                out.append(_text(pos, y1 + 14, label, 10, color="#555"))
            xtitle = _get(lx, "title", "text")
            if xtitle:
                out.append(_text((x0 + x1) / 2, y1 + 30, xtitle, 11, color="#333"))
        if _get(ly, "visible") is not False:
            for pos, label in ya.ticks()[:40]:
                out.append(_text(x0 - 6, pos + 4, label, 10, anchor="end", color="#555"))
            ytitle = _get(ly, "title", "text")
            if ytitle:
                out.append(f"<text transform='translate({x0 - 48:.1f},{(y0 + y1) / 2:.1f}) "
                           f"rotate(-90)' font-size='11' text-anchor='middle' fill='#333' "
                           f"{_FONT}>{_esc(ytitle)}</text>")
        for trace in traces:
            if _visible(trace):
                out += _trace(trace, xa, ya)
    first = next(iter(axes.values()))
    for shape in _seq(_get(layout, "shapes")):
        if _get(shape, "type") == "rect":
            xa, ya = first
            p0, p1 = xa(_get(shape, "x0")), xa(_get(shape, "x1"))
            q0, q1 = ya(_get(shape, "y0")), ya(_get(shape, "y1"))
            if None not in (p0, p1, q0, q1):
                color = _get(shape, "line", "color") or "#444"
                width = _get(shape, "line", "width") or 1
                out.append(f"<rect x='{min(p0, p1):.1f}' y='{min(q0, q1):.1f}' "
                           f"width='{abs(p1 - p0):.1f}' height='{abs(q1 - q0):.1f}' "
                           f"fill='none' stroke='{_esc(color)}' stroke-width='{width}'/>")
        if _get(shape, "type") == "line":
            xa, ya = first
            p0, p1 = xa(_get(shape, "x0")), xa(_get(shape, "x1"))
            q0, q1 = ya(_get(shape, "y0")), ya(_get(shape, "y1"))
            if None not in (p0, p1, q0, q1):
                color = _get(shape, "line", "color") or "#444"
                width = _get(shape, "line", "width") or 1
                dash = " stroke-dasharray='3,3'" if _get(shape, "line", "dash") else ""
                out.append(f"<path d='M{p0:.1f},{q0:.1f}L{p1:.1f},{q1:.1f}' "
                           f"stroke='{_esc(color)}' stroke-width='{width}'{dash}/>")
    for note in _seq(_get(layout, "annotations")):
        xa, ya = first
        if _get(note, "xref") == "paper" or _get(note, "yref") == "paper":
            px = left + float(_get(note, "x") or 0) * (right - left)
            py = bottom - float(_get(note, "y") or 0) * (bottom - top)
        else:
            px, py = xa(_get(note, "x")), ya(_get(note, "y"))
        if px is None or py is None:
            continue
        py -= float(_get(note, "yshift") or 0)
        color = _get(note, "font", "color") or "#333"
        lines = html_to_lines(str(_get(note, "text") or ""))
        anchor = {"left": "start", "right": "end"}.get(_get(note, "xanchor"), "middle")
        if lines:
            out.append(_text(px, py, lines[0], 10, anchor=anchor, color=color))
    return out


def _trace(trace: Any, xa: _Axis, ya: _Axis) -> list[str]:
    out: list[str] = []
    kind = trace.type
    if kind == "bar" and _get(trace, "orientation") != "h":
        colors = _get(trace, "marker", "color") or "#888"
        xs, ys = _seq(_get(trace, "x")), _seq(_get(trace, "y"))
        band = abs((xa(0.4) or 0) - (xa(-0.4) or 0)) if xa.categories is not None else 20
        for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
            px, top, zero = xa(x), ya(y), ya(0)
            if None in (px, top, zero):
                continue
            out.append(f"<rect x='{px - band / 2:.1f}' y='{min(top, zero):.1f}' "
                       f"width='{band:.1f}' height='{abs(zero - top):.1f}' "
                       f"fill='{_esc(_at(colors, i, '#888'))}'/>")
        return out
    if kind == "bar":
        bases = _seq(_get(trace, "base"))
        widths = _seq(_get(trace, "x"))
        rows = _seq(_get(trace, "y"))
        colors = _get(trace, "marker", "color")
        texts = _get(trace, "text")
        line_colors = _get(trace, "marker", "line", "color")
        line_widths = _get(trace, "marker", "line", "width")
        band = abs((ya(0.4) or 0) - (ya(-0.4) or 0)) if ya.categories is not None else 20
        for i, (base, width) in enumerate(zip(bases, widths, strict=False)):
            x0 = xa(base)
            x1 = xa((_num(base) or 0) + (_num(width) or 0))
            yc = ya(rows[i] if i < len(rows) else 0)
            if None in (x0, x1, yc):
                continue
            color = _at(colors, i, "#888")
            lw = _num(_at(line_widths, i, 0)) or 0
            stroke = (f" stroke='{_esc(_at(line_colors, i, '#000'))}' stroke-width='{lw:.1f}'"
                      if lw else " stroke='#ffffff' stroke-width='1'")
            out.append(f"<rect x='{min(x0, x1):.1f}' y='{yc - band / 2:.1f}' "
                       f"width='{abs(x1 - x0):.1f}' height='{band:.1f}' fill='{_esc(color)}'"
                       f"{stroke}/>")
            label = _at(texts, i)
            if label and abs(x1 - x0) > 7 * len(str(label)):
                out.append(_text((x0 + x1) / 2, yc + 4, label, 10, color="#fff"))
        return out
    if kind == "heatmap":
        z = [list(row) for row in _seq(_get(trace, "z"))]
        xs = _seq(_get(trace, "x")) or list(range(len(z[0]) if z else 0))
        ys = _seq(_get(trace, "y")) or list(range(len(z)))
        zmin = _num(_get(trace, "zmin")) or 0.0
        zmax = _num(_get(trace, "zmax")) or 1.0
        scale = _seq(_get(trace, "colorscale"))
        texts = _seq(_get(trace, "text"))
        hx = abs((xa(1) if xa.categories is None else xa(xs[1] if len(xs) > 1 else xs[0]))
                 - (xa(0) if xa.categories is None else xa(xs[0]))) if xs else 10
        hx = hx or (xa.hi - xa.lo)
        hy = abs((ya(ys[1]) if len(ys) > 1 else ya.hi) - ya(ys[0])) if ys else 10
        hy = hy or abs(ya.hi - ya.lo)
        for r, row in enumerate(z):
            for c, value in enumerate(row):
                v = _num(value)
                cx = xa(xs[c]) if c < len(xs) else None
                cy = ya(ys[r]) if r < len(ys) else None
                if v is None or cx is None or cy is None:
                    continue
                t = (v - zmin) / ((zmax - zmin) or 1)
                color = _color_of(scale, t) if scale else "#888"
                out.append(f"<rect x='{cx - hx / 2 + 1:.1f}' y='{cy - hy / 2 + 1:.1f}' "
                           f"width='{max(1.0, hx - 2):.1f}' height='{max(1.0, hy - 2):.1f}' "
                           f"fill='{_esc(color)}'/>")
                label = texts[r][c] if r < len(texts) and c < len(texts[r]) else ""
                if label and hx > 6 * len(str(label)):
                    out.append(_text(cx, cy + 4, label, 10))
        return out
    xs = _seq(_get(trace, "x"))
    ys = _seq(_get(trace, "y"))
    mode = _get(trace, "mode") or "markers"
    if "lines" in mode:
        color = _get(trace, "line", "color") or "#555"
        width = _get(trace, "line", "width") or 2
        dash = " stroke-dasharray='4,3'" if _get(trace, "line", "dash") else ""
        stepped = _get(trace, "line", "shape") == "hv"
        path: list[str] = []
        pen_up = True
        last_y = None
        for x, y in zip(xs, ys, strict=False):
            px, py = xa(x), ya(y)
            if px is None or py is None:
                pen_up = True
                continue
            if pen_up:
                path.append(f"M{px:.1f},{py:.1f}")
            elif stepped and last_y is not None:
                path.append(f"H{px:.1f}V{py:.1f}")
            else:
                path.append(f"L{px:.1f},{py:.1f}")
            pen_up, last_y = False, py
        if path:
            out.append(f"<path d='{''.join(path)}' fill='none' stroke='{_esc(color)}' "
                       f"stroke-width='{width}'{dash}/>")
    if "markers" in mode:
        colors = _get(trace, "marker", "color")
        if colors is None:
            colors = _get(trace, "line", "color") or "#555"
        symbols = _get(trace, "marker", "symbol") or "circle"
        sizes = _get(trace, "marker", "size") or 8
        line_colors = _get(trace, "marker", "line", "color")
        line_width = _num(_get(trace, "marker", "line", "width")) or 1.0
        dots = _Dots()
        for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
            px, py = xa(x), ya(y)
            if px is None or py is None:
                continue
            symbol = str(_at(symbols, i, "circle"))
            size = _num(_at(sizes, i, 8)) or 8
            color = str(_at(colors, i, "#555"))
            if not dots.add(px, py, symbol, size, color, _at(line_colors, i)):
                out.append(_marker(px, py, symbol, size, color, _at(line_colors, i),
                                   line_width))
        out += dots.svg()
    if "text" in mode:
        texts = _get(trace, "text")
        places = _get(trace, "textposition") or "top center"
        sizes = _get(trace, "marker", "size") or 8
        for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
            px, py = xa(x), ya(y)
            label = _at(texts, i)
            if px is not None and py is not None and label not in (None, ""):
                # plotly's textposition: above or below the marker, beside it or centred
                place = str(_at(places, i, "top center"))
                gap = (_num(_at(sizes, i, 8)) or 8) / 2 + 3
                dy = gap + 8 if place.startswith("bottom") else -gap
                dy = 3 if place.startswith("middle") else dy
                anchor = ("start" if place.endswith("right") else
                          "end" if place.endswith("left") else "middle")
                dx = 0.0 if anchor == "middle" or not place.startswith("middle") else (
                    gap if anchor == "start" else -gap)
                out.append(_text(px + dx, py + dy, label, 9, anchor=anchor, color="#222",
                                 weight="bold"))
    return out


class _Sector:
    """The part of a polar subplot shown (``polar.sector``: two angles on the page,
    counterclockwise from the right), and which thetas of the data fall in it."""

    def __init__(self, polar: Any, rotation: float, clockwise: bool) -> None:
        angles = [_num(a) for a in _seq(_get(polar, "sector"))]
        self.start, self.end = 0.0, 360.0
        if len(angles) == 2 and None not in angles:
            low, high = sorted(float(a) for a in angles if a is not None)
            if high - low < 360:
                self.start, self.end = low, high
        self.whole = self.end - self.start >= 360
        self.first = rotation - self.end if clockwise else self.start - rotation
        """The smallest theta shown; the shown thetas run from it over ``end - start``."""

    def box(self) -> tuple[float, float, float, float]:
        """(left, right, bottom, top) of the shown part of a unit disc around its centre."""
        angles = [self.start, self.end] + [90.0 * k for k in range(
            math.ceil(self.start / 90), math.floor(self.end / 90) + 1)]
        xs = [0.0] + [math.cos(math.radians(a)) for a in angles]
        ys = [0.0] + [math.sin(math.radians(a)) for a in angles]
        return min(xs), max(xs), min(ys), max(ys)

    def shows(self, theta: float) -> bool:
        return self.whole or (theta - self.first) % 360 <= self.end - self.start + 1e-9

    def clip(self, t0: float, t1: float) -> list[tuple[float, float]]:
        """The shown pieces of the thetas ``t0..t1`` (``t0 <= t1``)."""
        if self.whole:
            return [(t0, t1)]
        last = self.first + self.end - self.start
        moved = self.first + (t0 - self.first) % 360
        pieces = []
        for a in (moved, moved - 360):
            low, high = max(a, self.first), min(a + t1 - t0, last)
            if low < high:
                pieces.append((low, high))
        return pieces


def _polar(fig: Any, left: float, top: float, right: float, bottom: float) -> list[str]:
    polar = _get(fig.layout, "polar")
    rng = _seq(_get(polar, "radialaxis", "range")) or [0, 1.2]
    r_max = _num(rng[1]) or 1.2
    rotation = _num(_get(polar, "angularaxis", "rotation"))
    rotation = 90.0 if rotation is None else rotation
    clockwise = _get(polar, "angularaxis", "direction") == "clockwise"
    domain_x = _seq(_get(polar, "domain", "x")) or [0, 1]
    x0 = left + float(domain_x[0]) * (right - left)
    x1 = left + float(domain_x[1]) * (right - left)
    sector = _Sector(polar, rotation, clockwise)
    box_left, box_right, box_bottom, box_top = sector.box()  # the shown part fills the area
    radius = min((x1 - x0) / (box_right - box_left), (bottom - top) / (box_top - box_bottom))
    cx = x0 + ((x1 - x0) - (box_right - box_left) * radius) / 2 - box_left * radius
    cy = top + ((bottom - top) - (box_top - box_bottom) * radius) / 2 + box_top * radius

    def point(r: float, theta: float) -> tuple[float, float]:
        angle = math.radians(rotation - theta if clockwise else rotation + theta)
        scale = radius * r / r_max
        return cx + scale * math.cos(angle), cy - scale * math.sin(angle)

    if sector.whole:
        out = [f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='{radius:.1f}' fill='#f7f9fc' "
               "stroke='#d0d7e2'/>"]
    else:
        shown = _wedge(point, 0, r_max, sector.first,
                       sector.first + sector.end - sector.start)
        out = [f"<path d='{shown}' fill='#f7f9fc' stroke='#d0d7e2'/>"]
    ticks = _seq(_get(polar, "angularaxis", "tickvals"))
    texts = _seq(_get(polar, "angularaxis", "ticktext"))
    if _get(polar, "angularaxis", "showticklabels") is not False:
        for i, theta in enumerate(ticks):
            if not sector.shows(float(theta)):
                continue
            px, py = point(r_max * 1.06, float(theta))
            out.append(_text(px, py + 4, texts[i] if i < len(texts) else theta, 10,
                             color="#555"))
    for trace in fig.data:
        if not _visible(trace):
            continue
        rs = _seq(_get(trace, "r"))
        thetas = _seq(_get(trace, "theta"))
        if trace.type == "barpolar":
            bases = _get(trace, "base")
            widths = _get(trace, "width")
            colors = _get(trace, "marker", "color")
            line_colors = _get(trace, "marker", "line", "color")
            line_widths = _get(trace, "marker", "line", "width")
            fills: dict[str, list[str]] = {}
            band = 0.0
            for i, (r, theta) in enumerate(zip(rs, thetas, strict=False)):
                base = _num(_at(bases, i, 0)) or 0.0
                width = _num(_at(widths, i, 1)) or 1.0
                lw = _num(_at(line_widths, i, 0)) or 0.0
                color = str(_at(colors, i, "#888"))
                for t0, t1 in sector.clip(float(theta) - width / 2, float(theta) + width / 2):
                    if lw:
                        shape = _wedge(point, base, base + float(r), t0, t1)
                        out.append(f"<path d='{shape}' fill='{_esc(color)}' "
                                   f"stroke='{_esc(_at(line_colors, i, '#000'))}' "
                                   f"stroke-width='{lw:.1f}'/>")
                    else:
                        fills.setdefault(color, []).append(
                            _arc(point, base + float(r) / 2, t0, t1, clockwise))
                        band = radius * float(r) / r_max
            out += [f"<path d='{''.join(d)}' fill='none' stroke='{_esc(c)}' "
                    f"stroke-width='{band:.1f}'/>" for c, d in fills.items()]
        else:
            colors = _get(trace, "marker", "color") or "#555"
            symbols = _get(trace, "marker", "symbol") or "circle"
            sizes = _get(trace, "marker", "size") or 8
            line_colors = _get(trace, "marker", "line", "color")
            line_width = _num(_get(trace, "marker", "line", "width")) or 1.0
            mode = _get(trace, "mode") or "markers"
            labels = _get(trace, "text")
            dots = _Dots()
            for i, (r, theta) in enumerate(zip(rs, thetas, strict=False)):
                if _num(r) is None or _num(theta) is None:  # a legend entry's empty point
                    continue
                if not sector.shows(float(theta)):
                    continue
                px, py = point(float(r), float(theta))
                symbol = str(_at(symbols, i, "circle"))
                size = _num(_at(sizes, i, 8)) or 8
                color = str(_at(colors, i, "#555"))
                if "markers" in mode and not dots.add(px, py, symbol, size, color,
                                                      _at(line_colors, i)):
                    out.append(_marker(px, py, symbol, size, color, _at(line_colors, i),
                                       line_width))
                label = _at(labels, i)
                if "text" in mode and label:
                    out.append(_text(px, py - 10, label, 10, weight="bold"))
            out += dots.svg()
    return out


def _arc(point: Any, r: float, t0: float, t1: float, clockwise: bool) -> str:
    """Path data of a circular arc at radius ``r`` (stroked thick, it is a polar bar)."""
    if abs(t1 - t0) >= 359.9:  # a whole circle: two halves
        middle = (t0 + t1) / 2
        return _arc(point, r, t0, middle, clockwise) + _arc(point, r, middle, t1, clockwise)
    (x0, y0), (x1, y1) = point(r, t0), point(r, t1)
    cx, cy = point(0, t0)
    rx = math.hypot(x0 - cx, y0 - cy)
    large = 1 if abs(t1 - t0) > 180 else 0
    sweep = 1 if clockwise == (t1 >= t0) else 0
    return f"M{x0:.1f},{y0:.1f}A{rx:.1f},{rx:.1f} 0 {large} {sweep} {x1:.1f},{y1:.1f}"


def _wedge(point: Any, r0: float, r1: float, t0: float, t1: float) -> str:
    """Path data of an annular sector (a polar bar)."""
    steps = max(1, int(abs(t1 - t0) / 4))
    outer = [point(r1, t0 + (t1 - t0) * i / steps) for i in range(steps + 1)]
    inner = [point(r0, t1 - (t1 - t0) * i / steps) for i in range(steps + 1)]
    return "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in outer + inner) + "Z"


def picture_svg(figures: Sequence[Any], caption: Sequence[str], title: str = "") -> str:
    """One SVG: ``title``, each figure under the previous one, then ``caption`` lines."""
    parts: list[str] = []
    y = 0.0
    if title:
        parts.append(_text(8, 14, title, 11, anchor="start", color="#666"))
        y = 20.0
    for fig in figures:
        elements, height = _figure_svg(fig, y)
        parts += elements
        y += height
    wrapped = [chunk for line in caption for chunk in textwrap.wrap(line, 110) or [""]]
    for line in wrapped[:40]:
        parts.append(_text(8, y + 14, line, 11, anchor="start"))
        y += 16
    height = y + 8
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height:.0f}' "
            f"viewBox='0 0 {WIDTH} {height:.0f}'><rect width='100%' height='100%' "
            f"fill='#ffffff'/>{''.join(parts)}</svg>")


def picture_bundle(svg: str, alt: str) -> dict[str, str]:
    """The picture as output mime types: ``image/svg+xml`` (GitHub, nbviewer, a trusted
    notebook) and ``text/html`` holding it as an ``<img>`` data URI — the form JupyterLab
    shows for an untrusted notebook (one opened before it was run), whose sanitiser drops
    inline SVG and which does not render ``image/svg+xml`` from untrusted outputs."""
    data = urllib.parse.quote(svg, safe=" ='/:;,.-()@!*$+?")  # ~5% larger, not base64's 33%
    return {
        "image/svg+xml": svg,
        "text/html": f'<img alt="{_esc(alt)}" src="data:image/svg+xml,{data}"/>',
    }
