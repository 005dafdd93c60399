"""Registries are read, not listed: no module of explorer/ or seqmodels/ writes out the names of a
registry again (cells, attention scores, panels, families), so one entry is one line.

The rule, checked on the source with ast, meant to catch copies and nothing else:
* a literal tuple, list or set, or the keys of a literal dict, holding three or more names of one
  registry, outside that registry's own modules;
* a string holding three or more cell names as words ("rnn, gru, lstm" in help text or a
  tooltip). Cell names are distinctive; panel ids and score names are English words ("step",
  "dot"), so text is not searched for them.
Two names may stand side by side (a default and its alternative); a third is a list.
"""

import ast
import re
from pathlib import Path

import pytest

from explorer.families import family_names
from explorer.panel_registry import export_ids
from seqmodels.cells import cell_names
from seqmodels.scores import SCORES

ROOT = Path(__file__).resolve().parent.parent
# registry -> the modules that are it (or hold its entries), where its names belong
OWN_MODULES = {
    "cells": {"seqmodels/cells.py",
              # FUSED_KERNELS / CUDNN_MODES: the three cells torch has fused kernels for, a fact
              # about torch (a registered cell without one runs step by step)
              "seqmodels/recurrent.py"},
    "scores": {"seqmodels/scores.py"},
    "panels": {"explorer/panel_registry.py"},
    # the entry files of tests/test_no_model_kind_branches.py
    "families": {"explorer/families.py", "explorer/hf/families.py", "explorer/hf/architectures.py",
                 "explorer/usermodel/families.py"},
}


def registries() -> dict[str, set[str]]:
    return {"cells": set(cell_names()), "scores": set(SCORES), "panels": set(export_ids()),
            "families": set(family_names())}


def listed_names(tree: ast.AST, names: dict[str, set[str]]):
    """(registry, line, names) for every literal collection or string that writes out 3+ names."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            strings = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            for registry, known in names.items():
                if len(strings & known) >= 3:
                    yield registry, node.lineno, sorted(strings & known)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = set(re.findall(r"[a-z][a-z0-9-]*[a-z0-9]", node.value))
            if len(words & names["cells"]) >= 3:
                yield "cells", node.lineno, sorted(words & names["cells"])


def test_no_module_writes_out_a_registry():
    names = registries()
    found = []
    for path in sorted([*(ROOT / "explorer").rglob("*.py"), *(ROOT / "seqmodels").rglob("*.py")]):
        where = path.relative_to(ROOT).as_posix()
        for registry, line, listed in listed_names(ast.parse(path.read_text(encoding="utf-8")), names):
            if where not in OWN_MODULES[registry]:
                found.append(f"{where}:{line}: {registry} {', '.join(listed)}")
    assert not found, "registry names written out (read the registry instead):\n" + "\n".join(found)


@pytest.mark.parametrize("source, registry", [
    ('CELLS = ("rnn", "gru", "lstm")\n', "cells"),
    ('TIP = "compare rnn, gru and lstm"\n', "cells"),
    ('COLOURS = {"curves": 1, "attention": 2, "gradients": 3}\n', "panels"),
    ('for score in ["dot", "general", "additive"]:\n    pass\n', "scores"),
])
def test_a_written_out_registry_is_found(source, registry):
    assert [hit[0] for hit in listed_names(ast.parse(source), registries())] == [registry]


def test_two_names_and_prose_are_not_a_list():
    source = ('DEFAULT = ("gru", "lstm")\n'
              'TIP = "a step of the attention panel, with gradients"\n')
    assert list(listed_names(ast.parse(source), registries())) == []
