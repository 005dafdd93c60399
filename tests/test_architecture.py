"""The architecture's contract, checked on the source: Qt is imported in explorer/ui/ only, and
seqmodels/ is pure PyTorch (no Qt, nothing from explorer/, no file I/O)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QT_PACKAGES = {"PySide6", "shiboken6", "pyqtgraph", "superqt"}


def imported_packages(path: Path) -> set[str]:
    """Top-level package names of every import in the file, lazy (inside functions) ones included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def core_modules():
    ui = ROOT / "explorer" / "ui"
    return [p for folder in ("explorer", "seqmodels") for p in sorted((ROOT / folder).rglob("*.py"))
            if ui not in p.parents]


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_qt_is_imported_in_explorer_ui_only(path):
    assert not imported_packages(path) & QT_PACKAGES


@pytest.mark.parametrize("path", sorted((ROOT / "seqmodels").rglob("*.py")), ids=lambda p: p.name)
def test_models_are_pure_pytorch(path):
    assert "explorer" not in imported_packages(path)
    calls = {node.func.id for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "open" not in calls


def test_no_panel_imports_another_panel():
    """Panels hold no data source: what they show comes on the bus, so none imports another (the
    shared widget modules in explorer/ui/panels/ are no panels)."""
    from explorer.ui.panels import PANELS

    panel_modules = {entry.spec.split(":")[0] for entry in PANELS}
    for module in sorted(panel_modules):
        path = ROOT / (module.replace(".", "/") + ".py")
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        assert not imported & (panel_modules - {module}), f"{module} imports another panel"


def test_every_registered_panel_declares_its_id_and_group():
    from explorer.ui.panels import DOCK_GROUPS, PANELS, panel_class

    assert len({entry.panel_id for entry in PANELS}) == len(PANELS)
    for entry in PANELS:
        assert entry.group in DOCK_GROUPS
        assert panel_class(entry).PANEL_ID == entry.panel_id
