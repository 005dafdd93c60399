"""The app's "Export" into a folder that holds an earlier export's files says how many it
replaced, as `explorer export` does."""

from __future__ import annotations


def test_exporting_twice_says_how_many_files_were_replaced(make_main_window, qtbot, tmp_path):
    window = make_main_window()
    window.show()
    qtbot.waitExposed(window)
    folder = tmp_path / "export"
    first = window.export_panels(["curves"], str(folder))
    assert first
    assert window.statusBar().currentMessage() == f"Exported {len(first)} files to {folder}"
    (folder / "mine.txt").write_text("kept\n")  # a file of another name is no business of it
    second = window.export_panels(["curves"], str(folder))
    assert sorted(second) == sorted(first)
    assert window.statusBar().currentMessage() == (
        f"Exported {len(second)} files to {folder}; replaced {len(second)} existing files in "
        f"{folder}")
    assert (folder / "mine.txt").read_text() == "kept\n"
