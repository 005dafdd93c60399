"""A `models/` folder in the working directory (the README's `~/models/gpt2` invites one) must not
hide the project's pure-PyTorch package, now named `seqmodels` so that it cannot collide."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "resources" / "demo" / "dates-gru-additive"


def test_cli_and_api_work_beside_a_models_folder(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("raise ImportError('the user\\'s own models/')\n")
    env_path = str(ROOT)
    decoded = subprocess.run(
        [sys.executable, "-m", "explorer", "decode", "--checkpoint", str(DEMO), "--json", "2019-03-07"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": env_path, "PATH": ""}, timeout=120)
    assert decoded.returncode == 0, decoded.stderr
    assert json.loads(decoded.stdout.splitlines()[0])["hypotheses"][0]["text"]
    api = subprocess.run(
        [sys.executable, "-c", "import seqmodels; m = seqmodels.build_model(seqmodels.make_config("
         "'seq2seq', 'tiny', vocab_size=20, src_vocab_size=20)); print(seqmodels.count_parameters(m))"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": env_path, "PATH": ""}, timeout=120)
    assert api.returncode == 0, api.stderr
    assert int(api.stdout) > 0
