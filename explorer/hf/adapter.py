"""A Hugging Face model behind the interface our own models have (docs/architecture.md).

    logits = model(tokens, trace=False)                     # causal and masked LMs
    logits = model(src, tgt_in, src_pad_mask=None, trace=False)   # encoder-decoders
    state = model.start(src=None, src_pad_mask=None, batch_size=1)
    logits, state, attn = model.prefill(prompt, state)      # causal LMs: the prompt in one pass
    logits, state, attn = model.step(tokens, state)
    state = model.reorder_state(state, index)

so explorer.decoding's greedy, beam, sampling, StepDecoder and teacher-forced scoring run unchanged.
The transformer is transformers' own class; the state holds its own past_key_values (a
`transformers.Cache`). Attention weights are only computed when asked for (a trace, or the
cross-attention an encoder-decoder's step reports): for those calls the model switches to the
'eager' implementation, otherwise it keeps its fused one (sdpa).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from dataclasses import dataclass

import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput

import explorer.hf.families  # noqa: F401 - registers the hf-* families with explorer.families
from seqmodels.trace import AttentionMap, Trace


# Calls that want weights switch the model to eager attention and back; a decoding worker and a
# probe may run at once, so the switch is held for the whole call (other calls may run eager).
_SWITCH_LOCK = threading.RLock()


@dataclass
class HFModelConfig:
    """What the explorer needs to know of a Hugging Face model; `model.config` of an adapter."""

    family: str  # hf-causal-lm, hf-seq2seq or hf-masked-lm
    model_type: str  # transformers' model_type (gpt2, marian, t5, bert, ...)
    vocab_size: int
    max_len: int | None  # positions of the decoder (LM: prompt + output); None: no fixed table
    max_src_len: int | None  # positions of the encoder (and of a masked LM)
    start_id: int | None  # causal: the bos an empty prompt starts from; seq2seq: decoder start
    eos_id: int | None  # ends a hypothesis
    pad_id: int  # fed to finished rows and used to pad sources
    mask_id: int | None = None  # masked LMs
    path: str = ""  # the folder it was opened from


class HFAdapter(nn.Module):
    """Common part: the wrapped model (`.hf`), its config, and attention-weight switching."""

    def __init__(self, hf_model, config: HFModelConfig):
        super().__init__()
        self.hf = hf_model
        self.config = config
        self._fused = self._switchable = None  # the fused kernel, when the model can switch to it
        if getattr(hf_model, "_supports_sdpa", False) and hf_model._can_set_attn_implementation():
            try:
                hf_model.set_attn_implementation("sdpa")
                self._fused, self._switchable = "sdpa", True
            except (ValueError, ImportError):  # this architecture has no sdpa path: stay eager
                pass
        self.train(hf_model.training)  # a new Module says training; the wrapped model decides
        self.forbidden = forbidden_tokens(hf_model)  # (N,) ids that never come out, or None
        # the decoding cache's name: `cache` since transformers 5.2x, whose `past_key_values`
        # is deprecated (to go in 5.40); older 5.x releases know only `past_key_values`
        parameters = inspect.signature(hf_model.forward).parameters
        self._cache_name = "cache" if "cache" in parameters else "past_key_values"

    def _cached(self, out, **kwargs):
        """`self.hf(**kwargs)` with the decoding cache `out` (None for a first step) -> (its
        output, the new cache)."""
        result = self.hf(**kwargs, **{self._cache_name: out}, use_cache=True)
        return result, result[self._cache_name]

    def _allowed(self, logits: torch.Tensor) -> torch.Tensor:
        """The model's logits with the tokens its generation config forbids set to -inf; over
        the target vocabulary only (hf-t5 shares one table with a larger source vocabulary)."""
        logits = logits[..., : self.config.vocab_size]
        if self.forbidden is None:
            return logits
        logits = logits.clone()
        logits[..., self.forbidden.to(logits.device)] = -torch.inf
        return logits

    @contextlib.contextmanager
    def attention_weights(self, wanted: bool = True):
        """Eager attention inside the block when weights are wanted; the fused kernel otherwise."""
        if not (wanted and self._switchable):
            yield
            return
        with _SWITCH_LOCK:  # another thread's block must not switch back while this one runs
            self.hf.set_attn_implementation("eager")
            try:
                yield
            finally:
                self.hf.set_attn_implementation(self._fused)

    def reorder_state(self, state: dict, index: torch.Tensor) -> dict:
        """Beam search: pick / duplicate batch rows of every cached tensor (the Cache in place)."""
        reordered = {}
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                value = value.index_select(0, index.to(value.device))
            elif value is not None and hasattr(value, "reorder_cache"):
                value.reorder_cache(index.to(self._device()))
            reordered[key] = value
        return reordered

    def _device(self) -> torch.device:
        return next(self.hf.parameters()).device

    def _check_length(self, length: int, limit: int | None, what: str) -> None:
        if limit is not None and length > limit:
            raise ValueError(f"the {what} has {length} tokens; the model holds at most {limit} "
                             f"positions")


def forbidden_tokens(hf_model) -> torch.Tensor | None:
    """Tokens that transformers' generate never produces for this model: one-token bad_words_ids
    (Marian's <pad>) and suppress_tokens. Longer bad-word sequences, forced BOS/EOS and
    repetition penalties are not applied: they are search rules, not the model's distribution."""
    generation = getattr(hf_model, "generation_config", None)
    ids = [words[0] for words in (getattr(generation, "bad_words_ids", None) or ()) if len(words) == 1]
    ids += list(getattr(generation, "suppress_tokens", None) or ())
    return torch.tensor(sorted(set(ids)), dtype=torch.long) if ids else None


def _maps(kind: str, attentions) -> list[AttentionMap]:
    return [AttentionMap(kind, layer, weights) for layer, weights in enumerate(attentions or ())]


def _hidden(prefix: str, states) -> dict[str, list[torch.Tensor]]:
    """hidden_states[0] is the embedding output ("{prefix}.embed", the residual stream before the
    first block, for the hidden panel); block k's output is hidden_states[k + 1]."""
    if not states:
        return {}
    return {f"{prefix}.embed": [states[0]],
            **{f"{prefix}.layer{k}": [h] for k, h in enumerate(states[1:])}}


class HFCausalLM(HFAdapter):
    """GPT-2 and any AutoModelForCausalLM: continues a prompt."""

    def forward(self, tokens, pad_mask=None, trace=False):
        mask = None if pad_mask is None else (~pad_mask).long()  # HF: 1 = attend
        with self.attention_weights(trace):
            out = self.hf(input_ids=tokens, attention_mask=mask, use_cache=False,
                          output_attentions=trace, output_hidden_states=trace)
        logits = self._allowed(out.logits)  # (B, T, V)
        if not trace:
            return logits
        return logits, Trace(attention=_maps("decoder", out.attentions),
                                 hidden=_hidden("decoder", out.hidden_states))

    def start(self, src=None, src_pad_mask=None, batch_size: int = 1) -> dict:
        return {"past": None}

    def prefill(self, prompt: torch.Tensor, state: dict):
        """prompt (B, P) -> (logits (B, V) of the next token, state, None)."""
        self._check_length(prompt.size(1), self.config.max_len, "prompt")
        return self._forward_cached(prompt, state)

    def step(self, tokens: torch.Tensor, state: dict):
        """tokens (B,) -> (logits (B, V), state, None): an LM reports no cross-attention."""
        past = state["past"]
        length = 1 + (0 if past is None else past.get_seq_length())
        self._check_length(length, self.config.max_len, "prompt plus output")
        return self._forward_cached(tokens[:, None], state)  # (B, 1)

    def _forward_cached(self, input_ids, state):
        out, past = self._cached(state["past"], input_ids=input_ids)
        return self._allowed(out.logits[:, -1]), {"past": past}, None


class HFSeq2Seq(HFAdapter):
    """Marian, T5, BART and any AutoModelForSeq2SeqLM: decodes from decoder_start_token_id."""

    def forward(self, src, tgt_in, src_pad_mask=None, tgt_pad_mask=None, trace=False):
        mask = None if src_pad_mask is None else (~src_pad_mask).long()  # HF: 1 = attend
        tgt_mask = None if tgt_pad_mask is None else (~tgt_pad_mask).long()
        with self.attention_weights(trace):
            out = self.hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt_in,
                          decoder_attention_mask=tgt_mask, use_cache=False,
                          output_attentions=trace, output_hidden_states=trace)
        logits = self._allowed(out.logits)  # (B, T, V)
        if not trace:
            return logits
        maps = (_maps("encoder", out.encoder_attentions) + _maps("decoder", out.decoder_attentions)
                + _maps("cross", out.cross_attentions))
        hidden = {**_hidden("encoder", out.encoder_hidden_states),
                  **_hidden("decoder", out.decoder_hidden_states)}
        return logits, Trace(attention=maps, hidden=hidden)

    def start(self, src=None, src_pad_mask=None, batch_size: int = 1) -> dict:
        """Run the encoder once; the decoder's steps reuse its output and the cross-attention cache."""
        if src is None:
            raise ValueError("an encoder-decoder needs a source")
        self._check_length(src.size(1), self.config.max_src_len, "source")
        mask = (torch.ones_like(src) if src_pad_mask is None else (~src_pad_mask).long())  # (B, S)
        encoder = self.hf.get_encoder()(input_ids=src, attention_mask=mask)
        return {"past": None, "encoder": encoder.last_hidden_state, "mask": mask}

    def step(self, tokens: torch.Tensor, state: dict):
        """tokens (B,) -> (logits (B, V), state, cross-attention (B, L, H, S))."""
        past = state["past"]
        length = 1 + (0 if past is None else past.get_seq_length())
        self._check_length(length, self.config.max_len, "output")
        with self.attention_weights():
            out, past = self._cached(past, encoder_outputs=BaseModelOutput(last_hidden_state=state["encoder"]),
                                     attention_mask=state["mask"], decoder_input_ids=tokens[:, None],
                                     output_attentions=True)
        cross = torch.stack([a[:, :, -1] for a in out.cross_attentions], dim=1)  # (B, L, H, S)
        return self._allowed(out.logits[:, -1]), {**state, "past": past}, cross


class HFMaskedLM(HFAdapter):
    """BERT, DistilBERT and any AutoModelForMaskedLM: fills in masked tokens, does not decode."""

    def forward(self, tokens, pad_mask=None, trace=False):
        self._check_length(tokens.size(1), self.config.max_src_len, "text")
        mask = None if pad_mask is None else (~pad_mask).long()
        with self.attention_weights(trace):
            out = self.hf(input_ids=tokens, attention_mask=mask,
                          output_attentions=trace, output_hidden_states=trace)
        if not trace:
            return out.logits  # (B, T, V)
        return out.logits, Trace(attention=_maps("encoder", out.attentions),
                                 hidden=_hidden("encoder", out.hidden_states))
