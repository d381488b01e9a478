"""The taint HighNodeUtilization puts on the node it empties, so that the scheduler does not refill it.

Declared on the strategy's registry record (strategies/strategy.py `taint`): the planner owns it like a rule's taint
(the owned-taints annotation, with "strategy:HighNodeUtilization" as its rule), passes it through the rails, gives
the nodes back when the strategy leaves the policy, and the strategy reads which nodes carry it (`Gate.carrying`).
"""

from __future__ import annotations

from remediator.model.records import Taint

CONSOLIDATION_TAINT = Taint(key="nodemedic.io/consolidating", value="true")
