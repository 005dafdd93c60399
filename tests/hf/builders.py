"""Tiny random Hugging Face models with tokenizers trained here, saved with save_pretrained.

Nothing is downloaded: each builder trains a small tokenizer (byte-level BPE, WordPiece, a
sentencepiece model, a word-level one) on a few sentences and saves a randomly initialised model.
"""

from __future__ import annotations

import json
import shutil
import warnings

import torch

CORPUS = [
    "the cat sat on the mat", "a dog ran in the park", "the bird sang a song",
    "my cat likes the warm sun", "the dog and the cat are friends", "a song for the bird",
    "das ist ein haus", "die katze sitzt auf der matte", "der hund rennt im park",
] * 4


def _fast(tokenizer_object, cls=None, **special):
    from transformers import PreTrainedTokenizerFast

    return (cls or PreTrainedTokenizerFast)(tokenizer_object=tokenizer_object, **special)


def _save(model, tokenizer, folder, generation=None):
    from transformers.utils import logging

    logging.disable_progress_bar()  # 5.24's "Writing model shards" bar: not the tested command's
    torch.manual_seed(0)
    model.eval()
    if generation is not None:  # no logits processors: the model's raw distribution
        for key, value in generation.items():
            setattr(model.generation_config, key, value)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def gpt2_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2TokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    end = "<|endoftext|>"
    return _fast(tok, GPT2TokenizerFast, bos_token=end, eos_token=end, unk_token=end)


def build_gpt2(folder, n_positions=64, **overrides):
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = gpt2_tokenizer()
    end = tokenizer.eos_token_id
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=n_positions, n_embd=32, n_layer=2,
                        n_head=4, bos_token_id=end, eos_token_id=end, **overrides)
    return _save(GPT2LMHeadModel(config), tokenizer, folder)


def bert_tokenizer():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=120, special_tokens=special))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return _fast(tok, BertTokenizerFast, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                 sep_token="[SEP]", mask_token="[MASK]")


def build_bert(folder, distil=False):
    from transformers import BertConfig, BertForMaskedLM, DistilBertConfig, DistilBertForMaskedLM

    tokenizer = bert_tokenizer()
    torch.manual_seed(0)
    if distil:
        config = DistilBertConfig(vocab_size=len(tokenizer), dim=32, n_layers=2, n_heads=4,
                                  hidden_dim=64, max_position_embeddings=64, pad_token_id=0)
        return _save(DistilBertForMaskedLM(config), tokenizer, folder)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                        pad_token_id=0)
    return _save(BertForMaskedLM(config), tokenizer, folder)


def build_marian(folder, work):
    """Marian with a real MarianTokenizer: a sentencepiece model trained here, vocab.json."""
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    work.mkdir(parents=True, exist_ok=True)
    (work / "corpus.txt").write_text("\n".join(CORPUS), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(work / "corpus.txt"), model_prefix=str(work / "sp"),
                                   vocab_size=60, model_type="unigram", pad_id=-1, bos_id=-1,
                                   eos_id=1, unk_id=2, minloglevel=2, hard_vocab_limit=False)
    piece = spm.SentencePieceProcessor(model_file=str(work / "sp.model"))
    vocab = {piece.id_to_piece(i): i for i in range(piece.get_piece_size())}
    vocab["<pad>"] = len(vocab)
    for name in ("source.spm", "target.spm"):
        shutil.copy(work / "sp.model", work / name)
    (work / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with warnings.catch_warnings():  # "Recommended: pip install sacremoses": not needed here
        warnings.simplefilter("ignore")
        tokenizer = MarianTokenizer(source_spm=str(work / "source.spm"),
                                    target_spm=str(work / "target.spm"), vocab=str(work / "vocab.json"))
    torch.manual_seed(0)
    pad = tokenizer.pad_token_id
    config = MarianConfig(vocab_size=len(tokenizer), d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                          decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=pad,
                          eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=pad,
                          forced_eos_token_id=None)
    return _save(MarianMTModel(config), tokenizer, folder, {"bad_words_ids": None, "forced_eos_token_id": None})


def word_tokenizer(specials=("<pad>", "</s>", "<unk>")):
    """A word-level fast tokenizer that appends </s> (T5's convention)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=list(specials)))
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return _fast(tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


def build_t5(folder):
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_layers=2,
                      num_heads=4, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return _save(T5ForConditionalGeneration(config), tokenizer, folder)
