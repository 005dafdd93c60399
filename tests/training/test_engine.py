import math
import queue
import threading
import time

import pytest
import torch
import torch.nn.functional as F

from explorer.events import EvalMetrics, ProbeSnapshot, StepMetrics, TrainingFinished
from explorer.training import Trainer, TrainerControl
from explorer.training import engine as engine_module
from explorer.training.feeds import make_feed, step_seed
from explorer.training.objectives import compute_loss, rnn_lm_forward


def run_all(trainer):
    events = list(trainer.run())
    steps = [e for e in events if isinstance(e, StepMetrics)]
    return events, steps


@pytest.mark.parametrize("family", ["rnn-lm", "seq2seq", "transformer", "gpt", "bert"])
def test_every_family_learns(family, tiny_workspace, tiny_config):
    torch.manual_seed(0)
    workspace = tiny_workspace(family)
    events, steps = run_all(Trainer(workspace, tiny_config(steps=100, lr=1e-2)))
    losses = [s.loss for s in steps]
    assert [s.step for s in steps] == list(range(1, 101))
    # 100 steps, not 40: at 40 the seq2seq and Transformer ratios ranged 0.76-0.86 over seeds 0-7,
    # around the 0.8 asserted, and other seeds failed. At 100 the worst of eight seeds was rnn-lm
    # 0.39, gpt 0.49, seq2seq 0.65, transformer 0.78, bert 0.85 (only 15% of its tokens teach).
    ratio = {"transformer": 0.9, "bert": 0.95}.get(family, 0.8)
    assert sum(losses[-5:]) / 5 < ratio * sum(losses[:5]) / 5, losses
    evaluation = [e for e in events if isinstance(e, EvalMetrics)]
    assert len(evaluation) == 1 and evaluation[0].step == 100  # eval_every=0: only at the end
    assert evaluation[0].perplexity == pytest.approx(math.exp(evaluation[0].val_loss))
    assert 0 <= evaluation[0].token_accuracy <= 1
    assert events[-1] == TrainingFinished(100, "done")
    assert workspace.step == 100 and len(workspace.history) == 100
    assert workspace.history[-1]["val_loss"] == evaluation[0].val_loss
    assert all(s.tokens > 0 and s.tokens_per_s > 0 for s in steps)


def test_same_seed_gives_identical_losses_even_with_dropout(tiny_workspace, tiny_config):
    runs = []
    for _ in range(2):
        workspace = tiny_workspace("transformer", dropout=0.3)
        _, steps = run_all(Trainer(workspace, tiny_config(steps=8, seed=5)))
        runs.append([s.loss for s in steps])
    assert runs[0] == runs[1]
    other = tiny_workspace("transformer", dropout=0.3)
    _, steps = run_all(Trainer(other, tiny_config(steps=8, seed=6)))
    assert [s.loss for s in steps] != runs[0]  # the seed picks batches and dropout masks


def test_a_step_draws_its_dropout_masks_as_torch_manual_seed_would(tiny_workspace, tiny_config):
    """The step seeds only the generators it uses; on CPU the masks are torch.manual_seed's."""
    workspace = tiny_workspace("gpt", dropout=0.3)
    config = tiny_config(steps=1, seed=5)
    reference = tiny_workspace("gpt", dropout=0.3)
    reference.model.load_state_dict(workspace.model.state_dict())
    reference.model.train()
    torch.manual_seed(step_seed(config.seed, 1))
    batch = make_feed(reference, config).train_batch(1)
    expected = compute_loss(reference.model, batch).loss.item()
    reference.model.eval()
    without_dropout = compute_loss(reference.model, batch).loss.item()
    _, steps = run_all(Trainer(workspace, config))
    assert steps[0].loss == pytest.approx(expected, rel=1e-6)
    assert steps[0].loss != pytest.approx(without_dropout, rel=1e-4)  # dropout did act


