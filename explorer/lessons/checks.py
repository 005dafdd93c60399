"""The lessons' conditions: a small, safe vocabulary of named checks (no code in lesson files).

A check measures one number on what the user's model shows (`quantity(session, **options)`) and
compares it: `below=`, `above=`, `at_most=`, `at_least=`, or `approx=` with a relative `tol=`
(default 0.001). `@check recurrence_gradient a_h=1.1 steps=100 approx=13781 tol=0.0001`.

An option written `@PANEL.CONTROL` takes the value the student set in that control
(`recurrence_gradient a_h=@gradients.slider`): the check measures what the student made. A
result says what was measured, against what, and where to look (`CheckResult.feedback`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from explorer.errors import UserError

COMPARISONS = ("below", "above", "at_most", "at_least", "approx")
DEFAULT_TOLERANCE = 1e-3
# The lecture's featurized word vectors (Lecture 8's table: Gender, Royal, Age, Food).
LECTURE_TABLE = {
    "man": (-1.0, 0.01, 0.03, 0.04), "woman": (1.0, 0.02, 0.02, 0.01),
    "king": (-0.95, 0.93, 0.70, 0.02), "queen": (0.97, 0.95, 0.68, 0.01),
    "apple": (0.00, -0.01, 0.03, 0.95), "orange": (0.01, 0.00, -0.02, 0.97),
}


@dataclass(frozen=True)
class Check:
    name: str
    summary: str  # what the number is, for the lesson dock and `explorer lesson --checks`
    quantity: Callable[..., float]  # (session, **options) -> the measured number
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    look: str = ""  # where the student sees this number in the app, and what changes it


@dataclass
class CheckResult:
    name: str
    passed: bool
    value: float
    line: str  # one line: "grad_norm_at = 2.1e-05 (below 0.001): passed"
    measured_on: str = ""  # what the number was measured on ("your model at step 120, probe …")
    look: str = ""

    @property
    def feedback(self) -> str:
        """The line, what it was measured on and, when not passed, where to look."""
        text = self.line + (f" — measured on {self.measured_on}" if self.measured_on else "")
        return text if self.passed or not self.look else f"{text}. Look at {self.look}"


CHECKS: dict[str, Check] = {}
# Checks that read only the probe snapshot, the student's controls or plain numbers: they run live
# on the trainer's snapshots while the app trains (the others wait for the training to stop).
LIVE_CHECKS = {"recurrence_gradient", "grad_norm_at", "depth_gradient_spread", "attention_heads",
               "attention_layers", "attention_future", "attention_row_sum_error",
               "attention_alignment", "residual_growth", "gates", "control", "probe_tokens",
               "own_probe", "trained_steps", "max_grad_norm", "max_clipped_norm"}


def check(name: str, summary: str, required=(), optional=(), look=""):
    def register(function):
        CHECKS[name] = Check(name, summary, function, tuple(required), tuple(optional), look)
        return function
    return register


def student_value(session, option: str):
    """`@PANEL.CONTROL`: the value the student set there (the session keeps the controls' values:
    `@set` headless, the window's widgets in the app); `@probe`: the probe source they typed."""
    name = option[1:]
    if name == "probe":
        return session.probe[0]
    if name not in session.controls:
        raise UserError(f"no value of {name} yet: set it in the {name.split('.')[0]} panel")
    return session.controls[name]


def validate_check(options: dict, args: list[str], where: str) -> None:
    """Raise a one-line UserError for an unknown check, a missing or unknown option."""
    if not args:
        raise UserError(f"{where}: @check needs a check name; one of {', '.join(CHECKS)}")
    entry = CHECKS.get(args[0])
    if entry is None:
        raise UserError(f"{where}: unknown check {args[0]!r}; use one of {', '.join(CHECKS)}")
    if len(args) > 1:
        raise UserError(f"{where}: {args[0]}: options are key=value, got {args[1]!r}")
    missing = [key for key in entry.required if key not in options]
    if missing:
        raise UserError(f"{where}: {args[0]} needs {', '.join(k + '=' for k in missing)}")
    allowed = set(entry.required) | set(entry.optional) | set(COMPARISONS) | {"tol"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise UserError(f"{where}: {args[0]} has no option {unknown[0]!r}; it takes "
                        + ", ".join(sorted(allowed)))
    comparisons = [key for key in COMPARISONS if key in options]
    if len(comparisons) != 1:
        raise UserError(f"{where}: {args[0]} needs exactly one of {', '.join(COMPARISONS)}")
    if not isinstance(options[comparisons[0]], (int, float)):
        raise UserError(f"{where}: {comparisons[0]}= must be a number")


def failed_check(session, args: list[str], message: str) -> CheckResult:
    """A check that could not measure on what the student has (no attention, a set not chosen):
    not passed, and the reason is what to look at."""
    entry = CHECKS[args[0]]
    return CheckResult(entry.name, False, math.nan, f"{entry.name}: {message}: not yet",
                       session.describe(), entry.look)


def evaluate_check(session, args: list[str], options: dict) -> CheckResult:
    entry = CHECKS[args[0]]
    measure = {k: student_value(session, v) if isinstance(v, str) and v.startswith("@") else v
               for k, v in options.items() if k not in COMPARISONS and k != "tol"}
    value = float(entry.quantity(session, **measure))
    (comparison, bound), = [(k, float(options[k])) for k in COMPARISONS if k in options]
    if comparison == "approx":
        tol = float(options.get("tol", DEFAULT_TOLERANCE))
        passed = math.isfinite(value) and abs(value - bound) <= tol * max(abs(bound), 1e-12)
        wanted = f"≈ {bound:g} ±{tol:g} rel."
    else:
        passed = {"below": value < bound, "above": value > bound, "at_most": value <= bound,
                  "at_least": value >= bound}[comparison]
        wanted = f"{comparison.replace('_', ' ')} {bound:g}"
    given = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in measure.items()
                     if isinstance(options[k], str) and options[k].startswith("@"))
    return CheckResult(entry.name, passed, value,
                       f"{entry.name}{' (' + given + ')' if given else ''} = {value:.6g} ({wanted}): "
                       f"{'passed' if passed else 'not yet'}", session.describe(), entry.look)


# -- what the student made -------------------------------------------------------------------

@check("control", "the value the student set in a panel's control (name=PANEL.CONTROL)",
       required=("name",), look="the control the step names")
def _control(session, name):
    value = student_value(session, "@" + str(name).lstrip("@"))
    try:
        return float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} is {value!r}, not a number") from None


