"""The training engine: `Trainer.run()` is a generator of explorer.events, consumed by the app's
worker thread and by `explorer train` alike.

One step: wait for the TrainerControl, set the scheduled lr, draw the step's batch, forward (under
autocast on CUDA), check the loss is finite, backward, measure and clip the global gradient norm,
remember the weights that gave this finite loss, update. Everything random in a step is seeded from
(seed, step), so two runs with one seed agree, and a resumed run continues exactly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from typing import Any, Callable, Generator, Iterator

import torch

from explorer.events import EvalMetrics, ProbeSnapshot, StepMetrics, TrainingFinished
from explorer.readers import switching_mode, writing
from explorer.runtime import choose_threads
from explorer.training.config import TrainConfig
from explorer.training.control import LIVE_OPTIONS, TrainerControl
from explorer.training.evaluation import evaluate_feed, resolve_device
from explorer.training.feeds import make_feed, step_seed
from explorer.training.objectives import compute_loss
from explorer.training.schedules import learning_rate

DEFAULT_STEPS = 1000
Event = StepMetrics | EvalMetrics | ProbeSnapshot | TrainingFinished


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """SGD, Adam or AdamW; AdamW decays matrices only, never biases, norms or gains (nanoGPT).

    Fused where torch has a kernel for the parameters' device: one call updates every parameter,
    where the default loops over them in Python (for a small model on CPU, 4.3 ms of a ~30 ms step
    against 0.5 ms, and Python time is GIL time the app's GUI thread then waits for)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "sgd":
        return _fused_if_possible(torch.optim.SGD, params, lr=config.lr, momentum=config.momentum)
    if config.optimizer == "adam":
        return _fused_if_possible(torch.optim.Adam, params, lr=config.lr, betas=config.betas)
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return _fused_if_possible(torch.optim.AdamW, groups, lr=config.lr, betas=config.betas)


def _fused_if_possible(optimizer_class, params, **options) -> torch.optim.Optimizer:
    try:
        return optimizer_class(params, fused=True, **options)
    except RuntimeError:  # no fused kernel for this device or dtype
        return optimizer_class(params, **options)


def seed_step(device: torch.device, seed: int) -> None:
    """Seed the generators a step on `device` draws from: the CPU's, and the device's own.

    Not torch.manual_seed: it also queues a seed for every accelerator torch knows (CUDA, XPU,
    MTIA) that is not initialised, each with a formatted stack trace, which cost more than a small
    model's optimizer update on every step (benchmarks/RESULTS.md, issue 22)."""
    torch.default_generator.manual_seed(seed)
    if device.type == "cuda":
        torch.cuda.manual_seed(seed)  # the current device, initialised by the model's move


def total_steps(config: TrainConfig, steps_per_epoch: int) -> int:
    """`steps` is the number of the last step (like nanoGPT's max_iters), so a resumed run stops
    where an uninterrupted one would; `epochs` counts passes over the training data."""
    if config.steps is not None:
        return config.steps
    if config.epochs is not None:
        return max(1, math.ceil(config.epochs * steps_per_epoch))
    return DEFAULT_STEPS


def grad_norm(parameters: list[torch.Tensor]) -> torch.Tensor:
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.zeros(())
    # one fused kernel per device and dtype for the norms, as clip_grad_norm_ does
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))


def _is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


PROBE_SHARE = 0.03  # the most of the training's wall time the live probes may take


