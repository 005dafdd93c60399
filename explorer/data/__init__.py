"""Data: readers, tokenizers, synthetic tasks and batching.

Readers and tasks need only the standard library; tokenizers load the `tokenizers` library for BPE
and batching needs torch, so import those modules directly:

    from explorer.data.readers import read_parallel, read_tsv, read_text
    from explorer.data.tasks import TASKS, make_task
    from explorer.data.tokenizers import CharTokenizer, WordTokenizer, BPETokenizer, load_tokenizer
    from explorer.data.batching import ParallelDataset, LMDataset, Batch, mask_tokens
"""