@check("probe_tokens", "tokens of the probe source (the probe box) as the model reads them",
       look="the probe box: type a longer or shorter input")
def _probe_tokens(session):
    return len(session.workspace.tokenizer.encode(session.probe[0]))


@check("own_probe", "1 when the probe input is the student's own (not the lesson's), else 0",
       look="the probe box: type an input of your own")
def _own_probe(session):
    return float(tuple(session.probe) != tuple(session.start_probe))


@check("trained_steps", "training steps the student's model has had", optional=("model",),
       look="the training controls: Train runs the model further")
def _trained_steps(session, model="main"):
    return session.workspace_named(model).step


# -- gradients -------------------------------------------------------------------------------

@check("recurrence_gradient", "∂h_k/∂h_0 of h_t = a_h·h_{t-1} (the a_h playground): a_h^k",
       required=("a_h",), optional=("steps", "tanh"),
       look="the gradient-flow panel's a_h playground: the value at k under the plot; a_h below 1 "
            "shrinks it, above 1 blows it up")
def _recurrence_gradient(session, a_h, steps=100, tanh=False):
    from explorer.analysis.gradients import scalar_recurrence_gradient

    return scalar_recurrence_gradient(float(a_h), int(steps), use_tanh=bool(tanh))[-1]


def _time_norms(session, layer=None):
    snapshot = session.probe_snapshot()
    if not snapshot.grad_time:
        raise UserError("this model has no gradients through time (not a recurrent model)")
    name = layer if layer is not None else next(iter(snapshot.grad_time))
    if name not in snapshot.grad_time:
        raise UserError(f"no recurrent layer {name!r}; the model has {', '.join(snapshot.grad_time)}")
    return snapshot.grad_time[name]


@check("grad_norm_at", "‖∂L/∂h_t‖ at time step t (1 = first) of the probe, as the gradient-flow "
       "panel shows it; relative=true divides by the largest over t", required=("t",),
       optional=("layer", "relative"),
       look="the gradient-flow panel's curve over t: a model that passes the gradient on keeps it "
            "level towards t = 1")