class Trainer:
    """Trains `workspace.model` on `workspace.data` under `config`; see the module docstring."""

    def __init__(
        self,
        workspace,
        config: TrainConfig | None = None,
        control: TrainerControl | None = None,
        probe_fn: Callable[[Any, int], ProbeSnapshot] | None = None,
        keep_cores: int = 0,
    ) -> None:
        self.workspace = workspace
        self.keep_cores = keep_cores  # cores the default thread count leaves to other threads
        self.config = config or workspace.train_config or TrainConfig()
        self.control = control or TrainerControl()
        self.probe_fn = probe_fn
        self.device = resolve_device(self.config.device)
        self.feed = None  # built by run(), in the thread that trains: encoding data takes a while
        self.total_steps: int | None = self.config.steps
        self.good_step = workspace.step  # the step whose weights the NaN guard keeps
        self.optimizer: torch.optim.Optimizer | None = None
        self.scaler: torch.amp.GradScaler | None = None
        self.lm_state: Any = None  # RNN LMs: the hidden state carried into the next batch
        self.parallel = None  # torchrun: an explorer.training.distributed.DataParallel
        self._updating = False  # inside optimizer.step(): see _out_of_memory
        # called with the step number once a step, its evaluation and its probe are done
        # (explorer/training/autosave.py saves checkpoints from here, in the training thread)
        self.on_step_end: Callable[[int], None] | None = None
        self.threads_note: str | None = None  # why run() took fewer CPU threads than torch's default

    # -- set-up --------------------------------------------------------------------------------

    def _autocast(self):
        precision = self.config.precision
        if self.device.type != "cuda" or precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast(device_type="cuda", dtype=dtype)

    def _prepare(self) -> None:
        self.feed = make_feed(self.workspace, self.config)
        self.total_steps = total_steps(self.config, self.feed.steps_per_epoch)
        model = self.workspace.model.to(self.device)
        with switching_mode(model):  # not under a reader's eval()
            model.train()
        self.optimizer = make_optimizer(model, self.config)
        use_scaler = self.device.type == "cuda" and self.config.precision == "fp16"
        self.scaler = torch.amp.GradScaler("cuda") if use_scaler else None
        saved = self.workspace.training_state
        if saved and saved.get("optimizer_name") == self.config.optimizer:
            self.optimizer.load_state_dict(saved["optimizer"])
            if self.scaler is not None and saved.get("scaler"):
                self.scaler.load_state_dict(saved["scaler"])
            lm_state = saved.get("lm_state")
            self.lm_state = None if lm_state is None else _to_device(lm_state, self.device)

    def training_state(self) -> dict[str, Any]:
        """What `save_checkpoint` writes to optimizer.pt so a resumed run continues exactly."""
        return {
            "optimizer_name": self.config.optimizer,
            "optimizer": self.optimizer.state_dict(),
            "scaler": None if self.scaler is None else self.scaler.state_dict(),
            "lm_state": None if self.lm_state is None else _to_device(self.lm_state, "cpu"),
        }

    def _apply_live_changes(self) -> None:
        changes = {k: v for k, v in self.control.take_changes().items() if k in LIVE_OPTIONS}
        if changes:
            self.config = dataclasses.replace(self.config, **changes)
            self.total_steps = total_steps(self.config, self.feed.steps_per_epoch)

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> Iterator[Event]:
        threads_before = torch.get_num_threads()
        if self.device.type == "cpu":
            choice = choose_threads(self.config.num_threads, self.keep_cores)
            self.threads_note = choice.note  # the CLI prints it, the app shows it
            torch.set_num_threads(choice.threads)
        try:
            yield from self._run()
        finally:
            torch.set_num_threads(threads_before)

    def _run(self) -> Iterator[Event]:
        self._prepare()
        workspace = self.workspace
        params = [p for p in workspace.model.parameters() if p.requires_grad]
        last_good = [p.detach().clone() for p in params]  # the weights the NaN guard restores
        self.good_step = workspace.step
        try:
            finished = yield from self._loop(params, last_good)
        except Exception as exc:  # out of memory in a step or an evaluation; nothing else
            if not _is_out_of_memory(exc):
                raise
            finished = self._out_of_memory(workspace.step, params, last_good)
        workspace.train_config = self.config
        if finished.reason not in ("nan", "oom"):
            workspace.training_state = self.training_state()
        with switching_mode(workspace.model):
            workspace.model.eval()
        yield finished

    def _loop(self, params, last_good) -> Generator[Event, None, TrainingFinished]:
        workspace, model = self.workspace, self.workspace.model
        step = workspace.step
        active_s, last_probe, probe_s = 0.0, -math.inf, 0.0
        out_of_time, timed_out = self._deadline(), False
        while True:
            if step >= self.total_steps:
                return TrainingFinished(step, "done")
            if timed_out:
                return TrainingFinished(step, "time", f"time limit of {self.config.time_limit:g} "
                                        f"min reached at step {step}")
            if not self.control.wait_for_turn():
                return TrainingFinished(step, "stopped", f"stopped at step {step}")
            self._apply_live_changes()
            config = self.config
            step += 1
            started = time.perf_counter()
            with writing(model):  # readers in other threads see whole steps, in eval mode
                metrics = self._step(step, params, last_good)
            if metrics is None:
                return self._diverged(step, params, last_good)
            duration = time.perf_counter() - started
            active_s += duration
            metrics.tokens_per_s = metrics.tokens / max(duration, 1e-9)
            metrics.elapsed_s = active_s
            workspace.step = step
            workspace.history.append(_history_row(metrics))
            yield metrics
            # decided once, so the step that stops the run is the step that was evaluated
            timed_out = out_of_time()
            last_step = step >= self.total_steps or timed_out  # evaluate before stopping
            if (config.eval_every and step % config.eval_every == 0) or last_step:
                evaluation = self._evaluate(step)
                workspace.history[-1].update(_eval_row(evaluation))
                yield evaluation
            if self.probe_fn is not None:
                now = time.perf_counter()
                # probe_every_s, or less often when a probe costs more than PROBE_SHARE of the
                # time (a big model, a busy machine): in the app probes took 15% of training
                wait = max(config.probe_every_s, probe_s / PROBE_SHARE)
                if now - last_probe >= wait or last_step:
                    last_probe = now
                    snapshot = self.probe_fn(model, step)
                    probe_s = time.perf_counter() - now
                    if snapshot is not None:
                        yield snapshot
            if self.on_step_end is not None:
                self.on_step_end(step)

    def _deadline(self) -> Callable[[], bool]:
        """Whether the wall-clock budget (config.time_limit minutes, from now) is spent."""
        if self.config.time_limit is None:
            return lambda: False
        deadline = time.perf_counter() + 60 * self.config.time_limit
        return lambda: time.perf_counter() >= deadline

    def _step(self, step: int, params, last_good) -> StepMetrics | None:
        """One optimisation step; None when the loss or the gradient is not finite."""
        config, optimizer, model = self.config, self.optimizer, self.workspace.model
        lr = learning_rate(config, step, self.total_steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        seed_step(self.device, step_seed(config.seed, step))  # dropout and masks: from the step
        if getattr(self.feed, "carries_state", False) and self.feed.starts_epoch(step):
            self.lm_state = None  # a new pass over the stream starts from a zero state
        batch = self.feed.train_batch(step)
        if self.parallel is not None:  # torchrun: this rank's share of the global batch
            batch = self.parallel.shard(batch)
        batch = batch.to(self.device)
        with self._autocast():
            output = compute_loss(
                model, batch, config.label_smoothing, state=self.lm_state, bptt=config.bptt
            )
        tokens = batch.num_target_tokens if batch.tokens is None else batch.tokens.numel()
        objective, loss = output.loss, None
        if self.parallel is not None:  # weighted by tokens over every rank
            objective, loss, tokens = self.parallel.weight_by_tokens(output, tokens)
            if not math.isfinite(loss):
                return None
        optimizer.zero_grad(set_to_none=True)
        scaler = self.scaler
        if scaler is not None:
            scaler.scale(objective).backward()
        else:
            objective.backward()
        if self.parallel is not None:
            self.parallel.all_reduce_gradients(params)
        if scaler is not None:
            scaler.unscale_(optimizer)
        norm = grad_norm(params)
        if loss is None:
            # one wait for the GPU per step, once the backward pass is queued: reading the loss
            # before it left the GPU idle while the backward kernels were launched (0.91 of a
            # plain loop on an H200 in fp32; benchmarks/RESULTS.md)
            loss, norm = torch.stack([output.loss.detach().float(), norm.float()]).tolist()
            if not math.isfinite(loss):
                return None
        else:
            norm = float(norm)
        if not math.isfinite(norm) and scaler is None:
            return None  # with fp16 the scaler skips this step and lowers its scale instead
        clipped = norm
        if config.clip is not None and norm > config.clip:
            scale = config.clip / (norm + 1e-6)
            torch._foreach_mul_([p.grad for p in params if p.grad is not None], scale)
            clipped = norm * scale
        with torch.no_grad():
            torch._foreach_copy_(last_good, [p.detach() for p in params])
        self.good_step = step - 1
        self._updating = True  # an out-of-memory error from here on leaves weights half-updated
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        self._updating = False
        self.lm_state = output.state
        return StepMetrics(
            step=step, loss=loss, lr=lr, grad_norm=norm, grad_norm_clipped=clipped,
            tokens=int(tokens), tokens_per_s=0.0, elapsed_s=0.0, total_steps=self.total_steps,
        )

    def _evaluate(self, step: int) -> EvalMetrics:
        config = self.config
        with switching_mode(self.workspace.model), self._autocast():
            return evaluate_feed(
                self.workspace, self.feed, step, config.bleu_examples, config.batch_size
            )

    # -- faults --------------------------------------------------------------------------------

    def _diverged(self, step: int, params, last_good) -> TrainingFinished:
        """Put back the weights of the last step whose loss was finite, and say what happened."""
        with writing(self.workspace.model), torch.no_grad():
            torch._foreach_copy_(params, last_good)
        good_step = self.good_step
        self.workspace.step = good_step
        self.workspace.history[:] = [r for r in self.workspace.history if r["step"] <= good_step]
        self.workspace.training_state = None  # the optimizer's moments saw the exploding step
        self.lm_state = None
        return TrainingFinished(
            good_step, "nan",
            f"the loss became NaN or infinite at step {step}; restored the weights of step "
            f"{good_step}. Try a lower learning rate (now {self.config.lr:g}) or clipping.",
        )

    def _out_of_memory(self, step: int, params, last_good) -> TrainingFinished:
        """Keep the weights of the last finished step: those in place, or, when the update itself
        ran out of memory, the copy taken before it (the optimizer's state is then not kept)."""
        self.optimizer.zero_grad(set_to_none=True)
        if self._updating:
            with torch.no_grad():
                torch._foreach_copy_(params, last_good)
            self.workspace.training_state = None
        else:
            self.workspace.training_state = self.training_state()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        return TrainingFinished(
            step, "oom",
            f"out of memory on {self.device.type} at step {step + 1} with batch size "
            f"{self.config.batch_size}; try a smaller batch size, a shorter context or a smaller model.",
        )


def _to_device(state: Any, device) -> Any:
    from seqmodels.state import map_state

    return map_state(state, lambda t: t.detach().to(device))


def _history_row(metrics: StepMetrics) -> dict[str, Any]:
    return {
        "step": metrics.step, "loss": metrics.loss, "lr": metrics.lr,
        "grad_norm": metrics.grad_norm, "grad_norm_clipped": metrics.grad_norm_clipped,
        "tokens": metrics.tokens, "tokens_per_s": metrics.tokens_per_s,
        "elapsed_s": metrics.elapsed_s,
    }


def _eval_row(metrics: EvalMetrics) -> dict[str, Any]:
    row = {
        "val_loss": metrics.val_loss, "perplexity": metrics.perplexity,
        "token_accuracy": metrics.token_accuracy,
    }
    if metrics.bleu is not None:
        row["bleu"] = metrics.bleu
    return row
