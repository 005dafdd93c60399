"""Every panel of the main window, in dock order: (PANEL_ID, "module:Class")."""

PANELS = (
    ("curves", "explorer.ui.panels.curves:TrainingCurvesPanel"),
    ("bleu", "explorer.ui.panels.bleu:BleuPanel"),
    ("attention", "explorer.ui.panels.attention:AttentionPanel"),
    ("positional", "explorer.ui.panels.positional:PositionalPanel"),
    ("gradients", "explorer.ui.panels.gradients:GradientFlowPanel"),
    ("beam", "explorer.ui.panels.beam_tree:BeamTreePanel"),
    ("step", "explorer.ui.panels.step_decoding:StepDecodingPanel"),
    ("compare", "explorer.ui.panels.compare:ComparePanel"),
    ("hidden", "explorer.ui.panels.hidden:HiddenPanel"),  # its dock also shows the gates
    ("embeddings", "explorer.ui.panels.embeddings:EmbeddingsPanel"),
)
# Panels `explorer export --plots` renders that have no dock of their own.
EXPORT_ONLY_PANELS = (("gates", "explorer.ui.panels.hidden:GatesPanel"),)


def panel_class(spec: str):
    import importlib

    module_name, class_name = spec.split(":")
    return getattr(importlib.import_module(module_name), class_name)
