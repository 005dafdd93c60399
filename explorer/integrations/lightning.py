"""`LightningCallback`: a Lightning training recorded into an explorer run folder.

    trainer = lightning.Trainer(max_steps=1000, callbacks=[
        LightningCallback("runs/mine", tokenizer=vocab, model_attr="net", build="my_model:build")])

Each training batch's loss (what `training_step` returns) becomes the row of the trainer's global
step, with the first optimizer's learning rate; each validation's logged `val_loss` (and `bleu`)
an eval row. `model_attr` names the attribute of the LightningModule that holds the model the app
should open (default: the LightningModule itself); `build`/`args` as for explorer.Recorder.
"""

from __future__ import annotations

from pathlib import Path

from lightning.pytorch.callbacks import Callback


class LightningCallback(Callback):
    def __init__(self, folder: str | Path, tokenizer, snapshot_every: int | None = 100,
                 model_attr: str | None = None, kind: str | None = None, build: str | None = None,
                 args: dict | None = None, adapter=None) -> None:
        self.folder = Path(folder)
        self.tokenizer, self.snapshot_every = tokenizer, snapshot_every
        self.model_attr, self.kind, self.build, self.args, self.adapter = (
            model_attr, kind, build, args, adapter)
        self.record = None

    def on_train_start(self, trainer, pl_module) -> None:
        from explorer.recorder import Recorder

        model = getattr(pl_module, self.model_attr) if self.model_attr else pl_module
        self.record = Recorder(self.folder, model=model, tokenizer=self.tokenizer,
                               snapshot_every=self.snapshot_every, kind=self.kind,
                               adapter=self.adapter, build=self.build, args=self.args)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.record is None:
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        optimizers = trainer.optimizers
        lr = optimizers[0].param_groups[0]["lr"] if optimizers else None
        self.record.step(trainer.global_step, loss=None if loss is None else loss.detach(), lr=lr)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        metrics = trainer.callback_metrics
        if self.record is None or "val_loss" not in metrics or trainer.sanity_checking:
            return
        self.record.eval(trainer.global_step, val_loss=metrics["val_loss"], bleu=metrics.get("bleu"))

    def on_train_end(self, trainer, pl_module) -> None:
        if self.record is not None:
            self.record.close()
            self.record = None

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self.record is not None:
            self.record.close(exception)
            self.record = None
