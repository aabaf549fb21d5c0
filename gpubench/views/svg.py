"""Charts as inline SVG text: log-scaled axes, lines, points and labelled ceilings, nothing else.

The HTML report draws its charts with this rather than a plotting library: a chart is a few hundred
elements of plain SVG inside the page, so the file opens offline with no script to load, prints as it looks,
scales to a phone's width, and every mark is an element a browser test can count and a filter can hide (each
mark carries `data-key`, the series it belongs to). matplotlib (the `plot` command's PNGs) stays optional.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

WIDTH, HEIGHT = 640, 400
MARGIN = (28, 16, 44, 64)  # top, right, bottom, left
TIPS = 500  # marks per series above which they are drawn as one path of dots (no tooltip; one element to lay out)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")


def _log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten (and 2 and 5 times them where the range is short) between low and high."""
    ticks = []
    for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for m in ((1,) if math.log10(high / low) > 3 else (1, 2, 5)):
            v = m * 10.0 ** e
            if low <= v <= high:
                ticks.append(v)
    return ticks


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 1 else f"{v:.3g}"


@dataclass
class Series:
    key: str  # what a filter hides it by (the variant's name)
    label: str
    points: list[tuple[float, float]]
    reference: bool = False  # the library: drawn dashed and thicker, as the line the others are read against
    joined: bool = True  # a line through the points (False: points only)


@dataclass
class Chart:
    title: str
    x_label: str
    y_label: str
    series: list[Series] = field(default_factory=list)
    ceilings: list[tuple[str, list[tuple[float, float]]]] = field(default_factory=list)  # (label, polyline)
    x_log: bool = True  # False: a linear x (a history's run number); drawn linear too where an x is not positive
    marks: list[tuple[float, str]] = field(default_factory=list)  # vertical rules at these x, labelled

    def _bounds(self):
        xs = [x for s in self.series for x, _ in s.points] + [x for _, line in self.ceilings for x, _ in line]
        ys = [y for s in self.series for _, y in s.points] + [y for _, line in self.ceilings for _, y in line]
        xs, ys = [x for x in xs if x > 0] or [1.0], [y for y in ys if y > 0] or [1.0]
        return (min(xs) / 1.3, max(xs) * 1.3), (min(ys) / 1.5, max(ys) * 1.5)

    def legend(self) -> list[tuple[str, str, str, bool]]:
        """(key, label, colour, reference) of each series, for a legend written beside the chart."""
        return [(s.key, s.label, PALETTE[i % len(PALETTE)], s.reference) for i, s in enumerate(self.series)]

    def to_svg(self) -> str:
        (x0, x1), (y0, y1) = self._bounds()
        xs = [x for s in self.series for x, _ in s.points] + [x for _, line in self.ceilings for x, _ in line]
        x_log = self.x_log and all(x > 0 for x in xs)  # a declared op's last dim may be 0 (a flag): no log of it
        if not x_log:
            x0, x1 = min(min(xs, default=1), 1) - 0.5, max(x1 / 1.3, 1.0) + 0.5
        top, right, bottom, left = MARGIN
        w, h = WIDTH - left - right, HEIGHT - top - bottom

        def px(x):
            if not x_log:
                return left + w * (x - x0) / (x1 - x0)
            return left + w * (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))

        def py(y):
            return top + h - h * (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0))

        out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(self.title)}" '
               f'xmlns="http://www.w3.org/2000/svg">',
               f'<text x="{left}" y="18" class="title">{escape(self.title)}</text>',
               f'<rect x="{left}" y="{top}" width="{w}" height="{h}" class="frame"/>']
        x_ticks = (_log_ticks(x0, x1) if x_log
                   else list(range(math.ceil(x0), int(x1) + 1, max(1, int(x1 - x0) // 10))))
        for v in x_ticks:
            out.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{top}" y2="{top + h}" class="grid"/>'
                       f'<text x="{px(v):.1f}" y="{top + h + 14}" class="tick" text-anchor="middle">{_fmt(v)}</text>')
        for v in _log_ticks(y0, y1):
            out.append(f'<line x1="{left}" x2="{left + w}" y1="{py(v):.1f}" y2="{py(v):.1f}" class="grid"/>'
                       f'<text x="{left - 4}" y="{py(v) + 4:.1f}" class="tick" text-anchor="end">{_fmt(v)}</text>')
        out.append(f'<text x="{left + w / 2}" y="{HEIGHT - 8}" class="axis" text-anchor="middle">'
                   f'{escape(self.x_label)}</text>')
        out.append(f'<text transform="translate(14 {top + h / 2}) rotate(-90)" class="axis" text-anchor="middle">'
                   f'{escape(self.y_label)}</text>')
        for x, label in self.marks:
            out.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{top}" y2="{top + h}" class="change"/>'
                       f'<text x="{px(x) + 3:.1f}" y="{top + 12}" class="ceiling-label">{escape(label)}</text>')
        for label, line in self.ceilings:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
            out.append(f'<polyline points="{path}" class="ceiling"/>')
            x, y = line[-1]
            out.append(f'<text x="{px(x) - 4:.1f}" y="{py(y) - 4:.1f}" class="ceiling-label" text-anchor="end">'
                       f'{escape(label)}</text>')
        for i, s in enumerate(self.series):
            colour = PALETTE[i % len(PALETTE)]
            key = escape(s.key, quote=True)
            g = [f'<g class="series{" reference" if s.reference else ""}" data-key="{key}" style="--c:{colour}">']
            if s.joined and len(s.points) > 1:
                path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
                g.append(f'<polyline points="{path}" class="line"/>')
            if len(s.points) <= TIPS:  # a circle with a tooltip per mark while there are few enough to hover
                label = escape(s.label)
                for x, y in s.points:
                    g.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" class="mark">'
                             f'<title>{label}: {_fmt(x)}, {_fmt(y)}</title></circle>')
            else:  # many marks: one path of dots (a zero-length segment each, drawn with round caps)
                dots = "".join(f"M{px(x):.1f} {py(y):.1f}h0" for x, y in s.points)
                g.append(f'<path d="{dots}" class="marks" data-marks="{len(s.points)}"/>')
            out.append("".join(g) + "</g>")
        out.append("</svg>")
        return "\n".join(out)