def test_gradient_norm_is_recorded_before_and_after_clipping(tiny_workspace, tiny_config):
    workspace = tiny_workspace("gpt")
    config = tiny_config(steps=1, optimizer="sgd", momentum=0.0, lr=0.5, clip=0.05)
    # reference: the same first batch through torch's own clip_grad_norm_ on a copy of the model
    reference = tiny_workspace("gpt")
    reference.model.load_state_dict(workspace.model.state_dict())
    torch.manual_seed(step_seed(config.seed, 1))
    batch = make_feed(reference, config).train_batch(1)
    compute_loss(reference.model, batch).loss.backward()
    expected = torch.nn.utils.clip_grad_norm_(reference.model.parameters(), float("inf")).item()

    before = [p.detach().clone() for p in workspace.model.parameters()]
    _, steps = run_all(Trainer(workspace, config))
    assert steps[0].grad_norm == pytest.approx(expected, rel=1e-5)
    assert expected > 0.05 and steps[0].grad_norm_clipped == pytest.approx(0.05, rel=1e-4)
    # plain SGD moved the weights by lr * clipped gradient: the update's norm is lr * tau
    after = workspace.model.parameters()
    moved = torch.sqrt(sum(((p - b) ** 2).sum() for p, b in zip(after, before)))
    assert moved.item() == pytest.approx(0.5 * 0.05, rel=1e-3)


def test_label_smoothing_matches_the_formula_and_ignores_padding(tiny_workspace, tiny_config):
    workspace = tiny_workspace("seq2seq")
    batch = next(make_feed(workspace, tiny_config()).val_batches())  # not length-bucketed
    eps = 0.1
    output = compute_loss(workspace.model, batch, label_smoothing=eps)
    logp = F.log_softmax(output.logits.float(), dim=-1)  # (B, T, V)
    nll = -logp.gather(-1, batch.tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, T)
    uniform = -logp.mean(dim=-1)  # (B, T)
    keep = ~batch.tgt_pad_mask
    assert keep.sum() < keep.numel()  # the batch has padding to ignore
    expected = (((1 - eps) * nll + eps * uniform) * keep).sum() / keep.sum()
    assert output.loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_truncated_bptt_cuts_the_gradient_between_windows(tiny_workspace):
    workspace = tiny_workspace("rnn-lm")
    model = workspace.model
    tokens = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12]])  # (1, 8): each token once
    for bptt, first_window_gets_gradient in ((4, False), (8, True)):
        model.zero_grad()
        logits, state = rnn_lm_forward(model, tokens, None, bptt)
        logits[:, 4:].sum().backward()  # only the second window's outputs
        grad = model.embedding.weight.grad[5:9].abs().sum().item()
        assert (grad > 0) == first_window_gets_gradient
        assert not any(t.requires_grad for t in state.values())


def test_rnn_lm_streams_continue_across_batches_and_carry_the_state(tiny_workspace, tiny_config):
    workspace = tiny_workspace("rnn-lm")
    config = tiny_config(steps=3, context=8, batch_size=4)
    feed = make_feed(workspace, config)
    first, second = feed.train_batch(1), feed.train_batch(2)
    assert torch.equal(first.targets[:, -1], second.tokens[:, 0])
    trainer = Trainer(workspace, config)
    run_all(trainer)
    assert trainer.lm_state is not None and trainer.lm_state["h"].shape[0] == 4


def test_nan_loss_stops_and_restores_the_last_good_weights(tiny_workspace, tiny_config):
    workspace = tiny_workspace("gpt")
    calls = {"n": 0}

    def poison(module, inputs, output):
        calls["n"] += 1
        return output * float("nan") if calls["n"] == 5 else output

    workspace.model.register_forward_hook(poison)
    events, steps = run_all(Trainer(workspace, tiny_config(steps=20)))
    finished = events[-1]
    assert finished.reason == "nan" and "NaN" in finished.message
    assert len(steps) == 4 and finished.step == 3 and workspace.step == 3
    assert [row["step"] for row in workspace.history] == [1, 2, 3]
    # the restored weights are exactly those of a clean run stopped after 3 steps
    clean = tiny_workspace("gpt")
    run_all(Trainer(clean, tiny_config(steps=3)))
    for restored, expected in zip(workspace.model.parameters(), clean.model.parameters()):
        assert torch.equal(restored, expected)


def test_exploding_learning_rate_ends_with_nan_not_a_crash(tiny_workspace, tiny_config):
    workspace = tiny_workspace("gpt")
    config = tiny_config(steps=30, optimizer="sgd", lr=1e6, clip=None)
    events, _ = run_all(Trainer(workspace, config))
    assert events[-1].reason == "nan"
    assert all(torch.isfinite(p).all() for p in workspace.model.parameters())


def test_out_of_memory_gives_a_clear_message(monkeypatch, tiny_workspace, tiny_config):
    real = engine_module.compute_loss
    calls = {"n": 0}

    def fake(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_module, "compute_loss", fake)
    events, steps = run_all(Trainer(tiny_workspace("gpt"), tiny_config(steps=10)))
    assert len(steps) == 2
    assert events[-1].reason == "oom" and "smaller batch size" in events[-1].message


