"""No analysis in explorer/ switches on a family name or on Hugging Face vs ours to find an
activation: that knowledge lives in the activation providers (explorer/analysis/activations/
providers/), the Hugging Face package itself (explorer/hf/) and the family registry
(explorer/families.py). A grep over the source, as the issue asks (issue 21)."""

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
# a provider claims the models of its own family prefix (the activation providers' registry)
NAME_ALLOWED = {"analysis/activations/providers/torch_modules.py": "startswith(\"user-\")"}


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
            if NAME_ALLOWED.get(relative, "\0") in code:
                continue
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
