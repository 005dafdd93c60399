"""A user's model as a Workspace: from objects (`explorer.show`), from `FILE.py:build`, and from the
run checkpoints a Recorder writes.

    workspace = make_workspace(model, tokenizer, Adapter(kind="seq2seq"))
    workspace = open_model_file("my_model.py:build", weights="model.pt", tokenizer=None)

`build()` returns the model and its tokenizer, and optionally an Adapter: `(model, tokenizer)`,
`(model, tokenizer, adapter)` or a dict with those keys. The app imports only code the user named
(`--model`, File ▸ Open model code…, `explorer.show`, a Recorder in this process): a checkpoint's
`build` is never imported on its own. Weights come from safetensors, or torch.load with
weights_only=True (no pickled code runs).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

from explorer.data.tasks import DATA_KINDS, PAIRS
from explorer.errors import UserError
from explorer.usermodel.families import UserModelConfig, family_name

# builds ("module:function" / "file.py:function") the user named in this process
_NAMED: set[str] = set()
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin")


def allow(build: str) -> None:
    """The user named this code: loading a checkpoint that it builds may import it."""
    _NAMED.add(_canonical(build))


def _canonical(build: str) -> str:
    where, _, function = build.rpartition(":")
    if where.endswith(".py"):
        where = str(Path(where).expanduser().resolve())
    return f"{where}:{function}"


def split_target(build: str) -> tuple[str, str]:
    where, sep, function = build.rpartition(":")
    if not sep or not where or not function.isidentifier():
        raise UserError(f"--model {build}: expected FILE.py:function or module:function, e.g. "
                        "my_model.py:build")
    return where, function


def import_function(build: str):
    """The function `build` names, importing its file or module (the user named it). A file
    imports like a script: its folder is importable while it loads (`with as_script(...)`)."""
    where, function = split_target(build)
    if where.endswith(".py"):
        path = Path(where).expanduser()
        if not path.is_file():
            raise UserError(f"{path}: no such model file")
        name = f"explorer_user_{abs(hash(str(path.resolve())))}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look their module up there
        try:
            with as_script(path):
                spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 - the user's code may raise anything
            sys.modules.pop(name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise UserError(f"{path}: raised {type(exc).__name__} on import: {_line(exc)}") from None
    else:
        try:
            module = importlib.import_module(where)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise UserError(f"{where}: cannot import ({type(exc).__name__}: {_line(exc)})") from None
    target = getattr(module, function, None)
    if not callable(target):
        raise UserError(f"{where}: has no function {function!r} (--model {where}:{function})")
    return target


@contextlib.contextmanager
def as_script(path: Path):
    """The model file's folder first on sys.path, as when Python runs the file as a script, so
    `from model import GPT` finds model.py beside it. An imported module of the same name as one of
    the folder's (a `model` from elsewhere) is set aside meanwhile. Afterwards sys.path is as
    before, and so is sys.modules: the folder's modules imported meanwhile leave it (the next load
    imports them afresh, so two folders' model.py never mix) and the set-aside ones come back."""
    folder = path.expanduser().resolve().parent
    saved_path = list(sys.path)
    local = {p.stem for p in folder.glob("*.py")} | {
        p.parent.name for p in folder.glob("*/__init__.py")}
    set_aside = {name: module for name, module in sys.modules.items()
                 if name.partition(".")[0] in local and not _inside(module, folder)}
    for name in set_aside:
        del sys.modules[name]
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name in [n for n, m in list(sys.modules.items()) if n not in before
                     and _inside(m, folder) and not n.startswith("explorer_user_")]:
            del sys.modules[name]
        sys.modules.update(set_aside)


def _inside(module, folder: Path) -> bool:
    where = getattr(module, "__file__", None)
    try:
        return bool(where) and Path(where).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def call_build(build: str, args: dict | None = None):
    """(model, tokenizer, Adapter) from the user's build function."""
    from explorer.usermodel.adapter import Adapter

    function = import_function(build)
    where = split_target(build)[0]
    try:
        with as_script(Path(where)) if where.endswith(".py") else contextlib.nullcontext():
            result = function(**(args or {}))
    except Exception as exc:  # noqa: BLE001 - the user's code
        raise UserError(f"{build}: raised {type(exc).__name__}: {_line(exc)}") from None
    if isinstance(result, dict):
        result = (result.get("model"), result.get("tokenizer"), result.get("adapter"))
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
        raise UserError(f"{build}: must return (model, tokenizer) or (model, tokenizer, adapter), "
                        f"got {type(result).__name__}")
    model, tokenizer, adapter = (*result, None) if len(result) == 2 else result
    _check_types(build, model, tokenizer, adapter)
    return model, tokenizer, adapter or Adapter()


