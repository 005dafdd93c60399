"""A Hugging Face tokenizer behind the interface of explorer.data.tokenizers.

Ids are the tokenizer's own. `encode(text)` is exactly `tokenizer(text)["input_ids"]`: the special
tokens the model expects (Marian's and T5's </s>, BERT's [CLS] ... [SEP]) come from the tokenizer,
and explorer.decoding adds nothing (`adds_special_tokens`).
"""

from __future__ import annotations

from explorer.data.tokenizers import MASK_MARKERS, VISIBLE_MARKS


class HFTokenizer:
    kind = "hf"
    adds_special_tokens = True

    def __init__(self, hf_tokenizer, eos_id: int | None = None):
        self.hf = hf_tokenizer
        self.eos_id = hf_tokenizer.eos_token_id if eos_id is None else eos_id

    @property
    def vocab_size(self) -> int:
        return len(self.hf)

    @property
    def mask_token(self) -> str | None:
        return self.hf.mask_token

    @property
    def mask_id(self) -> int | None:
        return self.hf.mask_token_id

    def encode(self, text: str) -> list[int]:
        return list(self.hf(text)["input_ids"])

    def encode_masked(self, text: str) -> list[int]:
        """`encode`, with [MASK] and <mask> both read as the model's own mask token."""
        if self.mask_token is not None:
            for marker in MASK_MARKERS:
                text = text.replace(marker, self.mask_token)
        return self.encode(text)

    def encode_target(self, text: str) -> list[int]:
        """A target as the model is trained on it (`tokenizer(text_target=...)`), ending in eos."""
        ids = list(self.hf(text_target=text)["input_ids"])
        if self.eos_id is not None and (not ids or ids[-1] != self.eos_id):
            ids.append(self.eos_id)
        return ids

    def decode(self, ids) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=True)

    def id_to_token(self, index: int) -> str:
        return self.tokens([index])[0]

    def token_to_id(self, token: str) -> int | None:
        """The id of one token written as the tokenizer does ("Ġdogs", "▁Hund") or as a label
        shows it ("␣dogs"); None when it is not in the vocabulary."""
        vocab = self.hf.get_vocab()
        for written in (token, token.replace("␣", "Ġ").replace("⏎", "Ċ"), token.replace("␣", "▁")):
            if written in vocab:
                return vocab[written]
        return None

    def tokens(self, ids) -> list[str]:
        """The tokenizer's token strings; ids past its vocabulary (the model's padding rows,
        e.g. T5's 32100..32127) read <id N>."""
        ids = [int(i) for i in ids]
        tokens = self.hf.convert_ids_to_tokens(ids)
        return [t.translate(VISIBLE_MARKS) if t is not None else f"<id {i}>" for t, i in zip(tokens, ids)]

    def save(self, directory, prefix: str = "") -> None:
        self.hf.save_pretrained(str(directory))
