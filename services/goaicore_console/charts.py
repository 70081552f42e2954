"""Bar charts as SVG geometry: computed here, drawn by a template (no script, no library).

A chart is a list of bars with their label and value; the template escapes the
labels like any other text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 720
HEIGHT = 180
MARGIN_LEFT = 70
MARGIN_BOTTOM = 24
MAX_BARS = 120


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    shown: str  # the value as the chart's tooltip writes it
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Chart:
    title: str
    bars: tuple[Bar, ...]
    top: str  # the largest value, written for the axis
    first_label: str
    last_label: str
    width: int = WIDTH
    height: int = HEIGHT
    left: int = MARGIN_LEFT
    base: int = HEIGHT - MARGIN_BOTTOM

    @property
    def empty(self) -> bool:
        return not self.bars


def bar_chart(
    title: str, points: Sequence[tuple[str, float]], unit: str = "", digits: int = 0
) -> Chart:
    """The last ``MAX_BARS`` points as bars scaled to the largest value."""
    points = list(points)[-MAX_BARS:]

    def shown(value: float) -> str:
        return f"{unit}{value:,.{digits}f}"

    if not points:
        return Chart(title, (), shown(0), "", "")
    top = max(value for _, value in points) or 1.0
    plot_width = WIDTH - MARGIN_LEFT - 8
    plot_height = HEIGHT - MARGIN_BOTTOM - 10
    step = plot_width / len(points)
    bars = []
    for index, (label, value) in enumerate(points):
        height = plot_height * max(value, 0.0) / top
        bars.append(
            Bar(
                label=label,
                value=value,
                shown=shown(value),
                x=MARGIN_LEFT + index * step + step * 0.1,
                y=HEIGHT - MARGIN_BOTTOM - height,
                width=max(step * 0.8, 1.0),
                height=height,
            )
        )
    return Chart(title, tuple(bars), shown(top), points[0][0], points[-1][0])
