"""Presentation mode's scaling: every font and line under a widget made `zoom` times larger, and
kept so while the panel redraws.

A panel sets its sizes in many ways: pyqtgraph axis tick fonts and label styles (CSS in HTML),
plot titles and legend entries (LabelItem sizes), TextItems in a plot (the beam tree's tokens, the
architecture diagram's blocks), fixed axis widths measured in the normal font, pens, widget fonts
set explicitly and style sheets with a font-size; and what is drawn at a fixed size beside text:
check box indicators (a style sheet rule, QCheckBox::indicator) and scatter markers (the beam
tree's nodes). `Scaling` reconciles each of those properties:
a pass sets the scaled value where the property does not hold it (the panel set it anew, or the
item is new), remembering the panel's own value; `undo()` puts the panel's values back where the
scaled ones are still in place. Passes repeat while presenting, so live redraws stay scaled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
    QGraphicsView,
    QHeaderView,
    QStyle,
    QTableView,
    QWidget,
)

HIGH_CONTRAST_MAP = "inferno"  # dark to bright yellow: readable on a projector
MIN_TICK_PT = 8.0  # pyqtgraph's tiny default tick font grows from at least this
SIZE_RESOLVED = 0x2  # QFont::SizeResolved (PySide6 does not export the enum)
_CSS_SIZE = re.compile(r"(font-size:\s*)([\d.]+)(pt|px)")
_INDICATOR = re.compile(r" ?QCheckBox::indicator \{ width: \d+px; height: \d+px; \}")  # indicator_css's


def scaled_css(text: str, zoom: float) -> str:
    """Every `font-size: N pt|px` in a style sheet, `zoom` times larger."""
    return _CSS_SIZE.sub(lambda m: f"{m[1]}{float(m[2]) * zoom:g}{m[3]}", text)


def indicator_css(checkbox: QCheckBox, css: str, zoom: float) -> str:
    """A check box's style sheet with its indicator (a fixed pixel size in the style) `zoom` times
    larger; its other rules as they were."""
    style = checkbox.style()
    width = style.pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, checkbox)
    height = style.pixelMetric(QStyle.PixelMetric.PM_IndicatorHeight, None, checkbox)
    rule = f"QCheckBox::indicator {{ width: {round(width * zoom)}px; height: {round(height * zoom)}px; }}"
    return f"{css} {rule}" if css else rule


def scaled_size(size: str | None, zoom: float) -> str:
    """A CSS size ("11pt", "14px"; None: the application's font size) `zoom` times larger."""
    size = size or f"{QApplication.instance().font().pointSizeF():g}pt"
    return scaled_css(f"font-size: {size}", zoom).split(": ", 1)[1]


def scaled_font(font: QFont, zoom: float, floor: float = 0.0) -> QFont:
    bigger = QFont(font)
    if font.pointSizeF() > 0:
        bigger.setPointSizeF(max(font.pointSizeF(), floor) * zoom)
    else:  # a pixel-sized font
        bigger.setPixelSize(round(font.pixelSize() * zoom))
    return bigger


def scaled_pen(pen, zoom: float):
    old = pg.mkPen(pen)
    wide = pg.mkPen(old)
    wide.setWidthF(max(old.widthF(), 1.0) * zoom)
    wide.setCosmetic(old.isCosmetic() or old.widthF() == 0)  # pixels, not data units
    return wide


@dataclass
class _Property:
    """One scalable property of one object: how to read it, scale it and write it back."""
    get: Callable[[], object]
    set: Callable[[object], None]
    scale: Callable[[object], object]
    same: Callable[[object, object], bool] = lambda a, b: a == b


class Scaling:
    def __init__(self, root: QWidget, zoom: float) -> None:
        self.root = root
        self.zoom = zoom
        self._held: dict[tuple[int, str], tuple[object, _Property, object, object]] = {}
        # minimum sizes a panel computes from its fonts (a cell tall enough for its text) are
        # recomputed on the screen: the dock gets the ones from before back
        self._minimum_sizes = {widget: widget.minimumSize()
                               for widget in [root, *root.findChildren(QWidget)]}
        self._map = pg.colormap.get(HIGH_CONTRAST_MAP)
        self._lut = self._map.getLookupTable(nPts=256)

    # -- passes -----------------------------------------------------------------------------------

    def apply(self) -> int:
        """Scale what is not scaled (new items, values the panel set anew); returns how many."""
        changed = 0
        for owner, name, prop in self._properties():
            key = (id(owner), name)
            current = prop.get()
            held = self._held.get(key)
            if held is not None and held[0] is owner and prop.same(current, held[3]):
                continue  # still ours
            scaled = prop.scale(current)
            prop.set(scaled)
            self._held[key] = (owner, prop, current, prop.get())
            changed += 1
        return changed

    def undo(self) -> None:
        """The panel's own values back wherever the scaled ones are still in place."""
        for owner, prop, original, scaled in reversed(list(self._held.values())):
            if _alive(owner) and prop.same(prop.get(), scaled):
                prop.set(original)
        self._held.clear()
        for widget, size in self._minimum_sizes.items():
            if _alive(widget) and widget.minimumSize() != size:
                widget.setMinimumSize(size)

    # -- what scales ------------------------------------------------------------------------------

    def _properties(self) -> Iterator[tuple[object, str, _Property]]:
        widgets = [self.root, *self.root.findChildren(QWidget)]
        for widget in widgets:
            if not widget.isVisibleTo(self.root) and widget is not self.root:
                continue
            yield from self._widget_properties(widget)
            if isinstance(widget, QGraphicsView) and widget.scene() is not None:
                items = widget.scene().items()
                linked = {id(image()) for bar in items if isinstance(bar, pg.ColorBarItem)
                          for image in bar.img_list if image() is not None}
                for item in items:
                    yield from self._item_properties(item, linked)

    def _widget_properties(self, widget: QWidget):
        zoom = self.zoom
        css = _INDICATOR.sub("", widget.styleSheet())  # the panel's own rules
        checkbox = isinstance(widget, QCheckBox)
        if "font-size" in css or checkbox:
            def scale(sheet, w=widget):
                sheet = scaled_css(sheet, zoom)
                return indicator_css(w, sheet, zoom) if checkbox else sheet

            yield widget, "css", _Property(widget.styleSheet, widget.setStyleSheet, scale)
        if "font-size" not in css and widget is not self.root and (css or (
                widget.testAttribute(Qt.WidgetAttribute.WA_SetFont)
                and widget.font().resolveMask() & SIZE_RESOLVED)):
            # an explicit size, or a style sheet's font (taken once from the application's), does
            # not follow the presentation window's font
            yield widget, "font", _Property(widget.font, widget.setFont,
                                            lambda f: scaled_font(f, zoom))
        if isinstance(widget, QTableView):
            yield from self._row_properties(widget.verticalHeader())

    def _row_properties(self, header: QHeaderView):
        """A table's rows: its default row height (a set height does not follow the font) and the
        heights of rows fitted to their contents, which the panel fits again only when it
        refills. Rows the panel adds or fits while presenting take the scaled default or the
        scaled font: the property stays ours while the default is the scaled one."""
        zoom = self.zoom

        def get(h=header):
            default = h.defaultSectionSize()
            uniform = h.length() == h.count() * default  # the usual case: no row to read
            return default, None if uniform else tuple(map(h.sectionSize, range(h.count())))

        def set_rows(value, h=header):
            default, sizes = value
            h.setDefaultSectionSize(default)  # every row takes it
            for row, size in enumerate(sizes or ()):
                if row < h.count():
                    h.resizeSection(row, size)

        def scale(value):
            default, sizes = value
            return round(default * zoom), sizes and tuple(round(size * zoom) for size in sizes)

        yield header, "rows", _Property(get, set_rows, scale, same=lambda a, b: a[0] == b[0])

    def _item_properties(self, item: QGraphicsItem, linked: set[int]):
        zoom = self.zoom
        if isinstance(item, pg.AxisItem):
            yield from self._axis_properties(item)
        elif isinstance(item, pg.LabelItem) and item.text:
            def set_size(size, label=item):
                if size is None:
                    label.opts.pop("size", None)
                label.setText(label.text, **({} if size is None else {"size": size}))

            yield item, "size", _Property(lambda: item.opts.get("size"), set_size,
                                          lambda s: scaled_size(s, zoom))
        elif isinstance(item, pg.TextItem):
            yield item, "font", _Property(item.textItem.font, item.setFont,
                                          lambda f: scaled_font(f, zoom))
        elif isinstance(item, (QGraphicsTextItem, QGraphicsSimpleTextItem)) and not isinstance(
                item.parentItem(), (pg.AxisItem, pg.LabelItem, pg.TextItem)):
            yield item, "font", _Property(item.font, item.setFont, lambda f: scaled_font(f, zoom))
        elif isinstance(item, pg.PlotDataItem) or (
                isinstance(item, pg.PlotCurveItem) and not isinstance(item.parentItem(), pg.PlotDataItem)):
            if item.opts.get("pen") is not None:
                yield item, "pen", _Property(lambda: pg.mkPen(item.opts["pen"]), item.setPen,
                                             lambda p: scaled_pen(p, zoom))
        elif isinstance(item, pg.InfiniteLine):  # its pen is an attribute
            yield item, "pen", _Property(lambda: pg.mkPen(item.pen), item.setPen,
                                         lambda p: scaled_pen(p, zoom))
        elif isinstance(item, (QGraphicsRectItem, QGraphicsLineItem, QGraphicsPathItem)):
            yield item, "pen", _Property(lambda: pg.mkPen(item.pen()), item.setPen,
                                         lambda p: scaled_pen(p, zoom))
        elif isinstance(item, pg.ScatterPlotItem) and not isinstance(item.parentItem(), pg.PlotDataItem):
            # markers of the default size (the beam tree's nodes); a PlotDataItem sets its own
            if isinstance(item.opts["size"], (int, float)):
                yield item, "size", _Property(lambda: item.opts["size"], item.setSize,
                                              lambda size: size * zoom)
        elif isinstance(item, pg.ColorBarItem):
            yield item, "map", _Property(item.colorMap, item.setColorMap, lambda _m: self._map,
                                         same=lambda a, b: a is b)
        elif isinstance(item, pg.ImageItem) and id(item) not in linked:
            yield item, "lut", _Property(lambda: item.lut, item.setLookupTable,
                                         lambda _l: self._lut, same=lambda a, b: a is b)

    def _axis_properties(self, axis: pg.AxisItem):
        zoom = self.zoom
        sizes = getattr(axis, "font_sizes", None)
        if sizes:  # plot_style.TokenAxis picks the largest of its sizes that fits, at every draw
            def set_sizes(value, a=axis):
                a.font_sizes = value
                _refit(a)
            yield axis, "sizes", _Property(lambda: axis.font_sizes, set_sizes,
                                           lambda s: tuple(v * zoom for v in s))
        if not (sizes and axis.labels):  # without labels it draws numbers in its tick font
            base = QApplication.instance().font()

            def set_tick(font, a=axis):
                a.setStyle(tickFont=font)
                _refit(a)
            yield axis, "tick", _Property(lambda: axis.style.get("tickFont"), set_tick,
                                          lambda f: scaled_font(f or base, zoom, MIN_TICK_PT))
        if axis.labelText or axis.labelUnits:
            def set_style(style, a=axis):
                a.labelStyle = style
                a._updateLabel()
            yield axis, "label", _Property(
                lambda: dict(axis.labelStyle), set_style,
                lambda s: {**s, "font-size": scaled_size(s.get("font-size"), zoom)})
        # widths and heights set in the normal font: room for the larger labels
        if axis.orientation in ("left", "right") and axis.fixedWidth is not None:
            yield axis, "width", _Property(lambda: axis.fixedWidth, axis.setWidth,
                                           lambda w: round(w * zoom))
        if axis.orientation in ("top", "bottom") and axis.fixedHeight is not None:
            yield axis, "height", _Property(lambda: axis.fixedHeight, axis.setHeight,
                                            lambda h: round(h * zoom))


def _refit(axis: pg.AxisItem) -> None:
    """Make room for the axis's labels at its new font size."""
    if hasattr(axis, "_room"):
        axis._room.clear()  # plot_style.TokenAxis caches label widths per font size
    axis._adjustSize()
    axis.picture = None
    axis.update()


def _alive(owner) -> bool:
    return shiboken6.isValid(owner)