def _check_types(build: str, model, tokenizer, adapter) -> None:
    """One line naming each of build()'s results of the wrong type: (torch.nn.Module, tokenizer[,
    explorer.Adapter]) (what a tokenizer may be, explorer.usermodel.tokenizer.as_tokenizer says)."""
    import torch

    from explorer.usermodel.adapter import Adapter

    wrong = []
    if not isinstance(model, torch.nn.Module):
        wrong.append(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    if isinstance(tokenizer, (torch.nn.Module, int, float, bool)):
        wrong.append("tokenizer: expected a tokenizer or a vocabulary, got "
                     f"{type(tokenizer).__name__}")
    if not isinstance(adapter, (Adapter, type(None))):
        wrong.append(f"adapter: expected explorer.Adapter, got {type(adapter).__name__}")
    if wrong:
        swapped = isinstance(tokenizer, torch.nn.Module) and not isinstance(model, torch.nn.Module)
        raise UserError(f"{build}: returned the wrong types ({'; '.join(wrong)})"
                        + (": the model comes first" if swapped else ""))


def make_workspace(model, tokenizer, adapter=None, build: str = "", args: dict | None = None,
                   src_tokenizer=None):
    """A Workspace on the user's model: the adapter around it, the tokenizers wrapped."""
    import torch

    from explorer.usermodel.adapter import Adapter, infer_kind, is_recurrent, wrap_model
    from explorer.usermodel.tokenizer import as_tokenizer, special_ids
    from explorer.workspace import Workspace

    adapter = adapter or Adapter()
    if not isinstance(model, torch.nn.Module):
        raise UserError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(adapter, Adapter):
        raise UserError(f"adapter: expected explorer.Adapter, got {type(adapter).__name__}")
    kind = adapter.kind or infer_kind(model)
    if kind not in DATA_KINDS:
        raise UserError(f"kind: expected 'lm' or 'seq2seq', got {kind!r}")
    target = as_tokenizer(tokenizer, adapter.split)
    source = src_tokenizer if src_tokenizer is not None else adapter.src_tokenizer
    source = as_tokenizer(source, adapter.split) if source is not None else None
    if kind == PAIRS:
        source = source or target
        source = source.as_source() if hasattr(source, "as_source") else source
    start, eos, pad = special_ids(target, adapter.bos, adapter.eos, adapter.pad)
    config = UserModelConfig(
        family=family_name(kind == PAIRS, is_recurrent(model)), build=build, args=args,
        vocab_size=target.vocab_size,
        src_vocab_size=source.vocab_size if source is not None else None,
        start_id=start, eos_id=eos, pad_id=pad, max_len=adapter.max_len)
    _check_embedding(model, adapter, config, kind == PAIRS)
    wrapped = wrap_model(model, config, adapter)
    return Workspace(model=wrapped, tokenizer=target,
                     src_tokenizer=source if kind == PAIRS else None)


def _check_embedding(model, adapter, config, seq2seq: bool) -> None:
    """Before the first forward: each tokenizer's ids fit the embedding that reads them, the one
    the adapter names, else the largest (a position table may come first, and may be smaller)."""
    sides = [("source tokenizer", config.src_vocab_size, adapter.src_embedding)] if seq2seq else []
    for what, vocab, name in sides + [("tokenizer", config.vocab_size, adapter.embedding)]:
        rows = _embedding_rows(model, name)
        if rows and max(rows.values()) < vocab:
            path = max(rows, key=rows.get)
            raise UserError(f"the {what} has {vocab} tokens but the model's embedding {path!r} has "
                            f"{rows[path]} rows: ids past them cannot be read (return the "
                            "tokenizer the model was built for, or size the embedding by it)")


def _embedding_rows(model, name: str | None) -> dict[str, int]:
    """{dotted name: rows} of the embedding `name`, or of every nn.Embedding."""
    import torch

    if name:
        try:
            module = model.get_submodule(name)
        except AttributeError:
            raise UserError(f"the model has no module {name!r}") from None
        rows = getattr(module, "num_embeddings", None)
        return {} if rows is None else {name: rows}
    return {path: m.num_embeddings for path, m in model.named_modules()
            if isinstance(m, torch.nn.Embedding)}


def load_weights(model, path: str | Path) -> None:
    """The user's state dict from safetensors, or torch.load(weights_only=True); a one-line
    UserError when it does not fit the model."""
    import torch

    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"{path}: no such weights file")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            state = load_file(str(path))
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file
            raise UserError(f"{path}: not a safetensors file ({_line(exc)})") from None
    else:
        from explorer.tensor_file import load_tensors

        state = load_tensors(path)
    for key in ("state_dict", "model_state_dict", "model"):  # common checkpoint layouts
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UserError(f"{path}: not a state dict (a mapping of names to tensors)")
    inner = getattr(model, "inner", model)
    own = inner.state_dict()
    _fill_tied(own, state)
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    wrong = [f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in own
             if k in state and state[k].shape != own[k].shape]
    if missing or unexpected or wrong:
        parts = ([f"missing {_few(missing)}"] if missing else []) + (
            [f"unexpected {_few(unexpected)}"] if unexpected else []) + (
            [f"shapes differ: {_few(wrong)}"] if wrong else [])
        raise UserError(f"{path}: the weights do not fit the model ({'; '.join(parts)})")
    inner.load_state_dict(state)


