"""Sequence Model Explorer: train and open small sequence models and watch how they work."""

__version__ = "0.2.0"

# The package's composition root: the Hugging Face plug-in registers its families here (opened
# folders, and the architectures built from scratch, listed when transformers is installed), so
# no core package imports explorer.hf (tests/test_import_layers.py). Both modules are torch-free.
import explorer.hf.architectures  # noqa: E402,F401
import explorer.hf.families  # noqa: E402,F401
