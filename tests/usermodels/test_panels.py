"""Every exported panel, headless (the export path), on user models as written: each draws, or says
in one line why it has nothing to draw."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.usermodel.loader import open_model_file

HERE = Path(__file__).parent
CASES = {"lstm_mha.py:build": "a b c", "bahdanau.py:build": "a b c",
         "gpt/build.py:build": "abc de", "more_models.py:build_lstm": "abc de"}


@pytest.mark.parametrize("build", sorted(CASES))
def test_every_panel_draws_or_says_why_not(build, qapp, tmp_path, capsys):
    from explorer.commands.export import DEFAULT_PLOTS
    from explorer.ui.headless_export import render_panels
    from explorer.ui.panels import find_panel

    workspace = open_model_file(f"{HERE / build}")
    entries = [find_panel(p) for p in DEFAULT_PLOTS]
    written = render_panels(workspace, entries, tmp_path, ("csv",), source=CASES[build],
                            timeout_s=60)
    said = capsys.readouterr().err.splitlines()
    for entry in entries:
        drew = any(path.name.startswith(f"{entry.panel_id}_") for path in written)
        skipped = [line for line in said if line.startswith(f"explorer export: {entry.panel_id}: ")]
        assert drew or skipped, entry.panel_id
    assert "Traceback" not in "\n".join(said)
    if "gpt" in build or "mha" in build or "bahdanau" in build:
        assert any(path.name.startswith("attention_") for path in written)
