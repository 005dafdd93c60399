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
    assert len(list(_sources())) > 50
