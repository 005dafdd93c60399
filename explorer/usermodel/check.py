"""What the explorer sees in a user's model (`explorer check`, File ▸ Open model code…): no Qt.

    report = check_workspace(workspace, build="m.py:build")
    print("\\n".join(report.lines())); sys.exit(report.exit_code)

Opening the model already checked what makes it unusable (build()'s types, a tokenizer larger than
the embedding, before any forward: explorer.usermodel.loader) and read how to call it
(`workspace.model.reading`, explorer.usermodel.call: the masks it fills, targets= for every
position, last-position-only logits, where attention was seen or why none was, and its notes). One
probe forward on a few of the tokenizer's ordinary ids, under explorer.usermodel.capture, says what
the panels will find: the logits' shape, every attention (nn.MultiheadAttention, an
F.scaled_dot_product_attention call, or a softmax written by hand) and recurrent module by its
dotted name, the embedding and the head. A seq2seq's padding is tried directly: a short source alone, and padded in a batch
with a longer one. Each panel and command is then `ok`, `not-here` (this model has nothing it
shows: no fix), or `fix` (the model has it but the explorer cannot see it: the line says why and
what would fix it).

Exit codes: 0 everything the model can show is shown; 1 something it has is not shown (each
`fix` line says how); 2 the model cannot be used (one line, from the loader or the probe).
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from torch import nn

from explorer.errors import UserError
from explorer.usermodel.capture import RECURRENT, capture

OK, NOT_HERE, FIX = "ok", "not-here", "fix"
ATTENTION_WORDS = ("attn", "attention")


@dataclass
class Verdict:
    name: str  # a panel id or a command
    status: str  # OK, NOT_HERE or FIX
    why: str = ""
    fix: str = ""  # the Adapter(...) argument or code change that would make it work


@dataclass
class Report:
    build: str
    model: str  # class, parameters, device, mode
    kind: str  # "lm" / "seq2seq" and how it was read
    logits: str
    tokenizer: str
    embedding: str
    attention: list[str] = field(default_factory=list)  # "dotted.name: what"
    recurrent: list[str] = field(default_factory=list)
    hidden_attention: list[str] = field(default_factory=list)  # modules that look like attention
    padding: str = ""
    notes: list[str] = field(default_factory=list)  # how the model was read (reading.notes)
    panels: list[Verdict] = field(default_factory=list)
    commands: list[Verdict] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(v.status == FIX for v in self.panels + self.commands) else 0

    def to_dict(self) -> dict:
        return {**asdict(self), "exit_code": self.exit_code}

    def lines(self) -> list[str]:
        out = [f"explorer check {self.build}".rstrip(),
               f"model       {self.model}", f"kind        {self.kind}",
               f"logits      {self.logits}", f"tokenizer   {self.tokenizer}",
               f"embedding   {self.embedding}"]
        out += _listed("attention", self.attention)
        out += _listed("states", self.recurrent or ["none recorded"])
        if self.hidden_attention:
            out += _listed("unseen", self.hidden_attention)
        out.append(f"padding     {self.padding}")
        out += _listed("notes", self.notes)
        for title, verdicts in (("panels", self.panels), ("commands", self.commands)):
            out.append(title)
            for v in verdicts:
                text = f"  {v.status:<8} {v.name:<12} {v.why}".rstrip()
                out.append(text + (f"; fix: {v.fix}" if v.fix else ""))
        out.append("exit 0: everything this model can show is shown" if self.exit_code == 0 else
                   "exit 1: the panels and commands marked fix above are empty or fail; each line "
                   "says how to fix it")
        return out


def _listed(title: str, items: list[str]) -> list[str]:
    return [f"{title if i == 0 else '':<11} {item}" for i, item in enumerate(items)]


# -- the pieces other modules use (training's data checks) ----------------------------------------


def embedding_rows(model) -> int | None:
    """The rows of the user model's largest nn.Embedding (None: it has none): ids past them
    cannot be read, whichever embedding the adapter picks."""
    rows = [m.num_embeddings for m in model.inner.modules() if isinstance(m, nn.Embedding)]
    return max(rows) if rows else None


def _found_embedding(model, seq2seq: bool) -> bool:
    """The adapter finds the token embedding(s) the gradient panels start from."""
    labels = ("src_embedding", "tgt_embedding") if seq2seq else ("embedding",)
    return all(isinstance(getattr(model, label), nn.Embedding) for label in labels)


def _reads_source(model) -> bool:
    from explorer.families import family_of

    return family_of(model.config).has_source


def expect_logits(model, inputs: tuple, where: str) -> torch.Tensor:
    """The adapter's teacher-forced logits of `inputs`, checked: (B, T, V) with T the last
    input's length and V at least the tokenizer's size. Anything else is one UserError."""
    shapes = " and ".join(str(tuple(x.shape)) for x in inputs)
    try:
        logits = model(*inputs)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's forward may raise anything
        raise UserError(f"the model's forward failed on {where} of shape {shapes}: "
                        f"{type(exc).__name__}: {_line(exc)}") from None
    batch, length = inputs[-1].shape
    vocab = model.config.vocab_size
    if logits.dim() != 3 or logits.shape[0] != batch or logits.shape[2] < vocab:
        raise UserError(f"the model's forward returned {tuple(logits.shape)} for {where} of shape "
                        f"{shapes}; expected logits (B, T, V) = ({batch}, {length}, {vocab}): one "
                        "score per token of the tokenizer")
    return logits


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- the check ------------------------------------------------------------------------------------


def check_model_file(build: str, weights=None, tokenizer=None) -> Report:
    """`explorer check --model FILE.py:build [--weights] [--tokenizer]`; a UserError (exit 2)
    when it cannot be opened or used at all."""
    from explorer.usermodel.loader import open_model_file

    return check_workspace(open_model_file(build, weights=weights, tokenizer=tokenizer), build)


def open_checked(build: str, weights=None, tokenizer=None):
    """`--model FILE.py:build` as every command and the app open it: a model it cannot use
    (build()'s types, a tokenizer past the embedding, logits of the wrong shape on the reading's
    probe) is one UserError."""
    from explorer.usermodel.loader import open_model_file

    workspace = open_model_file(build, weights=weights, tokenizer=tokenizer)
    workspace.model.config.args = {}  # build() was called without arguments: a run reopens so
    return workspace


def check_workspace(workspace, build: str = "") -> Report:
    model = workspace.model
    reading = model.reading
    inner = model.inner
    seq2seq = workspace.is_seq2seq
    inputs = _probe_inputs(workspace)
    device = _device(inner)
    inputs = tuple(x.to(device) for x in inputs)
    was_training = inner.training
    inner.eval()
    try:
        ran: set[str] = set()
        outputs: list = []  # what the user's own forward returned, as written
        hooks = [m.register_forward_hook(lambda *_, name=name: ran.add(name))
                 for name, m in inner.named_modules() if name and _looks_like_attention(name, m)]
        hooks.append(inner.register_forward_hook(lambda _m, _a, output: outputs.append(output)))
        try:
            with torch.no_grad(), capture(inner, named=model.adapter.attention) as record:
                if reading.last_only:  # all the forward gives: (B, V) of the last position
                    logits = reading.newest(inner, inputs)[:, None]  # (B, 1, V)
                else:
                    logits = expect_logits(model, inputs, "a probe")
        finally:
            for hook in hooks:
                hook.remove()
        raw = _raw_output(outputs)
        try:
            padding = _padding(model, seq2seq, inputs)
        except Exception as exc:  # noqa: BLE001 - the user's forward on a padded batch
            padding = (f"not tried: the model failed on a padded batch "
                       f"({type(exc).__name__}: {_line(exc)})")
    finally:
        inner.train(was_training)
    every_position = not reading.last_only  # targets= or an Adapter(forward=) give them
    attention = _attention(reading, record, inner)
    self_attention = any(c.self_attention for c in record.attention)
    recurrent = _recurrent(inner, record)
    hidden = _hidden_attention(inner, ran, record)
    has_embedding = _found_embedding(model, seq2seq)
    report = Report(
        build=build,
        model=_describe_model(inner, was_training),
        kind=_describe_kind(model, inner, seq2seq),
        logits=_describe_logits(raw, logits, inputs, every_position),
        tokenizer=_describe_tokenizer(workspace),
        embedding=_describe_embedding(model),
        attention=attention, recurrent=recurrent, hidden_attention=hidden, padding=padding,
        notes=list(reading.notes))
    report.panels = _panels(seq2seq, bool(reading.attention), self_attention, hidden,
                            bool(record.recurrent) or bool(record.blocks),
                            any(isinstance(m, (nn.LSTM, nn.GRU)) for m in inner.modules()),
                            has_embedding, every_position)
    # decoding, scoring and evaluation group sources by length (explorer.decoding.batching)
    grouped = seq2seq and not model.handles_padding
    report.commands = _commands(grouped, every_position, self_attention, hidden, has_embedding)
    return report


def _probe_inputs(workspace) -> tuple:
    """A few of the tokenizer's ordinary ids (no special ones, no <unk>): (src (1, S), tgt_in
    (1, T)) or (ids (1, T),)."""
    config, tokenizer = workspace.model.config, workspace.tokenizer
    unk = tokenizer.special_id("unk") if hasattr(tokenizer, "special_id") else None
    specials = {config.start_id, config.eos_id, config.pad_id, unk}
    ordinary = [i for i in range(min(config.vocab_size, 64)) if i not in specials] or [0]
    ids = [ordinary[i % len(ordinary)] for i in range(5)]
    if not workspace.is_seq2seq:
        return (torch.tensor([[config.start_id, *ids[:4]]]),)
    return torch.tensor([ids[:3] + [config.eos_id]]), torch.tensor([[config.start_id, *ids[2::-1]]])


def _device(module: nn.Module) -> torch.device:
    parameter = next(module.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def _raw_output(outputs: list) -> str:
    """What the user's own forward returned in the probe (its first call), as written."""
    if not outputs:
        return "nothing from forward: the adapter's encode/step give the logits"
    output = outputs[0]
    if isinstance(output, torch.Tensor):
        return f"a tensor {tuple(output.shape)}"
    if isinstance(output, (tuple, list)):
        parts = [tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__ for x in output]
        return f"a {type(output).__name__} of {', '.join(map(str, parts))}"
    return f"{type(output).__name__}" + (" with .logits" if hasattr(output, "logits") else "")


