"""The `darkNodes` section: when a node whose kubelet is silent counts as dark, when its Karpenter NodeClaim is
deleted, and how many dark nodes at once mean the fault is the network or the control plane (docs/dark-nodes.md)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.reader import Reader, Section

_KEYS = ("agentSilence", "replaceAfter", "maxDarkPercent")
# The agent re-sends its conditions every `heartbeat` (5m by default, 10s at the least); its silence must outlast one
# heartbeat, or a node whose agent simply had nothing new to say would count as dark.
AGENT_SILENCE_FLOOR = (dt.timedelta(seconds=30), "the agent's heartbeat is 10s at the least; a shorter silence "
                                                 "would call a node dark between two of its writes")
REPLACE_FLOOR = (dt.timedelta(minutes=1), "a kubelet restarting or a short network blip makes a node Ready=Unknown "
                                          "for seconds; replacing it then loses a node that was coming back")
# kube-controller-manager's --unhealthy-zone-threshold: a zone with this share of its nodes (and more than two) not
# Ready is disrupted, and it stops evicting there. The same share of dark nodes here stops every fence.
UNHEALTHY_ZONE_PERCENT = 55.0


@dataclass(frozen=True)
class DarkSettings:
    agent_silence: dt.timedelta = dt.timedelta(minutes=6)  # no write from the agent this long: it is silent too
    replace_after: dt.timedelta | None = dt.timedelta(minutes=10)  # dark this long: its NodeClaim deleted (None: never)
    max_dark_percent: float = UNHEALTHY_ZONE_PERCENT  # of a zone or of the cluster (and more than two nodes)


def read_dark(r: Reader, top: Section) -> DarkSettings:
    """The `darkNodes` section; absent or null: every default."""
    m = r.section(top, "darkNodes", _KEYS)
    d = DarkSettings()
    percent = r.percent(m, "maxDarkPercent", d.max_dark_percent)
    if percent is None or percent == 0:
        if "maxDarkPercent" in m.values:
            r.error(m.values["maxDarkPercent"], m.at("maxDarkPercent"),
                    "must be above 0: at 0 any dark node would look like a partition and none would ever be fenced")
        percent = d.max_dark_percent
    return DarkSettings(
        agent_silence=r.duration(m, "agentSilence", d.agent_silence, floor=AGENT_SILENCE_FLOOR),
        replace_after=r.optional_duration(m, "replaceAfter", d.replace_after, floor=REPLACE_FLOOR),
        max_dark_percent=percent,
    )
