"""Named activation points under every analysis (docs/architecture.md, "Activation points")."""

from explorer.analysis.activations.core import (
    BaseProvider, HookPoint, Provider, Run, input_hook, kind_of, list_points, output_hook,
    provider_for, recording, register_provider, removing, replacing, run_with, set_attribute,
)

__all__ = ["BaseProvider", "HookPoint", "Provider", "Run", "input_hook", "kind_of", "list_points",
           "output_hook", "provider_for", "recording", "register_provider", "removing", "replacing", "run_with",
           "set_attribute"]
