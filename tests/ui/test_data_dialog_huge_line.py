"""The data dialog previews a file with one huge line without laying it out: each cell and the
token line show its first PREVIEW_CHARS characters (a 20 MB label took gigabytes)."""

from __future__ import annotations


def test_a_huge_line_is_previewed_clipped(qtbot, isolated_settings, tmp_path):
    from explorer.ui.dialogs.data import PREVIEW_CHARS, DataDialog

    path = tmp_path / "one-line.txt"
    path.write_text("to be or not " * 100_000 + "\n", encoding="utf-8")  # 1.3 MB, one line
    dialog = DataDialog(files=[str(path)])
    qtbot.addWidget(dialog)
    cell = dialog.preview.item(0, 0).text()
    assert len(cell) == PREVIEW_CHARS + 1 and cell.endswith("…")
    assert cell[:-1] == ("to be or not " * 100)[:PREVIEW_CHARS]
    # the char tokenizer's tokens of the clipped text, joined by " │ "
    assert dialog.tokens.text().count(" │ ") == PREVIEW_CHARS  # 201 tokens, the ellipsis one of them
    assert dialog.description.text() == "1 lines read"
