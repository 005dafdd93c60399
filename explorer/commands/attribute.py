"""`explorer attribute`: why a model produced each output token: attributions over the source and
the target prefix (integrated gradients, saliency, gradient x input, occlusion), attention
rollout or attention flow."""

from __future__ import annotations

import argparse
import json

from explorer.commands.arguments import utf8_text
from explorer.commands.model_args import add_model_source, workspace_from_args

METHODS = ("ig", "saliency", "grad-input", "occlusion", "rollout", "flow")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_source(parser, "a checkpoint folder or a Hugging Face model folder")
    parser.add_argument("--source", required=True, metavar="TEXT", type=utf8_text,
                        help="the source (an LM's text; a masked LM's text with [MASK])")
    parser.add_argument("--target", default="", metavar="TEXT", type=utf8_text,
                        help="the target to explain, teacher-forced (default: the model's greedy output)")
    parser.add_argument("--method", choices=METHODS, default="ig",
                        help="ig (integrated gradients, default), saliency (gradient norm), grad-input, "
                             "occlusion, rollout (attention rollout) or flow (attention flow)")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="integrated gradients' interpolation steps, fixed (default 50)")
    parser.add_argument("--tolerance", type=float, default=None, metavar="SHARE",
                        help="integrated gradients: add steps until each token's completeness gap is "
                             "within SHARE of |f(x) - f(baseline)| (e.g. 0.01), instead of --steps")
    parser.add_argument("--baseline", choices=("pad", "zero", "unk"), default="pad",
                        help="ig's path start and occlusion's replacement embeddings (default pad)")
    parser.add_argument("--batch-size", type=int, default=16, metavar="N",
                        help="interpolation steps (or occluded copies) per forward pass (default 16)")
    parser.add_argument("--contrast", metavar="TOKEN", default=None,
                        help="explain log p(token) - log p(TOKEN): why this token rather than TOKEN")
    parser.add_argument("--occlusion", choices=("replace", "drop"), default="replace",
                        help="occlusion replaces a token by the baseline or drops it (default replace)")
    parser.add_argument("--fusion", choices=("mean", "max", "min"), default="mean",
                        help="rollout's and flow's head fusion (default mean)")
    parser.add_argument("--json", action="store_true",
                        help="print JSON: per output token its attributions over source and prefix")


def run(args) -> int:
    workspace = workspace_from_args(args)
    if args.method in ("rollout", "flow"):
        from explorer.analysis.attention_flow import attention_flow
        from explorer.analysis.rollout import rollout

        method = rollout if args.method == "rollout" else attention_flow
        document = method(workspace, args.source, args.target, args.fusion).to_dict()
        print(json.dumps(document) if args.json else rollout_text(document))
        return 0
    from explorer.analysis.attribution import AttributionSettings, attribute

    from explorer.errors import UserError

    if args.steps is not None and args.tolerance is not None:
        raise UserError("--steps fixes the step count and --tolerance finds it: give one of them")
    settings = AttributionSettings(method=args.method, steps=50 if args.steps is None else args.steps,
                                   baseline=args.baseline, batch_size=args.batch_size,
                                   contrast=args.contrast, occlusion=args.occlusion,
                                   tolerance=args.tolerance)
    document = attribute(workspace, args.source, args.target, settings).to_dict()
    print(json.dumps(document) if args.json else attribution_text(document))
    return 0


def attribution_text(document: dict) -> str:
    lines = []
    for entry in document["outputs"]:
        head = f"{entry['token']!r} (position {entry['position']}): f = {entry['target']:.4f}"
        if "gap" in entry:
            head += f", completeness gap {entry['gap']:+.2e} ({entry['steps']} steps)"
        lines.append(head)
        for side in document["sides"]:
            pairs = "  ".join(f"{label}:{value:+.3f}" for label, value in zip(document[side], entry[side]))
            lines.append(f"  {side}: {pairs}")
    if document["warning"]:
        lines.append(f"warning: {document['warning']}")
    return "\n".join(lines)


def rollout_text(document: dict) -> str:
    if document["reason"]:
        return document["reason"]
    lines = []
    for m in document["maps"]:
        lines.append(f"{m['name']} ({document['method']}, head fusion {document['fusion']}):")
        for label, row in zip(m["rows"], m["matrix"]):
            top = sorted(zip(row, m["columns"]), reverse=True)[:3]
            lines.append(f"  {label}: " + "  ".join(f"{column}:{value:.3f}" for value, column in top))
    if document["note"]:
        lines.append(f"note: {document['note']}")
    return "\n".join(lines)