def _padding(model, seq2seq: bool, inputs) -> str:
    """Whether a source padded in a batch with a longer one gets other logits than alone, and
    whether its greedy output changes."""
    if not seq2seq:
        return "language models: each prompt runs alone, never padded"
    from explorer.decoding import greedy_batch

    src, tgt_in = inputs
    pad = model.config.pad_id
    longer = torch.cat([src[:, :-1], src[:, :-1], src], dim=1)  # (1, 3S-2)
    padded = torch.full((2, longer.shape[1]), pad, dtype=src.dtype, device=src.device)
    padded[0, : src.shape[1]] = src[0]
    padded[1] = longer[0]
    reading = model.reading
    forward = (lambda *x: reading.newest(model.inner, x)) if reading.last_only else model
    with torch.no_grad():
        alone = torch.log_softmax(forward(src, tgt_in).float(), -1)
        together = torch.log_softmax(forward(padded, tgt_in.expand(2, -1)).float(), -1)[:1]
        greedy_alone = greedy_batch(model, [src[0].tolist()], max_len=8)[0].token_ids
        greedy_padded = greedy_batch(model, [src[0].tolist(), longer[0].tolist()], max_len=8)[0].token_ids
    gap = float((alone - together).abs().max())
    if gap <= 1e-4 and greedy_alone == greedy_padded:
        return f"does not change the output (log-probabilities within {gap:.1e})"
    decoded = "the same" if greedy_alone == greedy_padded else "another"
    grouped = ("the explorer runs sources of one length together" if not model.handles_padding
               else "yet the adapter says the model handles padding (pad_mask=True, or a mask it "
               "fills): sources are batched padded")
    return (f"changes the output: a source padded in a batch with a longer one gets "
            f"log-probabilities up to {gap:.3g} apart and {decoded} greedy output; {grouped}")


