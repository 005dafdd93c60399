"""One model, many readers (explorer/readers.py): a decode while training runs in another thread
sees one whole set of weights in eval mode, equal to a decode of that snapshot in a model of its own."""

from __future__ import annotations

import threading

import torch

from explorer.decoding import StepDecoder
from explorer.decoding.scoring import encode_context
from explorer.decoding.search import greedy
from explorer.readers import frozen_copy, reading
from explorer.training import Trainer
from seqmodels.config import build_model

SOURCE = "a b c d e"


def _reference(workspace, state: dict, context):
    """Greedy decode of `state` in a model of its own (built from the same config), in eval mode."""
    model = build_model(workspace.model.config)
    model.load_state_dict(state)
    return greedy(model.eval(), context, max_len=12, tokenizer=workspace.tokenizer)


def _training_in_background(workspace, config):
    trainer = Trainer(workspace, config)
    thread = threading.Thread(target=lambda: list(trainer.run()), daemon=True)
    thread.start()
    return trainer, thread


def test_decodes_during_training_see_whole_weights_in_eval_mode(tiny_workspace, tiny_config):
    workspace = tiny_workspace("transformer", dropout=0.3)  # dropout on: a decode must not use it
    context = encode_context(workspace, SOURCE)
    trainer, thread = _training_in_background(workspace, tiny_config(steps=100_000, lr=3e-2))
    steps_seen, checked = set(), 0
    try:
        while checked < 6 or len(steps_seen) < 3:
            # the shared model, read under the lock: weights and mode hold still for the decode
            with reading(workspace.model) as model:
                assert not any(m.training for m in model.modules())
                state = {k: v.clone() for k, v in model.state_dict().items()}
                steps_seen.add(workspace.step)
                shared = greedy(model, context, max_len=12, tokenizer=workspace.tokenizer)
                assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
            reference = _reference(workspace, state, context)
            assert shared.token_ids == reference.token_ids
            assert shared.token_logprobs == reference.token_logprobs
            # a frozen copy stepped through while training goes on decodes like its snapshot
            twin = frozen_copy(workspace.model)
            decoder = StepDecoder((twin, workspace.tokenizer, workspace.src_tokenizer), SOURCE,
                                  max_len=12)
            while decoder.step():
                pass
            stepped = decoder.output
            reference = _reference(workspace, twin.state_dict(), context)
            assert stepped.token_ids == reference.token_ids
            assert stepped.token_logprobs == reference.token_logprobs
            checked += 1
    finally:
        trainer.control.stop()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(steps_seen) >= 3  # the decodes really ran between different training steps
    assert workspace.model.training is False  # training ended by putting it in eval mode
