"""The cluster-autoscaler flags a policy needs: each taint key nodemedic may own, as a `--status-taint`.

cluster-autoscaler builds a node group's scale-up template from a Ready, uncordoned node of the group and keeps
that node's taints on the template, minus the ones it knows (its own, node-condition taints, startup and status
taints). A node nodemedic tainted but did not cordon can become that template, and cluster-autoscaler would then
believe every new node of the group carries the taint: it would not scale the group up for the very pods nodemedic
evicted. Declared as status taints, the keys are stripped from templates and the node still counts as Ready.
"""

from __future__ import annotations

from remediator.policy.model import Policy
from remediator.strategies import lookup


def owned_taint_keys(policy: Policy) -> list[str]:
    """Every taint key nodemedic may put on a node under `policy`: the rules' and the configured strategies'."""
    keys = {r.taint.key for r in policy.rules}
    for configured in policy.strategies:
        strategy = lookup(configured.name)
        if strategy.taint is not None and strategy.taints(configured.args):
            keys.add(strategy.taint.key)
    return sorted(keys)


def status_taint_flags(policy: Policy) -> list[str]:
    return [f"--status-taint={key}" for key in owned_taint_keys(policy)]
