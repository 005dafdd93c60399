"""HFTrainerCallback: a transformers.Trainer run recorded, opened and scrubbed like the app's own."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("accelerate")  # transformers' Trainer needs it


def test_hf_trainer_callback_records_the_trainers_losses(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from explorer.integrations import HFTrainerCallback
    from explorer.runs.reader import RunReader
    from explorer.training.checkpoint import load_checkpoint
    from tests.hf.builders import gpt2_tokenizer

    tokenizer = gpt2_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token  # the Trainer's collator pads (all rows are equal)
    end = tokenizer.eos_token_id
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=32, n_embd=32,
                                       n_layer=2, n_head=4, bos_token_id=end, eos_token_id=end))
    texts = ["the cat sat on the mat", "a dog ran in the park", "birds sing in the trees"] * 8
    data = [{"input_ids": ids, "labels": ids} for ids in
            (tokenizer(t)["input_ids"][:16] for t in texts)]
    data = [d for d in data if len(d["input_ids"]) == min(len(e["input_ids"]) for e in data)]
    logged = []

    class KeepLogs(HFTrainerCallback.__mro__[1]):  # transformers.TrainerCallback
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                logged.append((state.global_step, logs["loss"]))

    args = TrainingArguments(output_dir=str(tmp_path / "hf-out"), max_steps=20, logging_steps=1,
                             per_device_train_batch_size=4, learning_rate=1e-3, report_to=[],
                             save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True)
    folder = tmp_path / "runs" / "gpt2"
    trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                      callbacks=[HFTrainerCallback(folder, snapshot_every=10), KeepLogs()])
    trainer.train()

    reader = RunReader(folder)
    reader.read_new()
    curves = reader.curves()
    assert [s for s, _ in logged] == list(range(1, 21))
    assert curves.train["step"].tolist() == [s for s, _ in logged]
    assert curves.train["loss"].tolist() == pytest.approx([loss for _, loss in logged])
    assert [s.step for s in reader.snapshots()] == [0, 10, 20]
    # scrubbing: every snapshot opens with the weights the Trainer had, rebuilt without user code
    last = reader.open_snapshot(20, load_data=False)
    for key, value in model.state_dict().items():
        assert torch.allclose(last.model.state_dict()[key], value.cpu())
    first = reader.open_snapshot(0, load_data=False)
    assert not torch.equal(first.model.state_dict()["transformer.h.0.attn.c_attn.weight"],
                           last.model.state_dict()["transformer.h.0.attn.c_attn.weight"])
    assert load_checkpoint(folder).step == 20
    assert reader.finished["reason"] == "done"


def test_lightning_callback_records_each_training_step(tmp_path):
    lightning = pytest.importorskip("lightning")

    from explorer.integrations import LightningCallback
    from explorer.runs.reader import RunReader
    from tests.usermodel import homework_gpt

    build = f"{homework_gpt.__file__}:build"
    net, vocab = homework_gpt.build()
    losses = []

    class Module(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = net

        def training_step(self, batch, batch_idx):
            (ids,) = batch
            logits = self.net(ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
            losses.append(loss.item())
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randint(4, 12, (40, 8)))
    trainer = lightning.Trainer(
        max_steps=10, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(tmp_path),
        callbacks=[LightningCallback(tmp_path / "run", tokenizer=vocab, snapshot_every=5,
                                     model_attr="net", kind="lm", build=build, args={})])
    trainer.fit(Module(), torch.utils.data.DataLoader(data, batch_size=4))
    reader = RunReader(tmp_path / "run")
    reader.read_new()
    curves = reader.curves()
    assert curves.train["step"].tolist() == list(range(1, 11))
    assert curves.train["loss"].tolist() == pytest.approx(losses)
    assert [s.step for s in reader.snapshots()] == [0, 5, 10]
    assert reader.open_snapshot(10, load_data=False).step == 10
