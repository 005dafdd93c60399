"""The panel registry: every panel of the app, in dock order. Plain data, no Qt, so the core (the
command line, lessons) can name panels; explorer.ui.panels re-exports it and imports the classes.

Adding a panel = its own module (a `Panel` subclass, explorer/ui/panels/base.py) + one line here;
a panel that draws live data while training names its Qt-free function in the line (`live`).
The main window builds one dock per entry and places it by its group; `explorer export --plots`
accepts every id and exports the `exported_by_default` ones when no --plots is given.

An entry names its class as "module:Class" and carries its dock group itself because the window
builds and places the docks before its first paint, while the panel modules (pyqtgraph, torch)
are imported only after it.
"""

from __future__ import annotations

from dataclasses import dataclass

# dock group -> where the default layout puts it (explorer/ui/dock_layout.py)
DOCK_GROUPS = {
    "training": "left, beside the training controls, one above the other",
    "inspect": "right, top: tabbed",
    "decoding": "right, below the inspect group: tabbed",
}


@dataclass(frozen=True)
class PanelEntry:
    panel_id: str  # the class's PANEL_ID: dock objectName, export file prefix, --plots name
    spec: str  # "module:Class"
    group: str  # a DOCK_GROUPS key
    tab: str = ""  # the dock's short title: fourteen tabs read whole in a 1280 px window
    exported_by_default: bool = True  # in `explorer export` without --plots
    # "module:function(HeadlessInput) -> {name: (header, rows)}": the panel's tables computed
    # without Qt (explorer/export/headless.py), so `explorer export --format csv` of it builds no
    # panel ("": the panel computes them)
    tables: str = ""
    # "module:function(model, encoded, step) -> plain data" (encoded: analysis.probe.Encoded, the
    # probe input as the model reads it): what the panel needs live, Qt-free, run by every probe
    # while the panel is in sight, throttled with it; the panel reads `ProbeSnapshot.live[id]`
    live: str = ""
    # what the panel reads in a model, for `explorer check` (explorer/usermodel/check.py): one of
    # NEEDS ("": nothing a model can lack)
    needs: str = ""


# references: a seq2seq's validation pairs; attention / self-attention: weights the capture
# records; states / gates: a recurrent or Transformer block's (an LSTM's or GRU's gates);
# embedding: the token embedding; every-position: the embedding and logits at every position
NEEDS = ("", "references", "attention", "self-attention", "states", "gates", "embedding",
         "every-position")

_HEADLESS = "explorer.export.headless:"
PANELS = (
    PanelEntry("curves", "explorer.ui.panels.curves:TrainingCurvesPanel", "training", "Curves",
               tables=_HEADLESS + "curves_tables"),
    PanelEntry("bleu", "explorer.ui.panels.bleu:BleuPanel", "training", "BLEU",
               tables=_HEADLESS + "bleu_panel_tables", needs="references"),
    PanelEntry("attention", "explorer.ui.panels.attention:AttentionPanel", "inspect", "Attention",
               tables=_HEADLESS + "attention_tables", needs="attention"),
    PanelEntry("positional", "explorer.ui.panels.positional:PositionalPanel", "inspect", "Positions",
               tables=_HEADLESS + "positional_panel_tables", needs="embedding"),
    PanelEntry("gradients", "explorer.ui.panels.gradients:GradientFlowPanel", "inspect", "Gradients",
               tables=_HEADLESS + "gradients_tables", needs="embedding"),
    # beside the attention; not in a plain `explorer export` (integrated gradients takes a while)
    PanelEntry("attribution", "explorer.ui.panels.attribution:AttributionPanel", "inspect", "Attribution",
               exported_by_default=False, tables=_HEADLESS + "attribution_panel_tables",
               needs="every-position"),
    PanelEntry("ablation", "explorer.ui.panels.ablation:AblationPanel", "inspect", "Ablation",
               exported_by_default=False, needs="attention"),
    PanelEntry("beam", "explorer.ui.panels.beam_tree:BeamTreePanel", "decoding", "Beam",
               tables=_HEADLESS + "beam_tables"),
    PanelEntry("step", "explorer.ui.panels.step_decoding:StepDecodingPanel", "decoding", "Step", False),
    PanelEntry("compare", "explorer.ui.panels.compare:ComparePanel", "decoding", "Compare", False,
               tables=_HEADLESS + "compare_panel_tables"),
    PanelEntry("hidden", "explorer.ui.panels.hidden:HiddenPanel", "inspect", "Hidden",  # its dock shows gates too
               tables=_HEADLESS + "hidden_panel_tables", needs="states"),
    PanelEntry("embeddings", "explorer.ui.panels.embeddings:EmbeddingsPanel", "inspect", "Embeddings",
               tables=_HEADLESS + "embeddings_tables", live="explorer.ui.panels.embeddings:live_matrices",
               needs="embedding"),
    PanelEntry("embedding_norms", "explorer.ui.panels.embedding_norms:EmbeddingNormsPanel", "inspect",
               "Norms", live="explorer.ui.panels.embedding_norms:token_norms", needs="embedding"),
    PanelEntry("runs", "explorer.ui.panels.runs:RunsPanel", "inspect", "Runs", False,  # Compare runs
               tables=_HEADLESS + "runs_tables"),
    PanelEntry("examples", "explorer.ui.panels.examples:ExamplesPanel", "decoding", "Examples", False),
    PanelEntry("whatif", "explorer.ui.panels.whatif:WhatIfPanel", "decoding", "What if", False),
    PanelEntry("architecture", "explorer.ui.panels.architecture:ArchitecturePanel", "inspect", "Diagram",
               exported_by_default=False, tables=_HEADLESS + "architecture_tables"),
)
# Panels `explorer export --plots` renders that have no dock of their own (group "").
EXPORT_ONLY_PANELS = (
    PanelEntry("gates", "explorer.ui.panels.hidden:GatesPanel", "", "Gates", False,
               tables=_HEADLESS + "gates_tables", needs="gates"),
    PanelEntry("rollout", "explorer.ui.panels.attribution:RolloutPanel", "", "Rollout", False,
               tables=_HEADLESS + "rollout_tables", needs="self-attention"),
    PanelEntry("length", "explorer.ui.panels.examples:LengthPanel", "", "Length", False),
)


def panel_ids() -> list[str]:
    return [entry.panel_id for entry in PANELS]


def export_ids() -> list[str]:
    """Every id `explorer export --plots` accepts: the docked panels and the export-only ones."""
    return [entry.panel_id for entry in PANELS + EXPORT_ONLY_PANELS]


def find_panel(panel_id: str) -> PanelEntry | None:
    return next((entry for entry in PANELS + EXPORT_ONLY_PANELS if entry.panel_id == panel_id), None)
