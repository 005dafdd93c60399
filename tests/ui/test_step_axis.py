"""The beam tree's step axis: whole steps only, the root at step 0 labelled <bos>."""

import pyqtgraph as pg

from explorer.ui.plot_style import StepAxis, drawn_labels


def test_steps_are_whole_and_the_root_is_bos(qtbot):
    widget = pg.PlotWidget(axisItems={"bottom": StepAxis("bottom")})
    qtbot.addWidget(widget)
    widget.resize(900, 300)
    widget.show()
    widget.setXRange(-1.3, 12, padding=0)  # the tree's own range: the root sits at x = -1
    qtbot.waitUntil(lambda: widget.grab() and bool(drawn_labels(widget.getPlotItem().getAxis("bottom"))))
    labels = drawn_labels(widget.getPlotItem().getAxis("bottom"))
    assert labels[0] == "<bos>"
    assert labels[1:] == [str(step) for step in range(1, 13)]  # 13, at the very edge, would be cut
    widget.resize(200, 300)  # too narrow for every step: whole steps still, fewer of them
    qtbot.waitUntil(lambda: widget.grab() and len(drawn_labels(widget.getPlotItem().getAxis("bottom"))) < 14)
    labels = drawn_labels(widget.getPlotItem().getAxis("bottom"))
    assert all(label == "<bos>" or label.isdigit() for label in labels) and len(labels) >= 2