def _looks_like_attention(name: str, module: nn.Module) -> bool:
    """A module of the user's own class (not torch's layers) named like attention."""
    words = (name.rsplit(".", 1)[-1] + " " + type(module).__name__).lower()
    return any(w in words for w in ATTENTION_WORDS) and not type(module).__module__.startswith("torch.")


def _hidden_attention(inner, ran: set[str], record) -> list[str]:
    """Modules named like attention that ran in the probe with no attention recorded inside."""
    seen = {c.name for c in record.attention}
    hidden = []
    for name in sorted(ran):
        inside = any(s == name or s.startswith(name + ".") or name.startswith(s + ".")
                     for s in seen)
        mha = any(isinstance(m, nn.MultiheadAttention) for m in inner.get_submodule(name).modules())
        outer = any(name.startswith(h + ".") for h in hidden)
        if not inside and not mha and not outer:
            hidden.append(name)
    return [f"{name} ({type(inner.get_submodule(name)).__name__}): ran, but no attention weights "
            "were seen inside it (computed where the explorer cannot see them)" for name in hidden]


def _attention(reading, record, inner) -> list[str]:
    """One line per module whose attention the reading saw ("dotted.name: how, role, heads"), in
    the order of the probe's first calls; none: the reading's line on why."""
    if not reading.attention:
        return [f"none recorded: {reading.why_no_attention}"]
    softmaxed = {name for name, weights, _ in record.candidates.values()
                 if id(weights) in record.taken}
    first: dict[str, object] = {}
    for call in record.attention:  # a decoder loop calls one per position
        first.setdefault(call.name, call)
    names = [n for n in first if n in reading.attention]
    names += [n for n in reading.attention if n not in first]
    return [f"{name or '(top level)'}: " + (_attention_what(first[name], inner, name in softmaxed)
                                            if name in first else "recorded") for name in names]


