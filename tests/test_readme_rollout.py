"""The README's rollout and ablation examples point at a Transformer checkpoint that an earlier
command of the README trained: on its GRU they printed only "not defined for an RNN" and the
export skipped the rollout."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
# attention between every pair of positions, which rollout multiplies through the layers
ATTENTION_ARCHS = {"transformer", "gpt"}


def readme_commands() -> list[list[str]]:
    """Every `explorer ...` command of the README's bash blocks, in order, line continuations
    joined and comments left out."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["explorer"]:
                commands.append(words[1:])
    return commands


def option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def test_rollout_examples_use_a_transformer_the_readme_trained_before():
    trained: dict[str, str | None] = {}  # --out folder -> --arch
    uses = []
    for words in readme_commands():
        if words[0] == "train" and option(words, "--out"):
            trained[option(words, "--out")] = option(words, "--arch")
        plots = (option(words, "--plots") or "").split(",")
        if option(words, "--method") == "rollout" or "rollout" in plots or "ablation" in plots:
            checkpoint = option(words, "--checkpoint")
            uses.append(checkpoint)
            assert checkpoint in trained, f"{checkpoint} is not trained before {' '.join(words)}"
            assert trained[checkpoint] in ATTENTION_ARCHS, (
                f"{' '.join(words)}: {checkpoint} is a {trained[checkpoint]}, not a Transformer")
    assert len(uses) >= 2  # the attribute and the export example
