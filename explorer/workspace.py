"""A workspace: one model with its tokenizers, data and history. A checkpoint saves exactly this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Workspace:
    model: Any  # torch.nn.Module built by seqmodels.build_model; model.config is its config
    tokenizer: Any  # the output side: the target tokenizer, or the LM's only tokenizer
    src_tokenizer: Any | None = None  # source side of seq2seq / transformer models
    task: str | None = None  # built-in task name, when the data came from one
    data: Any | None = None  # explorer.data.tasks.Splits of (source, target) pairs, or None
    train_config: Any | None = None  # explorer.training.TrainConfig used so far
    step: int = 0
    history: list[dict] = field(default_factory=list)  # metrics.jsonl rows, oldest first
    # optimizer (and RNN-LM carried state) to resume exactly; a checkpoint's optimizer.pt
    training_state: dict | None = None
    data_spec: Any | None = None  # explorer.training.setup.DataSpec the data was built from
    # the lines of the checkpoint's metrics.jsonl that were not JSON objects, left out of history
    history_bad_lines: tuple[int, ...] = ()

    @property
    def family(self) -> str:
        return self.model.config.family

    @property
    def is_seq2seq(self) -> bool:
        """Reads a source and writes a target (an encoder-decoder)."""
        from explorer.families import get_family

        return get_family(self.family).has_source
