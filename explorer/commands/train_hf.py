"""`explorer train`'s two Hugging Face ways in (explorer/commands/train.py calls these):

    explorer train --from HF_DIR --data corpus.txt --out tuned        # fine-tune a causal LM
    explorer train --from HF_DIR --data pairs.tsv --out tuned         # ... or an encoder-decoder
    explorer train --hf-config config.json --data corpus.txt --out run   # from scratch

`--from` writes a Hugging Face folder (save_pretrained and the tokenizer); `--hf-config` builds an
hf-gpt2 / hf-bert / hf-marian / hf-t5 model (explorer/hf/architectures.py) and writes a run folder
like any model of ours.
"""

from __future__ import annotations

from explorer.commands.train_options import flag_of_field
from explorer.errors import UserError


def with_hf_architecture(options: dict) -> dict:
    """The options with --hf-config's family (as --arch) and its sizes, where no flag set them."""
    path = options.get("hf_config_file")
    if not path:
        return options
    if options.get("resume"):
        raise UserError("--resume keeps the checkpoint's data and model; drop --hf-config")
    from explorer.hf.architectures import architecture_from_file

    family, fields = architecture_from_file(path)
    if options.get("arch") not in (None, family):
        raise UserError(f"--hf-config {path} describes a {family} model, not --arch "
                        f"{options['arch']}")
    given = set(options)
    if "d_model" in given:  # --d-model implies d_ff = 4 x d_model, as for our Transformers
        fields.pop("d_ff", None)
    # the option each field fills: its flag's name, where a flag sets it
    filled = {flag_of_field(name): value for name, value in fields.items()}
    return {**options, "arch": family, **{k: v for k, v in filled.items() if k not in given}}


def finetune_workspace(options: dict, data_spec):
    """The Hugging Face model of --from with its data; `data_spec(options, kind)` reads --data
    as plain text ("lm") or pairs ("seq2seq"), whichever the model trains on."""
    from explorer.hf.finetune import open_for_finetuning

    if not options.get("out"):
        raise UserError("say where to write the fine-tuned model: --out DIR")
    for flag in ("save_every", "snapshot_every"):
        if options.get(flag):
            raise UserError(f"--{flag.replace('_', '-')} does not work with --from yet: the "
                            "fine-tuned model is saved at the end (and at Ctrl+C)")
    if options.get("hf_config_file"):
        raise UserError("--from fine-tunes a model that exists; --hf-config builds a new one: "
                        "give one of them")
    if not any(options.get(k) for k in ("task", "data", "src", "tgt")):
        raise UserError("no data: --from fine-tunes on --data FILE (text, or source<TAB>target "
                        "pairs for an encoder-decoder) or --src FILE --tgt FILE")
    return open_for_finetuning(options["from_hf"], lambda kind: data_spec(options, kind))
