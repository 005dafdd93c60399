"""Activation providers, one file each: `ours` (the seqmodels families), `hf` (Hugging Face models
behind explorer.hf.adapter). A provider has `name`, `accepts(model)` and `attach(model, visit)`,
and may override `forward`, `embeddings` and `readout` (explorer.analysis.activations.core)."""
