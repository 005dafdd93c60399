"""Plot styling shared by the panels, so that every plot reads the same in light and dark themes."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPalette, QPicture
from PySide6.QtWidgets import (
    QApplication, QGraphicsItem, QHBoxLayout, QStackedLayout, QTabBar, QVBoxLayout, QWidget,
)


def _palette_color(role: QPalette.ColorRole, fallback: str) -> QColor:
    app = QApplication.instance()
    return QColor(app.palette().color(role)) if app is not None else QColor(fallback)


def _legend_style(text_size: str) -> dict:
    background = _palette_color(QPalette.ColorRole.Base, "white")
    background.setAlpha(215)
    text = _palette_color(QPalette.ColorRole.Text, "black")
    border = QColor(text)
    border.setAlpha(90)
    return dict(brush=pg.mkBrush(background), pen=pg.mkPen(border), labelTextColor=text,
                labelTextSize=text_size)


def add_legend(plot: pg.PlotItem, offset=(-10, 10), text_size: str = "9pt",
               below: bool = False, columns: int = 4) -> pg.LegendItem:
    """A legend on the theme's own background (mostly opaque, so the curves under it do not
    clutter the labels) with a thin border and the theme's text colour.

    `below` puts it under the plot, `columns` entries a row, where it can never cover a curve
    (for plots whose curves fill every corner)."""
    if not below:
        return plot.addLegend(offset=offset, **_legend_style(text_size))
    legend = pg.LegendItem(colCount=columns, **_legend_style(text_size))
    legend.setParentItem(plot)  # LegendItem needs a parent before it lays out its entries
    # rows 0-3 of a PlotItem's grid hold the title, top axis, view and bottom axis
    plot.layout.addItem(legend, 4, 1, alignment=Qt.AlignmentFlag.AlignHCenter)
    plot.legend = legend  # curves plotted with a name join it, as with addLegend
    return legend


def add_legend_row(layout: pg.GraphicsLayout, row: int, colspan: int, curves,
                   text_size: str = "9pt", columns: int = 2) -> pg.LegendItem:
    """One legend for several plots of `layout`, in a row of its own under them: small plots have
    no corner to spare. `curves` are (item, name) pairs, `columns` a row (a legend wider than
    the plots would push them out of the panel)."""
    legend = pg.LegendItem(colCount=columns, **_legend_style(text_size))
    layout.addItem(legend, row=row, col=0, colspan=colspan)
    for item, name in curves:
        legend.addItem(item, name)
    return legend


def theme_text() -> str:
    """The theme's text colour, for text drawn into a plot."""
    return _palette_color(QPalette.ColorRole.Text, "black").name()


def theme_backdrop(alpha: int = 200) -> QColor:
    """The theme's background, mostly opaque: behind labels that sit on a plot's lines."""
    colour = _palette_color(QPalette.ColorRole.Base, "white")
    colour.setAlpha(alpha)
    return colour


THEME_COLOURS = {  # roles that plots and their exports read: background, text and their kin
    "light": {"Window": "#efefef", "WindowText": "#000000", "Base": "#ffffff",
              "AlternateBase": "#f5f5f5", "Text": "#000000", "Button": "#efefef",
              "ButtonText": "#000000", "ToolTipBase": "#ffffdc", "ToolTipText": "#000000"},
    "dark": {"Window": "#202124", "WindowText": "#e8eaed", "Base": "#17181a",
             "AlternateBase": "#26272a", "Text": "#e8eaed", "Button": "#2b2c2f",
             "ButtonText": "#e8eaed", "ToolTipBase": "#2b2c2f", "ToolTipText": "#e8eaed"},
}


def theme_palette(name: str) -> QPalette:
    """The light or dark palette `explorer export --theme` renders with (the app itself follows
    the system's)."""
    palette = QPalette()
    for role, colour in THEME_COLOURS[name].items():
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    return palette


