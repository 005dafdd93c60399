"""explorer.runtime: the allocator setting every `explorer` command applies at start-up."""

import platform
import sys

import pytest

from explorer import cli
from explorer.runtime import tune_allocator


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="mallopt is glibc's")
def test_glibc_takes_the_setting():
    assert tune_allocator() is True


def test_off_linux_nothing_is_touched(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert tune_allocator() is False


def test_every_command_applies_it_before_it_runs(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(cli, "tune_allocator", lambda: calls.append("tuned"))
    hypotheses, references = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hypotheses.write_text("the cat sat on the mat\n")
    references.write_text("the cat sat on the mat\n")
    assert cli.main(["bleu", str(hypotheses), str(references)]) == 0
    assert calls == ["tuned"]
    assert "BLEU = 100.00" in capsys.readouterr().out