def test_control_from_another_thread_pause_step_resume_stop(tiny_workspace, tiny_config):
    workspace = tiny_workspace("gpt")
    control = TrainerControl(poll_s=0.05)
    control.pause()
    trainer = Trainer(workspace, tiny_config(steps=100_000), control=control)
    events: queue.Queue = queue.Queue()

    def consume():
        for event in trainer.run():
            events.put(event)

    def next_step(timeout=30.0):
        while True:
            event = events.get(timeout=timeout)
            if isinstance(event, (StepMetrics, TrainingFinished)):
                return event

    class CountingEvent(threading.Event):
        """The control's wake-up event, counting the trainer's waits on it."""

        def __init__(self) -> None:
            super().__init__()
            self.timeouts: list[float | None] = []

        def wait(self, timeout=None):
            self.timeouts.append(timeout)
            return super().wait(timeout)

    control._wake = CountingEvent()
    thread = threading.Thread(target=consume)
    started = time.perf_counter()
    thread.start()
    try:
        with pytest.raises(queue.Empty):
            events.get(timeout=0.4)  # paused from the start: no step runs
        waits, elapsed = list(control._wake.timeouts), time.perf_counter() - started
        # and waiting does not spin: each wait blocks for poll_s, however slow the machine is
        assert waits and set(waits) == {control.poll_s}
        assert len(waits) <= elapsed / control.poll_s + 1
        control.step_once()
        assert next_step().step == 1
        control.step_once()
        assert next_step().step == 2
        with pytest.raises(queue.Empty):
            events.get(timeout=0.3)  # still paused after single steps
        control.update(lr=1e-4)
        control.resume()
        for expected in range(3, 8):
            event = next_step()
            assert event.step == expected and event.lr == pytest.approx(1e-4)
    finally:
        control.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
    last = None
    while not events.empty():
        last = events.get()
    assert isinstance(last, TrainingFinished) and last.reason == "stopped"
    assert workspace.step == last.step and workspace.training_state is not None


