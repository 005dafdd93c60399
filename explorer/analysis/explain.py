"""One entry point for the attribution view: an attribution method, attention rollout or attention
flow on one example, as the panel, the training probe and `explorer export` ask for it.

    request = ExplainRequest(method="ig", settings=AttributionSettings(steps=50), fusion="mean")
    result = explain(workspace, source, target, request, progress, should_stop)
    # -> AttributionResult, or RolloutResult for method "rollout" or "flow"

The training thread computes it between steps when a panel asks (`live_explanation`, called by
`analysis.probe.make_probe_fn`), at most every LIVE_EVERY_S seconds, so training pays nothing
while the view is hidden. A failure there is kept as its one-line message, not raised. Attention
flow (a max-flow per pair of tokens) is not computed there: the view says so, and computes it in
its job runner when training pauses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from explorer.analysis.attention_flow import attention_flow
from explorer.analysis.attribution import APP_SETTINGS, AttributionSettings, attribute
from explorer.analysis.probe import _PROBE_LOCK
from explorer.analysis.rollout import rollout
from explorer.errors import UserError

LIVE_EVERY_S = 3.0  # during training: the view follows at this pace, the training thread pays
FLOW_NOT_LIVE = "attention flow is too slow to follow training: it is computed when training pauses"


@dataclass(frozen=True)
class ExplainRequest:
    method: str = "ig"  # an attribution method (attribution.METHODS), "rollout" or "flow"
    settings: AttributionSettings = APP_SETTINGS  # the panel's opening settings (frozen)
    fusion: str = "mean"  # rollout's and flow's head fusion
    rows: tuple[int, ...] | None = None  # output tokens to explain (indices); None: every one


def explain(workspace, source: str, target: str, request: ExplainRequest, progress=None,
            should_stop=None):
    """The request's result on one example (one model user at a time: the probe's lock)."""
    with _PROBE_LOCK:
        if request.method == "rollout":
            return rollout(workspace, source, target, request.fusion)
        if request.method == "flow":
            return attention_flow(workspace, source, target, request.fusion, progress, should_stop)
        settings = replace(request.settings, method=request.method)
        rows = list(request.rows) if request.rows is not None else None
        return attribute(workspace, source, target, settings, rows, progress, should_stop)


@dataclass
class LiveExplanation:
    """What the training probe computed for the attribution view: a result or why not."""

    request: ExplainRequest
    result: object | None = None
    message: str = ""


class LiveSchedule:
    """Asked between training steps: explain now when a view wants it and LIVE_EVERY_S passed."""

    def __init__(self) -> None:
        self.last = float("-inf")

    def __call__(self, workspace, probe_input, source: str, target: str) -> LiveExplanation | None:
        request = getattr(probe_input, "explanation", None)
        now = time.monotonic()
        if request is None or now - self.last < LIVE_EVERY_S:
            return None
        self.last = now
        if request.method == "flow":
            return LiveExplanation(request, message=FLOW_NOT_LIVE)
        try:
            return LiveExplanation(request, explain(workspace, source, target, request))
        except (UserError, ValueError) as exc:
            return LiveExplanation(request, message=str(exc).splitlines()[0] if str(exc) else "")