def _fill_tied(own: dict, state: dict) -> None:
    """safetensors stores tied weights once: a missing name takes the tensor of a name that
    shares its storage in the model."""
    groups: dict[tuple, list[str]] = {}
    for key, tensor in own.items():
        groups.setdefault((tensor.data_ptr(), tuple(tensor.shape)), []).append(key)
    for names in groups.values():
        present = [k for k in names if k in state]
        for key in names:
            if key not in state and present and len(names) > 1:
                state[key] = state[present[0]]


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def read_tokenizer(path: str | Path):
    """--tokenizer: a Hugging Face tokenizer folder, a tokenizers' tokenizer.json, or a text file
    of one token per line (the vocabulary, split on whitespace)."""
    path = Path(path).expanduser()
    if path.is_dir():
        try:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:  # noqa: BLE001
            raise UserError(f"{path}: not a Hugging Face tokenizer folder ({_line(exc)})") from None
    if path.suffix == ".json":
        try:
            from tokenizers import Tokenizer

            return Tokenizer.from_file(str(path))
        except BaseException as exc:  # noqa: BLE001 - the Rust library's panics too
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise UserError(f"{path}: not a tokenizers tokenizer.json ({_line(exc)})") from None
    if path.is_file():
        return [line.rstrip("\n") for line in path.read_text(encoding="utf-8").splitlines() if line]
    raise UserError(f"{path}: no such tokenizer (a Hugging Face folder, a tokenizer.json or a "
                    "vocabulary .txt)")


def open_model_file(build: str, weights: str | Path | None = None, tokenizer=None):
    """`--model FILE.py:build [--weights FILE] [--tokenizer PATH]` as a Workspace."""
    allow(build)
    model, own_tokenizer, adapter = call_build(build)
    if tokenizer is not None:
        own_tokenizer = read_tokenizer(tokenizer) if isinstance(tokenizer, (str, Path)) else tokenizer
    if own_tokenizer is None:
        raise UserError(f"{build}: returned no tokenizer; return one or pass --tokenizer")
    if weights is not None:
        load_weights(model, weights)
    getattr(model, "eval")()
    return make_workspace(model, own_tokenizer, adapter, build=_canonical(build))


def build_from_config(config: UserModelConfig):
    """The model registry's builder (seqmodels.build_model): rebuild from `config.build`, which
    the user must have named in this process."""
    _check_named(config.build, "")
    model, tokenizer, adapter = call_build(config.build, config.args)
    return make_workspace(model, tokenizer, adapter, config.build, config.args).model


def _check_named(build: str, where: str) -> None:
    module = build.rpartition(":")[0]
    if build and (_canonical(build) in _NAMED or module.startswith("explorer.") or (
            not module.endswith(".py") and module in sys.modules)):
        return  # named by the user, the explorer's own code, or already imported
    raise UserError(f"{where or 'this checkpoint'}: its model is built by your code "
                    f"({build or 'not recorded'}); open it with --model FILE.py:build --weights "
                    f"{Path(where or '.') / 'model.safetensors'} (the app imports only code you name)")


def load_user_checkpoint(directory: Path, load_state: bool = True, metrics_rows=None):
    """A user model's checkpoint or run folder: its code (named by the user) rebuilds the model,
    then model.safetensors fills it."""
    from explorer.training.checkpoint import METRICS_FILE, WEIGHTS_FILE, _read_history

    directory = Path(directory)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    fields = config["model"]
    build, args = fields.get("build", ""), fields.get("args")
    _check_named(build, str(directory))
    if args is None:
        raise UserError(f"{directory}: its build arguments were not recorded; open it with "
                        f"--model FILE.py:build --weights {directory / WEIGHTS_FILE}")
    model, tokenizer, adapter = call_build(build, args)
    if adapter.kind is None:  # the family recorded says what the model reads
        from explorer.families import get_family

        reads_source = get_family(fields["family"]).has_source
        adapter = replace(adapter, kind="seq2seq" if reads_source else "lm")
    load_weights(model, directory / WEIGHTS_FILE)
    model.eval()
    workspace = make_workspace(model, tokenizer, adapter, build, args)
    workspace.step = int(config.get("step", 0))
    history, workspace.history_bad_lines = _read_history(directory / METRICS_FILE, metrics_rows)
    workspace.history = [r for r in history if r["step"] <= workspace.step]
    return workspace