def theme_grey() -> str:
    """A grey halfway between the theme's background and text: reference lines that read on light
    and dark themes alike."""
    text = _palette_color(QPalette.ColorRole.Text, "black")
    base = _palette_color(QPalette.ColorRole.Base, "white")
    mixed = [(a + b) // 2 for a, b in zip(text.getRgb()[:3], base.getRgb()[:3])]
    return QColor(*mixed).name()


def cache_axis_pixels(axis: pg.AxisItem) -> None:
    """Keep `axis`'s painted pixels (ticks, labels and, with showGrid, the grid across the plot)
    and blit them while the axis stays as it was: pyqtgraph replays the axis's picture (text and
    antialiased lines) at every repaint of its plot, a curve's new points included, which was half
    a training-curves repaint (benchmarks/RESULTS.md, soak). Every change to the axis (range,
    labels, size, pens) calls update(), which drops the pixels."""
    axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


class StepAxis(pg.AxisItem):
    """Decoding steps, whole ones only, counted from the root: the root (x = -1 in the tree's
    coordinates, before the first token) is step 0, labelled <bos>; the first token is step 1.
    Labels that would run together are thinned to every 2nd, 5th, 10th... step."""

    def __init__(self, orientation: str = "bottom", **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)
        # the root sits a fraction of a step from the left edge: let "<bos>" reach past it
        self.setStyle(hideOverlappingLabels=False)

    def tickValues(self, minVal: float, maxVal: float, size: float):
        metrics = QFontMetricsF(self.style["tickFont"] or QFont())
        room = metrics.horizontalAdvance("<bos>") + 2 * metrics.averageCharWidth()
        per_step = size / max(maxVal - minVal, 1e-9)
        stride = max(1, round(nice_step(room / per_step)))
        first = math.ceil((minVal + 1) / stride) * stride  # in steps counted from the root
        last = math.floor(maxVal + 1 - metrics.horizontalAdvance("00") / per_step)  # fits inside
        steps = range(max(first, 0), last + 1, stride)
        return [(stride, [step - 1.0 for step in steps])]

    def tickStrings(self, values, scale, spacing):
        return ["<bos>" if round(v) == -1 else str(round(v) + 1) for v in values]


class ViewPages(QWidget):
    """Pages of plots side by side, picked with tabs, so that each plot gets a readable size in a
    small dock. Every page stays shown and laid out at full size (StackAll only raises the chosen
    one), so a plot on a page behind still exports at its on-screen size."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tabs = QTabBar()
        self.tabs.setExpanding(False)
        self.stack = QStackedLayout()
        self.stack.setStackingMode(QStackedLayout.StackingMode.StackAll)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.tabs)
        layout.addLayout(self.stack, stretch=1)
        self.tabs.currentChanged.connect(self.stack.setCurrentIndex)

    def add_page(self, title: str, *views) -> QWidget:
        """A page of `views` side by side; a tuple of views shares one place (one is shown)."""
        page = QWidget()
        page.setAutoFillBackground(True)  # opaque: the pages behind it need no painting
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        for view in views:
            for widget in view if isinstance(view, tuple) else (view,):
                row.addWidget(widget, stretch=1)
        self.stack.addWidget(page)
        self.tabs.addTab(title)
        return page

    def show_page(self, index: int) -> None:
        self.tabs.setCurrentIndex(index)


def sized_font(point_size: float) -> QFont:
    font = QFont()
    font.setPointSizeF(point_size)
    return font


def nice_step(raw: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least `raw` (> 0)."""
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw * (1 - 1e-9):
            return factor * power
    return 10 * power


class ReadableAxis(pg.AxisItem):
    """A numeric axis whose tick labels never run together, however small the plot.

    pyqtgraph picks the number of ticks from the axis length alone, so a 100-pixel axis over 0..800
    prints "0 200400600". Here the major spacing is the smallest 1-2-5 step whose labels, measured
    in the tick font, fit with a gap; only that level carries text. A log axis is labelled at whole
    decades (every n-th when they do not fit), or at 1-2-5 within a span shorter than a decade,
    and its 2..9 ticks stay unlabelled: pyqtgraph labels all of them, on top of each other.
    A `whole` axis (training steps) has no ticks between whole numbers: a single point at step 0
    drew "-0.4 -0.2 0 0.2 0.4"."""

    def __init__(self, orientation: str, whole: bool = False, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self.whole = whole
        cache_axis_pixels(self)
        self.setStyle(maxTextLevel=0)
        self.enableAutoSIPrefix(False)  # "(x0.001)" beside a log axis only confuses

    def _label_room(self, values: list[float]) -> float:
        """Pixels one label needs along the axis, gap included."""
        metrics = QFontMetricsF(self.style["tickFont"] or QFont())
        if self.orientation in ("left", "right"):
            return 1.6 * metrics.height()
        if self.logMode:
            samples = ["10⁻¹⁰", "0.5"]
        else:
            spacing = max(abs(values[1] - values[0]), 1e-300)
            samples = self.tickStrings(values, 1.0, spacing)
        return max(metrics.horizontalAdvance(s) for s in samples) + 2 * metrics.averageCharWidth()

    def tickSpacing(self, minVal: float, maxVal: float, size: float):
        if self._tickSpacing is not None:
            return self._tickSpacing
        span = abs(maxVal - minVal)
        if span == 0 or size <= 0:
            return []
        # the widest label depends on the step (decimals), so measure with a first guess
        step = nice_step(span / max(size / 60.0, 1.0))
        room = self._label_room([minVal, minVal + step, maxVal])
        step = nice_step(span * room / size)
        if self.logMode or self.whole:
            step = max(1.0, round(step))  # whole decades, whole steps
        mantissa = round(step / 10.0 ** math.floor(math.log10(step)))
        minor = step / (4 if mantissa == 2 else 5)
        if self.whole and minor < 1:
            return [(step, 0)]
        return [(step, 0), (minor, 0)]

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        decades = [values for spacing, values in stdTicks if spacing >= 1.0][:1]
        if decades and len(decades[0]) >= 2:
            low, high = math.floor(minVal), math.ceil(maxVal)
            per_decade = size / max(maxVal - minVal, 1e-12)
            between = [d + math.log10(k) for d in range(low, high) for k in range(2, 10)
                       if minVal < d + math.log10(k) < maxVal] if per_decade > 40 else []
            return [(None, decades[0]), (None, between)]
        # less than two decades in view: label 1, 2 and 5 times the powers of ten
        low, high = math.floor(minVal), math.ceil(maxVal)
        labelled = [d + math.log10(k) for d in range(low, high + 1) for k in (1, 2, 5)
                    if minVal <= d + math.log10(k) <= maxVal]
        others = [d + math.log10(k) for d in range(low, high + 1) for k in (3, 4, 6, 7, 8, 9)
                  if minVal < d + math.log10(k) < maxVal]
        if len(labelled) >= 2:
            return [(None, labelled), (None, others)]
        # a sliver of a decade (0.0032 to 0.0043): round values, evenly spaced like a linear axis
        low_value, high_value = 10.0**minVal, 10.0**maxVal
        count = max(size / self._label_room([minVal, maxVal]), 2.0)
        step = nice_step((high_value - low_value) / count)
        values = np.arange(math.ceil(low_value / step) * step, high_value, step)
        return [(None, np.log10(values[values > 0]).tolist())]

    def logTickStrings(self, values, scale, spacing):
        """Powers of ten as pyqtgraph writes them (10⁻³); other values with the digits that tell
        them apart (pyqtgraph's one significant digit prints 0.0035 as "0.004")."""
        return [super(ReadableAxis, self).logTickStrings([v], scale, spacing)[0]
                if abs(v - round(v)) < 1e-9 else f"{10.0 ** v * scale:.3g}" for v in values]


class SteadyViewBox(pg.ViewBox):
    """A ViewBox whose auto-range moves in steps rather than with every new point.

    A live curve that grows at each redraw would otherwise move the range of both axes every time,
    and pyqtgraph regenerates an axis (ticks, labels, picture) whenever its range moves: most of
    the cost of a redraw, and a jittery read. Here the auto-range keeps its bounds while the data
    fit inside them and fill at least MIN_FILL of them; when the data leave them, the side that
    grew gets HEADROOM of the data's span to spare, and the other side fits the data again.
    `plan_x()` holds x bounds the data are known to grow into; `refit()` drops the headroom and
    the plan once the data stop growing."""

    HEADROOM = 0.25
    MIN_FILL = 0.5
    PIXEL_SLACK = 8

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._held: list[list[float] | None] = [None, None]  # per axis: the bounds handed out
        self._planned: list[float] | None = None  # x bounds the data will fill (a run's steps)

    def refit(self) -> None:
        """Fit the data exactly again (when they stop growing), headroom and plan gone."""
        self._held = [None, None]
        self._planned = None
        self.queueUpdateAutoRange()

    def plan_x(self, low: float, high: float) -> None:
        """The x bounds the data will grow into (a training run: its first to its last step):
        held from now on, so the x axis is laid out once for the run, not at every headroom."""
        self._planned = [float(low), float(high)]
        self.queueUpdateAutoRange()

    def childrenBounds(self, frac=None, orthoRange=(None, None), items=None):
        bounds = super().childrenBounds(frac=frac, orthoRange=orthoRange, items=items)
        if items is not None or any(r is not None for r in orthoRange):
            return bounds  # a query about some items, not the auto-range of the whole view
        return [self._steady(axis, data) for axis, data in enumerate(bounds)]

    def _steady(self, axis: int, data) -> list[float] | None:
        held = self._held[axis]
        if data is None:
            self._held[axis] = None
            return None
        low, high = data
        # the bounds include the symbols' padding in pixels, which grows with the range: a few
        # pixels past the held (or planned) bounds is not data leaving them
        slack = self.PIXEL_SLACK * self.viewPixelSize()[axis]
        planned = self._planned
        if axis == 0 and planned is not None and planned[0] - slack <= low and high <= planned[1] + slack:
            self._held[axis] = list(planned)
            return list(planned)
        if high - low <= 1e-9 * abs(low) and low != 0:
            # a constant (a fixed learning rate): ±10% around its value, where pyqtgraph's ±0.5
            # drew 0.001 as a flat line on an axis whose only tick read "0"
            low, high = low - 0.1 * abs(low), high + 0.1 * abs(high)
        span = high - low
        below = held is not None and low < held[0] - slack
        above = held is not None and high > held[1] + slack
        if held is not None and not below and not above \
                and span >= self.MIN_FILL * (held[1] - held[0]):
            return list(held)
        spare = self.HEADROOM * span
        held = [low - spare if below else low, high + spare if above else high]
        self._held[axis] = held
        return list(held)


def readable_axes(*sides: str, whole: tuple[str, ...] = ()) -> dict[str, ReadableAxis]:
    """axisItems for a PlotItem/PlotWidget: a ReadableAxis on each of `sides`, those in `whole`
    ticked at whole numbers only (training steps)."""
    return {side: ReadableAxis(side, whole=side in whole) for side in sides}


TOKEN_FONT_SIZES = (11, 10, 9, 8, 7)  # tried largest first; thinning starts below the smallest


class TokenAxis(pg.AxisItem):
    """An axis with one text label per integer position: tokens, or row and column numbers.

    Each time it is drawn it fits the labels to its current length in pixels: the largest font
    size at which every visible label fits, and only when even the smallest size does not, every
    n-th label, n as small as possible (a round 1-2-5 step for numbers). Zooming in shows them all.
    """

    def __init__(self, orientation: str, font_sizes=TOKEN_FONT_SIZES, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        cache_axis_pixels(self)
        self.enableAutoSIPrefix(False)  # ticks are labels, not quantities
        self.font_sizes = font_sizes
        self.labels: list[str] = []
        self.numeric = True
        self.stride = 1
        self._room: dict[float, float] = {}  # font size -> pixels one label needs along the axis

    def set_labels(self, labels, numeric: bool = False) -> None:
        """Label position i with labels[i]; `numeric` labels (indices) thin to round steps."""
        self.labels = [str(label) for label in labels]
        self.numeric = numeric
        self._room.clear()
        self.picture = None
        self.update()

    def label_room(self, point_size: float) -> float:
        if point_size not in self._room:
            metrics = QFontMetricsF(sized_font(point_size))
            if self.orientation in ("left", "right"):
                room = 0.8 * metrics.height() + 1  # pyqtgraph draws text in 0.8 of the line height
            else:
                widest = max((metrics.horizontalAdvance(label) for label in self.labels),
                             default=0.0)
                room = widest + metrics.averageCharWidth()  # a space between neighbours
            self._room[point_size] = room
        return self._room[point_size]

    def fit(self, pixels_per_label: float) -> tuple[float, int]:
        """(font size, stride) for labels `pixels_per_label` apart."""
        for size in self.font_sizes:
            if self.label_room(size) <= pixels_per_label:
                return size, 1
        smallest = self.font_sizes[-1]
        stride = math.ceil(self.label_room(smallest) / max(pixels_per_label, 1e-6))
        return smallest, int(nice_step(stride)) if self.numeric else stride

    def generateDrawSpecs(self, p):
        if self.labels:
            length = self.geometry().height() if self.orientation in ("left", "right") \
                else self.geometry().width()
            span = abs(self.range[1] - self.range[0]) or 1.0
            size, self.stride = self.fit(length / span)
            self.style["tickFont"] = sized_font(size)  # drawPicture draws with the same font
            p.setFont(self.style["tickFont"])
        return super().generateDrawSpecs(p)

    def tickValues(self, minVal: float, maxVal: float, size: float):
        if not self.labels:
            return super().tickValues(minVal, maxVal, size)
        low, high = sorted((minVal, maxVal))
        first = max(0, math.ceil(low))
        first = math.ceil(first / self.stride) * self.stride
        last = min(len(self.labels) - 1, math.floor(high))
        return [(self.stride, list(range(first, last + 1, self.stride)))]

    def tickStrings(self, values, scale, spacing):
        if not self.labels:
            return super().tickStrings(values, scale, spacing)
        return [self.labels[int(round(v))] for v in values]


def drawn_labels(axis: pg.AxisItem) -> list[str]:
    """The tick labels `axis` draws at its current size: what a viewer can read."""
    picture = QPicture()
    painter = QPainter(picture)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in specs[2]] if specs else []
