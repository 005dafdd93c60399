"""Your own PyTorch model in the explorer: `explorer.show(model, tokenizer)`, `--model FILE.py:build`.

    adapter.py    the user's module behind our models' interface (forward with trace, start, step)
    call.py       how the user's forward is called and read: masks it takes, a generator, targets=
                  for every position, stepping through encode/step; one line per choice (notes)
    capture.py    forward hooks (and a TorchFunctionMode for F.scaled_dot_product_attention) that
                  record attention and recurrent states, attached only while a trace is asked for
    tokenizer.py  a Hugging Face tokenizer, a tokenizers.Tokenizer or a vocabulary list, wrapped
    loader.py     `build()` files, weights, workspaces, and the run checkpoints a Recorder writes
    families.py   the four unlisted families (torch-free)
    training.py   training them: the family's feed (one source length per batch) and attach_data
    check.py      `explorer check`: what the explorer sees in the model, and each panel's verdict
"""
