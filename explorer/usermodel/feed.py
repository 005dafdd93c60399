"""Evaluation of a user model on the examples given to `explorer.show(data=...)`: the registry's
feed and loss of the user families.

The user's forward takes no padding masks, so every validation batch holds one example (no
padding at all). Training batches come from explorer/usermodel/training.py, which wraps this.
"""

from __future__ import annotations

from explorer.data.batching import IGNORE_INDEX, Batch
from explorer.training.objectives import LossOutput, _output


class UserFeed:
    def __init__(self, workspace, config=None, max_eval: int = 64, train: bool = True) -> None:
        from explorer.usermodel.probe import encode

        self.workspace = workspace
        pairs = list(getattr(workspace.data, "val", None) or ())[:max_eval]
        self.val_pairs = pairs if workspace.is_seq2seq else None
        self._batches = []
        for source, target in pairs:
            try:
                encoded = encode(workspace, source, target)
            except ValueError:  # an LM text of one token, an empty pair: nothing to predict
                continue
            if workspace.is_seq2seq:
                src, tgt_in = encoded.inputs
                self._batches.append(Batch(src=src, tgt_in=tgt_in, tgt_out=encoded.targets))
            else:
                self._batches.append(Batch(tokens=encoded.inputs[0], targets=encoded.targets))

    def val_batches(self):
        return iter(self._batches)


def user_loss(model, batch, label_smoothing: float = 0.0, state=None,
              bptt: int | None = None) -> LossOutput:
    """Teacher-forced cross-entropy of the user's model on one unpadded example."""
    if batch.src is not None:
        logits = model(batch.src, batch.tgt_in)  # (1, T, V)
        return _output(logits, batch.tgt_out, IGNORE_INDEX, label_smoothing)
    logits = model(batch.tokens)
    return _output(logits, batch.targets, IGNORE_INDEX, label_smoothing)