def _attention_what(call, inner, softmaxed: bool) -> str:
    module = inner.get_submodule(call.name) if call.name else inner
    how = ("nn.MultiheadAttention" if isinstance(module, nn.MultiheadAttention)
           else f"a softmax in {type(module).__name__}" if softmaxed
           else f"F.scaled_dot_product_attention in {type(module).__name__}")
    role = "self-attention" if call.self_attention else "cross-attention"
    return f"{how}, {role}, {call.weights.shape[1]} head(s)"


def _recurrent(inner, record) -> list[str]:
    replayed = {r.name for r in record.recurrent}
    out = []
    for name, module in inner.named_modules():
        if isinstance(module, RECURRENT):
            how = ("hidden states and gates recorded" if name in replayed
                   else "not replayed (a projection, a ReLU cell or packed input): torch's output kept")
            out.append(f"{name}: nn.{type(module).__name__}, {module.num_layers} layer(s); {how}")
    blocks = sorted({name for name, _ in record.blocks})
    out += [f"{name}: Transformer block, residual stream recorded" for name in blocks]
    return out


def _describe_model(inner, was_training: bool) -> str:
    count = sum(p.numel() for p in inner.parameters())
    mode = "train() mode (probed in eval mode, then given back)" if was_training else "eval mode"
    try:
        where = f" ({Path(inspect.getfile(type(inner))).name})"
    except (TypeError, OSError):
        where = ""
    return f"{type(inner).__qualname__}{where}, {count:,} parameters, on {_device(inner)}, {mode}"


def _describe_kind(model, inner, seq2seq: bool) -> str:
    kind = "seq2seq" if seq2seq else "lm"
    try:
        signature = f"forward{inspect.signature(inner.forward)}"
    except (TypeError, ValueError):
        signature = "forward(...)"
    if model.adapter.kind:
        return f"{kind}: Adapter(kind={model.adapter.kind!r}); {signature}"
    how = "logits = model(src_ids, tgt_in_ids)" if seq2seq else "logits = model(ids)"
    return f"{kind}: read from {signature}, its required inputs ({how})"


def _describe_logits(raw: str, logits, inputs, every_position: bool) -> str:
    shapes = " and ".join(str(tuple(x.shape)) for x in inputs)
    where = ("every position" if every_position else
             f"{logits.shape[1]} of {inputs[-1].shape[1]} positions")
    return f"{tuple(logits.shape)} for inputs {shapes} ({where}); forward returned {raw}"


def _describe_tokenizer(workspace) -> str:
    tokenizer, config = workspace.tokenizer, workspace.model.config
    split = getattr(tokenizer, "split", None)
    what = type(tokenizer).__name__ + (f", split {split!r}" if isinstance(split, str) else "")
    specials = []
    for role, index in (("bos", config.start_id), ("eos", config.eos_id), ("pad", config.pad_id)):
        token = tokenizer.tokens([index])[0] if 0 <= index < tokenizer.vocab_size else "?"
        specials.append(f"{role} {_shown(token)}={index}")
    unk = tokenizer.special_id("unk") if hasattr(tokenizer, "special_id") else None
    if unk is not None:
        specials.append(f"unk {_shown(tokenizer.tokens([unk])[0])}={unk}")
    source = workspace.src_tokenizer
    extra = ("" if source is None or getattr(source, "vocab", None) == getattr(tokenizer, "vocab", 0)
             else f"; a source tokenizer of {source.vocab_size} tokens")
    return f"{what}, {tokenizer.vocab_size} tokens; {', '.join(specials)}{extra}"