def _grad_norm_at(session, t, layer=None, relative=False):
    norms = _time_norms(session, layer)
    value = float(norms[int(t) - 1])
    return value / float(norms.max()) if relative else value


@check("bptt_reach", "tokens of `text` (text=@probe: the probe box's) that the last token's output "
       "sends gradient to when training truncates back-propagation every `bptt` tokens (rnn-lm)",
       required=("text", "bptt"), look="the window boundaries: the state is carried across them, "
                                        "the gradient is not")
def _bptt_reach(session, text, bptt):
    from explorer.analysis.truncation import gradient_reach
    from explorer.families import family_of

    family = family_of(session.workspace.model)
    if family.has_source or not family.recurrent or not hasattr(session.workspace.model, "embedding"):
        raise UserError("bptt_reach measures a recurrent language model (family rnn-lm)")
    return int((gradient_reach(session.workspace, str(text), int(bptt)) > 0).sum())


@check("encoder_context", "source tokens after position t (1 = first) whose embedding the encoder's "
       "output h_t depends on (a seq2seq RNN encoder; bidirectional: all of them, else none)",
       optional=("t", "model"), look="the architecture panel's encoder: one direction or two")
def _encoder_context(session, t=1, model="main"):
    from explorer.analysis.truncation import encoder_dependence
    from explorer.families import family_of

    workspace = session.workspace_named(model)
    family = family_of(workspace.model)
    if not (family.has_source and family.recurrent and hasattr(workspace.model, "src_embedding")):
        raise UserError("encoder_context measures a seq2seq RNN encoder")
    return encoder_dependence(workspace, session.probe[0], int(t))


@check("cell_gradient", "‖∂ℓ_T/∂h_t‖ / ‖∂ℓ_T/∂h_T‖ at step t for a fresh cell (any of "
       "seqmodels.cells) on the probe text, as the panel's cell comparison draws it", required=("cell",),
       optional=("t",),
       look="the gradient-flow panel's \"Compare cells\" curves: a gated cell keeps the curve "
            "level towards t = 1")
def _cell_gradient(session, cell, t=1):
    curves = session.cell_curves()
    if cell not in curves:
        raise UserError(f"no cell {cell!r}; the comparison has {', '.join(curves)}")
    curve = curves[cell]
    return float(curve[int(t) - 1] / curve[-1])


@check("max_grad_norm", "the largest gradient norm of the lesson's training, before clipping")
def _max_grad_norm(session):
    return max((m.grad_norm for m in session.history), default=0.0)


@check("max_clipped_norm", "the largest gradient norm after clipping at τ (train.clip)")
def _max_clipped_norm(session):
    return max((m.grad_norm_clipped for m in session.history), default=0.0)


@check("depth_gradient_spread", "largest / smallest gradient norm over a Transformer's blocks "
       "(1 = every block gets the same)", optional=("model",),
       look="the gradient-flow panel's bars per block: how far apart the largest and the "
            "smallest are")
def _depth_spread(session, model="main"):
    snapshot = session.probe_snapshot(session.workspace_named(model))
    norms = [float(n.max()) if hasattr(n, "max") else float(n) for n in snapshot.grad_depth]
    if not norms:
        raise UserError("this model has no blocks to compare (not a Transformer)")
    return max(norms) / max(min(norms), 1e-30)


# -- training and BLEU -----------------------------------------------------------------------

@check("loss", "the validation loss now", optional=("model",),
       look="the curves panel's validation loss: train longer (Train) or change the learning rate")
def _loss(session, model="main"):
    return session.evaluation(model).val_loss


@check("bleu", "corpus BLEU (0-100) of greedy decodes of the validation data", optional=("model",))
def _bleu(session, model="main"):
    metrics = session.evaluation(model)
    if metrics.bleu is None:
        raise UserError("this model has no BLEU (only sequence-to-sequence models do)")
    return metrics.bleu


@check("token_accuracy", "share of validation target tokens the model predicts right when it is "
       "fed the reference's previous tokens (teacher forcing, as it is trained)", optional=("model",),
       look="the curves panel's accuracy: train longer")
def _token_accuracy(session, model="main"):
    return session.evaluation(model).token_accuracy


