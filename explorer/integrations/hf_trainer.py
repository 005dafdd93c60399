"""`HFTrainerCallback`: a transformers.Trainer recorded into an explorer run folder.

    trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                      callbacks=[HFTrainerCallback("runs/gpt2", snapshot_every=100)])

Every `logging_steps` the Trainer logs its loss (the mean since the last log), learning rate and
gradient norm: each log becomes the step row of that global step, each evaluation an eval row.
Snapshots hold the model's state_dict; `rebuild` makes the architecture again from its config and
the tokenizer the run folder holds, so the app opens every snapshot with no code of the user's.
"""

from __future__ import annotations

from pathlib import Path

from transformers import TrainerCallback

from explorer.errors import UserError


class HFTrainerCallback(TrainerCallback):
    def __init__(self, folder: str | Path, tokenizer=None, snapshot_every: int | None = 100,
                 resume: bool = False) -> None:
        self.folder = Path(folder)
        self.tokenizer = tokenizer
        self.snapshot_every = snapshot_every
        self.resume = resume
        self.record = None

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        from explorer.recorder import Recorder

        tokenizer = self.tokenizer or processing_class
        if tokenizer is None:
            raise UserError("HFTrainerCallback: give the Trainer a processing_class (the "
                            "tokenizer) or the callback tokenizer=")
        config = model.config
        self.record = Recorder(
            self.folder, model=model, tokenizer=tokenizer, snapshot_every=self.snapshot_every,
            kind="seq2seq" if getattr(config, "is_encoder_decoder", False) else "lm",
            build=f"{__name__}:rebuild",
            args={"architecture": type(model).__name__, "config": config.to_dict(),
                  "tokenizer": str(self.folder.resolve())},
            hparams={"learning_rate": args.learning_rate, "batch_size": args.per_device_train_batch_size,
                     "max_steps": args.max_steps, "seed": args.seed},
            seed=args.seed, resume=self.resume)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.record is None or not logs:
            return
        step = state.global_step
        if "loss" in logs:
            self.record.step(step, loss=logs["loss"], lr=logs.get("learning_rate"),
                             grad_norm=logs.get("grad_norm"))
        if "eval_loss" in logs:
            self.record.eval(step, val_loss=logs["eval_loss"], bleu=logs.get("eval_bleu"))

    def on_train_end(self, args, state, control, **kwargs):
        if self.record is not None:
            self.record.close()
            self.record = None


def rebuild(architecture: str, config: dict, tokenizer: str):
    """The model class `architecture` of transformers from its config (random weights: the
    snapshot's fill it) and the tokenizer saved in the run folder."""
    import transformers

    settings = dict(config)
    model_type = settings.pop("model_type")
    model = getattr(transformers, architecture)(
        transformers.AutoConfig.for_model(model_type, **settings))
    return model.eval(), transformers.AutoTokenizer.from_pretrained(tokenizer, local_files_only=True)