def _shown(token: str) -> str:
    """A token as it reads on one line: quoted when it is blank or holds a space or a newline."""
    return token if token and token.isprintable() and token.strip() == token else repr(token)


def _describe_embedding(model) -> str:
    inner = model.inner
    names = {id(m): n for n, m in inner.named_modules()}
    parts = []
    for label in ("src_embedding", "tgt_embedding") if _reads_source(model) else ("embedding",):
        module = getattr(model, label)
        if module is not None:
            parts.append(f"{label.replace('_embedding', '') if '_' in label else 'input'} "
                         f"{names.get(id(module), '?')} ({module.num_embeddings} rows)")
    head = model.head
    if head is not None:
        parts.append(f"head {names.get(id(head), '?')} ({head.out_features} outputs)")
    return "; ".join(parts) or "none found"


def _panels(seq2seq, attention, self_attention, hidden, states, gates, embedding, every) -> list:
    """One verdict per panel of the registry, from what it `needs` (explorer.panel_registry)."""
    from explorer.panel_registry import EXPORT_ONLY_PANELS, PANELS

    names = [h.split(" ", 1)[0] for h in hidden]
    named = repr(names[0]) if len(names) == 1 else repr(names)
    hidden_attention = Verdict("", FIX, "empty: attention computed where the explorer cannot see "
                               "it: " + ", ".join(names),
                               "compute the weights with torch.softmax there and name the module: "
                               f"explorer.Adapter(attention={named}) (its softmaxes over the last "
                               "axis are taken as attention), or use nn.MultiheadAttention or "
                               "F.scaled_dot_product_attention (recorded as they are)")
    no_embedding = Verdict("", FIX, "no nn.Embedding found",
                           "Adapter(embedding='dotted.name', src_embedding=...)")
    verdicts = {
        "": Verdict("", OK),
        "references": Verdict("", OK, "fills with validation pairs (training data or "
                              "explorer.show(data=...))") if seq2seq else
        Verdict("", NOT_HERE, "a language model has no references to score"),
        "attention": Verdict("", OK) if attention else hidden_attention if hidden else
        Verdict("", NOT_HERE, "no attention in this model"),
        "self-attention": Verdict("", OK) if self_attention else hidden_attention if hidden else
        Verdict("", NOT_HERE, "no self-attention (rollout follows it through layers)"
                if attention else "no attention in this model"),
        "states": Verdict("", OK) if states else Verdict(
            "", NOT_HERE, "no nn.RNN/GRU/LSTM or nn.Transformer*Layer block to read"),
        "gates": Verdict("", OK) if gates else Verdict("", NOT_HERE, "no nn.LSTM or nn.GRU"),
        "embedding": Verdict("", OK) if embedding else no_embedding,
        "every-position": no_embedding if not embedding else Verdict("", OK) if every else
        Verdict("", FIX, "the forward gives logits at the last position only",
                "return logits at every position (e.g. forward(idx, targets) as in nanoGPT), "
                "or Adapter(forward=...) that does"),
    }
    return [replace(verdicts[entry.needs], name=entry.panel_id)
            for entry in PANELS + EXPORT_ONLY_PANELS]


def _commands(grouped, every, self_attention, hidden, embedding) -> list:
    teacher_forced = ("the forward gives logits at the last position only", "return logits at "
                      "every position (e.g. forward(idx, targets) as in nanoGPT), or "
                      "Adapter(forward=...) that does")
    verdicts = [Verdict("decode", OK, "sources of one length decoded together (no padding "
                        "mask)" if grouped else "")]
    for command in ("score", "evaluate", "train"):
        verdicts.append(Verdict(command, OK) if every else Verdict(command, FIX, *teacher_forced))
    if not embedding:
        verdicts.append(Verdict("attribute", FIX, "no nn.Embedding for the gradient methods",
                                "Adapter(embedding='dotted.name')"))
    elif not every:
        verdicts.append(Verdict("attribute", FIX, *teacher_forced))
    elif not self_attention:
        verdicts.append(Verdict("attribute", OK, "ig, saliency, grad-input, occlusion; rollout and "
                                "flow need self-attention" + (" (hidden here)" if hidden else "")))
    else:
        verdicts.append(Verdict("attribute", OK))
    verdicts.append(Verdict("export", OK, "the panels above"))
    verdicts.append(Verdict("fill", NOT_HERE, "fill needs a masked language model"))
    verdicts.append(Verdict("gui", OK))
    return verdicts