def free_running_accuracy(workspace, pairs) -> float:
    """Share of reference tokens that the greedy output has at the same position, the model fed
    its own previous outputs (no teacher forcing)."""
    from explorer.decoding import greedy
    from explorer.decoding.scoring import encode_context

    tokenizer, right, total = workspace.tokenizer, 0, 0
    for source, target in pairs:
        reference = tokenizer.tokens(tokenizer.encode(target))
        output = greedy(workspace.model, encode_context(workspace, source),
                        max_len=len(reference) + 5, tokenizer=tokenizer).tokens
        right += sum(a == b for a, b in zip(output, reference))
        total += len(reference)
    return right / max(total, 1)


@check("free_running_accuracy", "share of validation target tokens greedy decoding gets right at "
       "their position, the model fed its own outputs (no teacher forcing)",
       optional=("examples", "model"), look="the examples panel: where the outputs go wrong, "
                                            "everything after the first mistake tends to go wrong")
def _free_running_accuracy(session, examples=100, model="main"):
    workspace = session.workspace_named(model)
    return session._cached(("free", model, workspace.step, int(examples)), lambda: free_running_accuracy(
        workspace, workspace.data.val[: int(examples)]))


@check("exposure_gap", "teacher-forced token accuracy minus free-running token accuracy on the "
       "validation data: what feeding the model its own mistakes costs", optional=("examples",),
       look="the examples panel: a first wrong token makes the rest of the output drift")
def _exposure_gap(session, examples=100):
    return _token_accuracy(session) - _free_running_accuracy(session, examples)


@check("bleu_gain", "BLEU of the lesson's model minus BLEU of its `compare.` variant")
def _bleu_gain(session):
    return _bleu(session, "main") - _bleu(session, "compare")


def _references(refs: str) -> list[str]:
    return [r.strip() for r in str(refs).split("|")]


@check("sentence_bleu", "explorer.metrics.bleu on one sentence: part=score|bp|precision (n=1..4, "
       "0-100)|matches|total|c|r; refs separated by |", required=("hyp", "refs"),
       optional=("part", "n", "order"),
       look="the BLEU panel's breakdown: p_1 .. p_4 count the n-grams that match; BP is e^(1 "
            "− r/c) when the hypothesis is shorter than the reference")
def _sentence_bleu(session, hyp, refs, part="score", n=1, order=4):
    from explorer.metrics.bleu import corpus_bleu

    references = [[r] for r in _references(refs)]  # one stream per reference
    result = corpus_bleu([str(hyp)], references, max_order=int(order))
    index = int(n) - 1
    parts = {"score": result.score, "bp": result.bp, "c": result.sys_len, "r": result.ref_len,
             "precision": result.precisions[index], "matches": result.counts[index],
             "total": result.totals[index]}
    if part not in parts:
        raise UserError(f"sentence_bleu part={part!r}; use one of {', '.join(parts)}")
    return parts[part]


# -- decoding --------------------------------------------------------------------------------

@check("beam_gain", "log p(beam output) − log p(greedy output) on the probe input (or source=); "
       "search=true searches the validation inputs for the clearest case (0 if none)",
       optional=("beam", "search", "max_len", "source"),
       look="the compare panel: greedy's and beam's outputs and log p; \"Find an example where "
            "beam beats greedy\" searches for one")
def _beam_gain(session, beam=4, search=False, max_len=40, source=None):
    from explorer.decoding.examples import find_beam_beats_greedy

    workspace = session.workspace
    if search:
        candidates = [pair for pair in workspace.data.val[:200]]
    else:  # the probe input, or the source given (the compare panel's: source=@compare.source_box)
        candidates = [session.probe[0] if source is None else str(source)]
        if not candidates[0].strip():
            raise UserError("no source to decode: type one")
    found = find_beam_beats_greedy(workspace, candidates, width=int(beam), max_len=int(max_len),
                                   min_margin=-math.inf if not search else 1e-3)
    if found is not None and search:
        session.set_probe(found.source, found.reference or "")
    return 0.0 if found is None else found.margin


@check("distinct_samples", "how many different outputs `n` samples at `temperature` give on the "
       "probe input", optional=("n", "temperature", "max_len"))
