"""Ready-made Recorder callbacks for training libraries (each an optional extra):

    from explorer.integrations import HFTrainerCallback, LightningCallback
    trainer = transformers.Trainer(..., callbacks=[HFTrainerCallback("runs/gpt2")])
    trainer = lightning.Trainer(..., callbacks=[LightningCallback("runs/mine", tokenizer=vocab)])

Each writes the run folder explorer.Recorder writes, which the app opens, follows and scrubs.
Importing this package imports neither library.
"""

_LAZY = {"HFTrainerCallback": "explorer.integrations.hf_trainer",
         "LightningCallback": "explorer.integrations.lightning"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer.integrations' has no attribute {name!r}")
