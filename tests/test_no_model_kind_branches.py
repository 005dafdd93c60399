"""No analysis in explorer/ switches on a family name or on Hugging Face vs ours to find an
activation: that knowledge lives in the activation providers (explorer/analysis/activations/
providers/), the Hugging Face package itself (explorer/hf/) and the family registry
(explorer/families.py). A grep over the source, as the issue asks (issue 21)."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1] / "explorer"
OWNERS = ("analysis/activations/providers/", "hf/", "families.py")
FORBIDDEN = {
    "transformers' own activation outputs": r"output_hidden_states|output_attentions",
    "a Hugging Face embedding getter": r"\.get_(input|output)_embeddings\(",
    "a family's residual-stream reader": r"\.residual_streams\b",
    "a dotted module path into the model": r"\bmodule_at\(",
    "a family name compared": r"family\.name\s*[=!]=|\.family\s*[=!]=\s*['\"]|[=!]=\s*['\"]hf-",
    "the Hugging Face adapter's class": r"\bHFAdapter\b|\bPreTrainedModel\b",
    "our model classes": r"isinstance\([^)]*\b(GPT|BERT|Transformer|Seq2Seq|RNNLanguageModel)\b",
}
# Positional tables and T5's relative bias are weights the positional panels read, not activations
ALLOWED = {"analysis/positional.py", "ui/panels/positional.py", "ui/panels/relative_bias.py"}
HF_CHECK = r"hasattr\(\w+, ['\"]hf['\"]\)"
# A family's name (or a Hugging Face model_type) is matched only by the registries that define
# them; everything else reads the entry's fields (has_source, recurrent, ...) (issue 27)
REGISTRIES = ("families.py", "hf/families.py", "hf/architectures.py", "hf/loader.py",
              "usermodel/families.py")
NAME_SWITCHES = {
    "a family name matched": r"family(\.name)?\.(endswith|startswith)\(|\[['\"]family['\"]\]\."
                             r"(endswith|startswith)\(|\bfamily(\.name)?\s*(==|!=)\s*['\"]",
    "a family name looked up in a literal": r"\.family\s+(not\s+)?in\s*[(\[{]['\"]",
    "a model_type compared": r"model_type\s*(==|!=|(not\s+)?in\s*[(\[{])",
}


def _sources():
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if not relative.startswith(OWNERS):
            yield relative, path.read_text(encoding="utf-8")


def test_no_analysis_finds_activations_by_model_kind():
    found = []
    for relative, text in _sources():
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            for what, pattern in FORBIDDEN.items():
                if re.search(pattern, code):
                    found.append(f"{relative}:{number}: {what}: {line.strip()}")
            if re.search(HF_CHECK, code) and relative not in ALLOWED:
                found.append(f"{relative}:{number}: a Hugging Face check: {line.strip()}")
    assert not found, "\n".join(found)


def test_no_code_outside_the_registries_switches_on_a_family_name():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in REGISTRIES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            found += [f"{relative}:{number}: {what}: {line.strip()}"
                      for what, pattern in NAME_SWITCHES.items() if re.search(pattern, code)]
    assert not found, "\n".join(found)


def test_the_grep_sees_the_branches_it_forbids():
    """The patterns catch the branches this layer replaced (the test is not vacuous)."""
    replaced = {
        "transformers' own activation outputs": "out = hf(input_ids=ids, output_hidden_states=True)",
        "a Hugging Face embedding getter": "module = model.get_input_embeddings()",
        "a family's residual-stream reader": "read = family.residual_streams(model, inputs)",
        "a dotted module path into the model": "return module_at(model, path)(inputs[index])",
        "a family name compared": 'if family.name == "gpt":',
        "the Hugging Face adapter's class": "if isinstance(model, HFAdapter):",
        "our model classes": "if isinstance(model, (GPT, BERT)):",
    }
    for what, line in replaced.items():
        assert re.search(FORBIDDEN[what], line), what
    assert re.search(HF_CHECK, 'if hasattr(model, "hf"):')
    switches = {  # the branches issue 27 moved into registry fields
        "a family name matched": ['cls = UserSeq2Seq if config.family.endswith("seq2seq") else UserLM',
                                  'seq2seq = fields["family"].endswith("seq2seq")',
                                  'if family == "gpt":'],
        "a family name looked up in a literal": ['if config.family in ("gpt", "bert"):'],
        "a model_type compared": ['sub_layers = SUB[x] if config.model_type in ("t5",) else {}',
                                  'if hf.config.model_type == "t5":'],
    }
    for what, lines in switches.items():
        assert all(re.search(NAME_SWITCHES[what], line) for line in lines), what
    assert len(list(_sources())) > 50


# ---- by the registry's own names and classes (issue 27) ------------------------------------------

PACKAGES = ROOT.parent
# Where a family's name or class may appear: the registry entries themselves, and these (why)
ENTRY_FILES = {
    "explorer/families.py": "the app side of the registry",
    "explorer/hf/families.py": "the Hugging Face families' entries",
    "explorer/hf/architectures.py": "the Hugging Face architectures' entries",
    "explorer/usermodel/families.py": "the user-model families' entries",
    "seqmodels/families.py": "the model side of the registry",
    "seqmodels/config.py": "each config class names its family (the entry's config class)",
    "seqmodels/rnn_lm.py": "declares its MODEL_FAMILIES entry",
    "seqmodels/seq2seq.py": "declares its MODEL_FAMILIES entry",
    "seqmodels/transformer.py": "declares its MODEL_FAMILIES entries",
}
NAME_LITERAL_ALLOWED = {
    ("explorer/training/setup.py", "rnn-lm"): "DEFAULT_FAMILIES: what a new model is built as "
                                             "when the data changes kind (a default, no branch)",
    ("explorer/training/setup.py", "gpt"): "TRAIN_DEFAULT_FAMILIES: `explorer train`'s default",
    ("explorer/demo.py", "transformer"): "which demo checkpoint opens first, and how it is built",
    ("explorer/hf/activations.py", "bert"): "transformers' model_type 'bert' in the Hugging Face "
                                            "provider's table of block sub-modules, no family",
}
# "lm" and "seq2seq" are also the kinds of data (texts or pairs: TaskSpec.kind, DataSpec.kind);
# the data kind "seq2seq" is no family switch. `family == "seq2seq"` is still caught above.
DATA_KINDS = ("lm", "seq2seq")


def _registered():
    """Every family name and every model or config class the registries hold."""
    import explorer  # noqa: F401  (registers the Hugging Face and user-model families)
    import explorer.families as families
    from seqmodels.families import model_families

    names = set(families.families()) | set(families._UNLISTED)  # unlisted: hf-*, user-*
    classes = {cls.__name__ for entry in model_families().values()
               for cls in (entry.config_class, entry.build) if isinstance(cls, type)}
    return names, classes


def _trees():
    for package in ("explorer", "seqmodels"):
        for path in sorted((PACKAGES / package).rglob("*.py")):
            relative = path.relative_to(PACKAGES).as_posix()
            if relative not in ENTRY_FILES:
                yield relative, ast.parse(path.read_text(encoding="utf-8"))


def _isinstance_classes(node) -> set[str]:
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"
            and len(node.args) == 2):
        return set()
    return {getattr(n, "id", None) or getattr(n, "attr", None) for n in ast.walk(node.args[1])}


def _name_tests(node, names) -> list[str]:
    """Family names `node` holds as a literal, or matches by a prefix or suffix."""
    if isinstance(node, ast.Constant) and node.value in names - set(DATA_KINDS):
        return [node.value]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith") and node.args):
        arg = node.args[0]
        parts = [e.value for e in (arg.elts if isinstance(arg, ast.Tuple) else [arg])
                 if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        match = str.startswith if node.func.attr == "startswith" else str.endswith
        return [f"{node.func.attr}({part!r})" for part in parts
                if any(match(name, part) for name in names)]
    return []


def _family_switches(trees, names, classes) -> list[str]:
    found = []
    for relative, tree in trees:
        for node in ast.walk(tree):
            for cls in sorted(_isinstance_classes(node) & classes):
                found.append(f"{relative}:{node.lineno}: isinstance against {cls}")
            for name in _name_tests(node, names):
                if (relative, name) not in NAME_LITERAL_ALLOWED:
                    found.append(f"{relative}:{node.lineno}: family name {name}")
    return found


def test_no_code_outside_the_registries_names_a_family_or_its_classes():
    """explorer/ and seqmodels/ read a family's entry (has_source, recurrent, layers, cell_field
    ...) instead of testing a model's class or comparing, prefixing or listing a family name."""
    names, classes = _registered()
    assert {"rnn-lm", "gpt", "hf-seq2seq", "user-lm"} <= names
    assert {"RNNLMConfig", "TransformerConfig", "GPT", "Seq2Seq", "UserModelConfig"} <= classes
    found = _family_switches(_trees(), names, classes)
    assert not found, "\n".join(found)
    for relative, name in NAME_LITERAL_ALLOWED:  # the allow-list holds no stale entries
        tree = ast.parse((PACKAGES / relative).read_text(encoding="utf-8"))
        assert any(name in _name_tests(node, names) for node in ast.walk(tree)), (relative, name)


def test_the_registry_grep_sees_the_switches_issue_27_removed():
    names, classes = _registered()
    removed = {  # the lines this layer replaced with registry fields
        "explorer/ui/panels/gradients.py":
            "trained = {config.cell: workspace.model} if isinstance(config, RNNLMConfig) else {}",
        "explorer/analysis/activations/providers/ours.py":
            "return isinstance(model, (Transformer, GPT, BERT, Seq2Seq, RNNLanguageModel))",
        "explorer/analysis/activations/providers/torch_modules.py":
            'return isinstance(family, str) and family.startswith("user-")',
        "explorer/analysis/probe.py": 'config = make_config("rnn-lm", cell=cell)',
        "explorer/x.py": 'seq2seq = fields["family"].endswith("seq2seq")',
    }
    for relative, line in removed.items():
        assert _family_switches([(relative, ast.parse(line.strip()))], names, classes), line
    # the data kind is no family; a function that happens to share a name is no isinstance
    assert not _family_switches([("explorer/x.py", ast.parse(
        'if kind == "seq2seq":\n    pairs = isinstance(x, tuple)'))], names, classes)