def _distinct_samples(session, n=8, temperature=1.0, max_len=40):
    from explorer.decoding.scoring import encode_context
    from explorer.decoding.search import sample

    workspace = session.workspace
    context = encode_context(workspace, session.probe[0])
    outputs = {tuple(sample(workspace.model, context, temperature=float(temperature), seed=seed,
                            max_len=int(max_len), tokenizer=workspace.tokenizer).hypothesis.token_ids)
               for seed in range(int(n))}
    return len(outputs)


# -- tokenisation ----------------------------------------------------------------------------

@check("bpe_tokens", "tokens of `text` after `merges` byte-pair merges (explorer.analysis.bpe_steps; "
       "text=@probe: the probe box's text)", required=("text", "merges"),
       look="the merges listed in the step: each one joins the most frequent adjacent pair")
def _bpe_tokens(session, text, merges):
    from explorer.analysis.bpe_steps import bpe_merges

    steps = bpe_merges(str(text), int(merges))
    return steps[-1].num_tokens if steps else len("".join(str(text).split()))


@check("bpe_merge_count", "how often the pair chosen by merge number `merge` occurred in `text`",
       required=("text", "merge"), look="the pair counts: the most frequent pair is merged first")
def _bpe_merge_count(session, text, merge):
    from explorer.analysis.bpe_steps import bpe_merges

    steps = bpe_merges(str(text), int(merge))
    if len(steps) < int(merge):
        raise UserError(f"{text!r} has only {len(steps)} merges: every word is one token by then")
    return steps[-1].count


# -- attention -------------------------------------------------------------------------------

@check("attention_scores", "how many attention scores the app offers (seqmodels/scores.py; "
       "`none`, no attention, is not a score)")
def _attention_scores(session):
    from seqmodels.scores import SCORES

    return sum(score.style != "none" for score in SCORES.values())


def _maps(session, kind, model="main"):
    attention = session.probe_snapshot(session.workspace_named(model)).attention
    maps = [a for a in attention if a.kind == kind]
    if not maps:
        kinds = sorted({a.kind for a in attention}) or ["none"]
        raise UserError(f"the probe shows no {kind!r} attention; it shows {', '.join(kinds)}")
    return maps


@check("attention_heads", "heads per layer of the `kind` attention (encoder, decoder, cross)",
       required=("kind",), optional=("model",))
def _attention_heads(session, kind, model="main"):
    return _maps(session, kind, model)[0].weights.shape[0]


@check("attention_layers", "layers with `kind` attention (encoder, decoder, cross)",
       required=("kind",), optional=("model",))
def _attention_layers(session, kind, model="main"):
    return len(_maps(session, kind, model))


@check("attention_future", "the most weight any query puts on a later key (0 under a causal mask)",
       required=("kind",), optional=("model",),
       look="the attention panel's decoder (masked) self-attention: the cells above the "
            "diagonal")
def _attention_future(session, kind, model="main"):
    import numpy as np

    worst = 0.0
    for attention in _maps(session, kind, model):
        weights = attention.weights  # (H, Tq, Tk)
        upper = np.triu(np.ones(weights.shape[1:], dtype=bool), k=1)
        worst = max(worst, float(weights[:, upper].max()) if upper.any() else 0.0)
    return worst


@check("attention_row_sum_error", "max |Σ_k α_qk − 1| over every map of the probe (softmax rows)",
       look="the attention heatmap's rows: hover a cell for its weight")
def _row_sums(session):
    import numpy as np

    return max(float(np.abs(a.weights.sum(-1) - 1).max()) for a in session.probe_snapshot().attention)


@check("attention_alignment", "share of output tokens whose strongest cross-attention is on the "
       "source token pattern=diagonal (i -> i) or anti (i -> n-1-i, reversal)",
       optional=("pattern", "layer"),
       look="the attention panel: the rows still blurred or off the anti-diagonal; train longer "
            "or try another score")
def _alignment(session, pattern="diagonal", layer=-1):
    maps = _maps(session, "cross")
    weights = maps[int(layer)].weights.mean(0)  # (Tq, Tk): heads averaged
    rows, cols = weights.shape[0] - 1, weights.shape[1] - 1  # the <eos> row and column left out
    if rows < 1:
        raise UserError("the probe's target is empty: set probe_target")
    hits = sum(int(weights[i, :cols].argmax()) == (i if pattern == "diagonal" else cols - 1 - i)
               for i in range(min(rows, cols)))
    return hits / min(rows, cols)


