"""The decoding settings form the beam tree, step-through and compare panels share: one spin box
per `explorer.decoding.settings.DecodeSettings` field a panel asks for, with the same labels,
tooltips, limits and defaults everywhere."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QWidget

from explorer.decoding.settings import LIMITS, DecodeSettings
from explorer.ui.panels.decoding_widgets import spin_box

# field -> (label, tooltip, single step of a decimal box)
FIELDS = {
    "beam_size": ("Beam width", "Beam width k: hypotheses kept at every step (1 = greedy)", None),
    "alpha": ("Length penalty α", "Length penalty α: hypotheses are ranked by "
              "log p / ((5+|Y|)/6)^α (0 = plain log p)", 0.1),
    "max_len": ("Max length", "Maximum output length in tokens", None),
    "nbest": ("N-best", "How many of the best finished hypotheses to number", None),
    "temperature": ("Temperature", "Temperature: < 1 sharpens, > 1 flattens the distribution", 0.1),
    "top_k": ("Top-k", "Top-k: sample among the k most probable tokens (0 = all)", None),
    "top_p": ("Top-p", "Top-p (nucleus): the smallest set of tokens whose probability reaches p",
              0.05),
    "seed": ("Seed", "Random seed: the same seed replays the same samples", None),
}


SHORT_LABELS = {"beam_size": "Width", "alpha": "α"}  # for a row with many fields


class DecodeSettingsForm(QWidget):
    """A row of labelled spin boxes for `fields`; `settings()` reads them as a DecodeSettings
    (fields not shown keep their defaults). `changed` fires once typing in a box is finished.
    `short` labels keep a row of many fields narrow (the tooltips say it in full)."""

    changed = Signal()

    def __init__(self, fields: tuple[str, ...], short: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        defaults = DecodeSettings()
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.boxes: dict[str, QSpinBox | QDoubleSpinBox] = {}
        self.captions: dict[str, QLabel] = {}
        for name in fields:
            label, tip, step = FIELDS[name]
            value = getattr(defaults, name)
            kind = QDoubleSpinBox if isinstance(value, float) else QSpinBox
            box = spin_box(kind, LIMITS[name], value, tip, step)
            box.valueChanged.connect(lambda _: self.changed.emit())
            caption = QLabel(SHORT_LABELS.get(name, label) if short else label)
            caption.setToolTip(tip)
            row.addWidget(caption)
            row.addWidget(box)
            self.boxes[name], self.captions[name] = box, caption
        if "beam_size" in self.boxes and "nbest" in self.boxes:  # n-best of at most k hypotheses
            self.boxes["beam_size"].valueChanged.connect(self.boxes["nbest"].setMaximum)
            self.boxes["nbest"].setMaximum(self.boxes["beam_size"].value())

    def settings(self) -> DecodeSettings:
        return DecodeSettings(**{name: box.value() for name, box in self.boxes.items()})

    def set_values(self, **values) -> None:
        """Set boxes without a `changed` signal (the caller decodes with them itself)."""
        for name, value in values.items():
            box = self.boxes[name]
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)
        if "beam_size" in values and "nbest" in self.boxes:
            self.boxes["nbest"].setMaximum(values["beam_size"])

    def show_only(self, names) -> None:
        """Show the boxes of `names` and hide the others (e.g. per decoding strategy)."""
        for name, box in self.boxes.items():
            box.setVisible(name in names)
            self.captions[name].setVisible(name in names)
