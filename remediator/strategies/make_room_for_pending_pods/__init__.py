"""MakeRoomForPendingPods (the placement engine): the fewest moves that let a pod pending for fragmentation run."""

from __future__ import annotations

from remediator.strategies.make_room_for_pending_pods.args import MakeRoomForPendingPodsArgs, read_args
from remediator.strategies.make_room_for_pending_pods.plan import KIND, NAME, plan
from remediator.strategies.make_room_for_pending_pods.report import report_metrics
from remediator.strategies.strategy import Strategy


def _approval(args: MakeRoomForPendingPodsArgs) -> str:
    return args.approval


STRATEGY = Strategy(NAME, KIND, read_args, plan, report_metrics=report_metrics, approval=_approval)