def test_probe_is_throttled_by_time_and_epochs_set_the_length(tiny_workspace, tiny_config):
    workspace = tiny_workspace("seq2seq")
    calls, threads = [], []

    def probe(model, step):
        calls.append(step)
        threads.append(torch.get_num_threads())
        return ProbeSnapshot(step=step, source="abc", target="abc")

    config = tiny_config(steps=None, epochs=1.5, probe_every_s=3600.0, num_threads=1)
    trainer = Trainer(workspace, config, probe_fn=probe)
    threads_before = torch.get_num_threads()
    events, steps = run_all(trainer)
    assert threads == [1, 1] and torch.get_num_threads() == threads_before  # set, then restored
    total = -(-256 // 16) * 3 // 2  # 1.5 epochs of 16 batches
    assert len(steps) == total and steps[-1].total_steps == total
    assert calls == [1, total]  # the first step, then not again until the last
    assert [e.step for e in events if isinstance(e, ProbeSnapshot)] == [1, total]


def test_probes_take_at_most_their_share_of_the_time(tiny_workspace, tiny_config, monkeypatch):
    """A probe as slow as on a loaded machine (half a second against ~0.1 s steps) comes less
    often than probe_every_s asks: the probes' share of the wall time stays near PROBE_SHARE."""
    import explorer.training.engine as engine

    clock = {"now": 0.0}

    def perf_counter():  # every reading is 50 ms later: the steps' time
        clock["now"] += 0.05
        return clock["now"]

    monkeypatch.setattr(engine.time, "perf_counter", perf_counter)
    calls = []

    def probe(model, step):
        calls.append(step)
        clock["now"] += 0.5  # the probe's own time
        return ProbeSnapshot(step=step, source="abc", target="abc")

    trainer = Trainer(tiny_workspace("seq2seq"), tiny_config(steps=300, probe_every_s=0.0),
                      probe_fn=probe)
    run_all(trainer)
    assert len(calls) >= 3 and calls[0] == 1 and calls[-1] == 300  # the panels stay live
    probes_s = 0.5 * len(calls)
    # the first and the last step's probes come whatever they cost
    assert probes_s / clock["now"] <= engine.PROBE_SHARE + 2 * 0.5 / clock["now"]


def test_a_time_limit_that_runs_out_after_the_steps_check_still_evaluates_the_last_step(
    tiny_workspace, tiny_config, monkeypatch
):
    """CI once saw the deadline pass after a step's check and before the loop's next one (here
    in the probe of step 3): the run stopped at step 3 unevaluated."""
    import explorer.training.engine as engine

    clock = {"now": 0.0}
    monkeypatch.setattr(engine.time, "perf_counter", lambda: clock["now"])

    def probe(model, step):
        if step == 3:
            clock["now"] = 61.0  # a minute and a second: past the limit
        return None

    config = tiny_config(steps=100, time_limit=1.0, probe_every_s=0.0)
    events = list(Trainer(tiny_workspace("seq2seq"), config, probe_fn=probe).run())
    assert events[-1].reason == "time" and events[-1].step == 4
    assert [e.step for e in events if isinstance(e, EvalMetrics)] == [4]


def test_seq2seq_evaluation_reports_bleu(tiny_workspace, tiny_config):
    workspace = tiny_workspace("seq2seq")
    events, _ = run_all(Trainer(workspace, tiny_config(steps=4, eval_every=2, bleu_examples=8)))
    evaluations = [e for e in events if isinstance(e, EvalMetrics)]
    assert [e.step for e in evaluations] == [2, 4]
    assert all(e.bleu is not None and 0 <= e.bleu <= 100 for e in evaluations)
    assert evaluations[-1].bleu == evaluations[-1].bleu_detail.score
    assert workspace.history[1]["bleu"] == evaluations[0].bleu


def test_evaluate_a_workspace_as_it_is_matches_the_trainers_last_evaluation(
    tiny_workspace, tiny_config
):
    from explorer.training import evaluate

    workspace = tiny_workspace("seq2seq")
    events, _ = run_all(Trainer(workspace, tiny_config(steps=3, bleu_examples=8)))
    last = [e for e in events if isinstance(e, EvalMetrics)][-1]
    again = evaluate(workspace)
    assert again.step == 3 and again.val_loss == pytest.approx(last.val_loss, rel=1e-6)
    assert again.bleu == pytest.approx(last.bleu)


def test_bert_blocks_predict_about_15_percent_of_the_tokens(tiny_workspace, tiny_config):
    from explorer.data.batching import IGNORE_INDEX
    from seqmodels.config import MASK_ID

    workspace = tiny_workspace("bert")
    feed = make_feed(workspace, tiny_config(batch_size=32, context=32))
    batch = feed.train_batch(1)
    chosen = batch.targets != IGNORE_INDEX  # (B, T)
    assert 0.10 < chosen.float().mean().item() < 0.20
    # chosen positions mostly became <mask> (80%); the others were left alone
    assert (batch.tokens[chosen] == MASK_ID).float().mean().item() > 0.6
    assert not (batch.tokens[~chosen] == MASK_ID).any()
    assert feed.train_batch(1).tokens.equal(batch.tokens)  # a function of (seed, step)


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw"])
def test_optimizers_are_fused_and_step_as_torch_s_own_loop(name):
    from explorer.training.config import TrainConfig

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    reference = [p.detach().clone().requires_grad_() for p in model.parameters()]
    config = TrainConfig(optimizer=name, lr=1e-2, weight_decay=0.1)
    ours = engine_module.make_optimizer(model, config)
    assert ours.defaults["fused"]  # one kernel for all parameters, not a Python loop
    # torch's default (for-loop) implementation with the same groups: decay only on matrices
    if name == "sgd":
        theirs = torch.optim.SGD(reference, lr=1e-2, momentum=config.momentum)
    elif name == "adam":
        theirs = torch.optim.Adam(reference, lr=1e-2, betas=config.betas)
    else:
        theirs = torch.optim.AdamW(
            [{"params": [p for p in reference if p.dim() >= 2], "weight_decay": 0.1},
             {"params": [p for p in reference if p.dim() < 2], "weight_decay": 0.0}],
            lr=1e-2, betas=config.betas)
    assert not theirs.defaults.get("fused")
    for _ in range(5):
        x = torch.randn(16, 4)
        for params, optimizer in ((list(model.parameters()), ours), (reference, theirs)):
            optimizer.zero_grad()
            out = F.linear(F.layer_norm(F.linear(x, params[0], params[1]), (8,), params[2],
                                        params[3]), params[4], params[5])
            out.square().mean().backward()
            optimizer.step()
    for mine, expected in zip(model.parameters(), reference):
        torch.testing.assert_close(mine, expected, rtol=1e-5, atol=1e-6)