# -- positions, objectives, residuals, embeddings ----------------------------------------------

@check("shift_residual", "relative residual of the best linear map M_k with PE(n+k) = PE(n)·M_k "
       "on the model's positional table (or the sinusoidal one: table=sinusoidal)",
       optional=("k", "table", "positions", "dim"),
       look="the positional panel's shift fit: its residual under the similarity plot")
def _shift_residual(session, k=1, table="model", positions=64, dim=64):
    from explorer.analysis.positional import fit_shift_map, model_positions, sinusoidal

    if table == "sinusoidal":
        values = sinusoidal(int(positions), int(dim))
    else:
        found = model_positions(session.workspace.model, int(positions))
        if found is None:
            raise UserError("this model adds no positional table")
        values = found.table
    return fit_shift_map(values, int(k)).residual


@check("masked_share", "share of the tokens of a training batch that the masked-LM objective "
       "predicts (BERT's 15%)", optional=("batches", "model"))
def _masked_share(session, batches=4, model="main"):
    import torch

    from explorer.data.batching import mask_tokens

    workspace = session.workspace_named(model)
    tokens = torch.tensor([workspace.tokenizer.encode(s)[:64] for s, _ in workspace.data.train[:512]
                           if len(workspace.tokenizer.encode(s)) >= 64][:256])
    if tokens.numel() == 0:
        raise UserError("no training text of 64 tokens to mask")
    generator = torch.Generator().manual_seed(0)
    chosen = [(mask_tokens(tokens, generator, workspace.tokenizer.vocab_size)[1] != -100).float().mean()
              for _ in range(int(batches))]
    return float(sum(chosen) / len(chosen))


@check("residual_growth", "‖x‖ of the residual stream after the last block / after the embedding "
       "(mean over positions)", optional=("model",))
def _residual_growth(session, model="main"):
    snapshot = session.probe_snapshot(session.workspace_named(model))
    stacks = getattr(snapshot.hidden, "stacks", None) or []
    if not stacks:
        raise UserError("this model has no residual stream (not a Transformer)")
    norms = stacks[-1].residual_norm  # (layers + 1, T)
    return float(norms[-1].mean() / norms[0].mean())


@check("analogy_rank", "rank (1 = nearest) of `expect` for a − b + c by 3CosAdd, on the lecture's "
       "featurized table (table=lecture) or the model's input embedding",
       required=("a", "b", "c", "expect"), optional=("table",))
def _analogy_rank(session, a, b, c, expect, table="model"):
    import numpy as np

    from explorer.analysis.embeddings import analogy

    if table == "lecture":
        words = list(LECTURE_TABLE)
        matrix = np.array([LECTURE_TABLE[w] for w in words])
    else:
        data = session.embeddings()
        words, matrix = list(data.tokens), data.matrix
    missing = [w for w in (a, b, c, expect) if w not in words]
    if missing:
        raise UserError(f"no token {missing[0]!r} in the {table} embedding")
    ranked = [i for i, _ in analogy(matrix, words.index(a), words.index(b), words.index(c),
                                    k=len(words))]
    return ranked.index(words.index(expect)) + 1


@check("set_cohesion", "mean cosine similarity inside a token set (digits, months, ...) minus the "
       "mean over all tokens, in the model's input embedding", required=("set",),
       look="the embeddings panel with the set highlighted: how close its points sit compared"
            " with the rest")
def _set_cohesion(session, set):
    import numpy as np

    data = session.embeddings()
    members = data.sets.get(set)
    if members is None or len(members) < 2:
        raise UserError(f"no token set {set!r}; this vocabulary has {', '.join(data.sets) or 'none'}")
    unit = data.unit
    inside = unit[members] @ unit[members].T
    overall = unit @ unit.T
    return float(inside[~np.eye(len(members), dtype=bool)].mean() - overall.mean())


@check("gates", "how many gates the first recurrent layer shows (LSTM i f g o: 4, GRU r z n: 3)")
def _gates(session):
    layers = getattr(session.probe_snapshot().hidden, "layers", None) or []
    if not layers:
        raise UserError("this model has no recurrent layers")
    return len(layers[0].gates)
