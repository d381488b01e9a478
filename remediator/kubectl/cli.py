"""kubectl-nodemedic: `kubectl nodemedic status | why NODE | plan | check NODE | repair NODE | fence NODE |
migrations [NAME] | approve NAME | reject NAME | savings`
(installed with the package; kubectl finds a `kubectl-<name>` executable on the PATH as the plugin `<name>`)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
from urllib.parse import quote

from prometheus_client import CollectorRegistry

from nodemedic_common.durations import parse_duration
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError, CredentialsError
from nodemedic_common.terminal_text import printable
from remediator import __version__
from remediator.kubectl import (
    fence_control,
    hops,
    migration_control,
    names,
    reach,
    render,
    repair_control,
    savings_ledger,
)
from remediator.model.migration import Decision
from remediator.model.savings import MAX_DAYS
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import WhyAnswer
from remediator.state.credentials import load_credentials


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubectl nodemedic", description="What nodemedic does to your nodes, and why.")
    p.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG or ~/.kube/config, as kubectl")
    p.add_argument("-n", "--namespace", default="nodemedic", help="where nodemedic is installed (default nodemedic)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="the leader, its policy, the breaker, tainted nodes, the last cycle's actions")
    w = sub.add_parser("why", help="every fact that decides what happens to NODE, with when each changes")
    w.add_argument("node")
    pl = sub.add_parser("plan", help="the leader's current plan")
    pl.add_argument("-o", "--output", choices=("table", "json"), default="table")
    c = sub.add_parser("check", help="the node's conditions, with the evidence the agent gave")
    c.add_argument("node")
    r = sub.add_parser("repair", help="hold, resume or skip a step of NODE's repair ladder (needs patch on nodes)")
    r.add_argument("node")
    how = r.add_mutually_exclusive_group(required=True)
    for flag, text in (("--hold", "take no further step until --resume"),
                       ("--resume", "lift a hold; a node handed to a person goes round its ladder again"),
                       ("--next", "end the step under way now and go on with the next")):
        how.add_argument(flag, dest="how", action="store_const", const=flag[2:], help=text)
    f = sub.add_parser("fence", help="confirm that dark NODE's machine is off, so its pods are freed (needs patch on "
                                     "nodes)")
    f.add_argument("node")
    how = f.add_mutually_exclusive_group()
    how.add_argument("--confirm", dest="how", action="store_const", const="confirm",
                     help="the machine is off: the remediator puts node.kubernetes.io/out-of-service on")
    how.add_argument("--cancel", dest="how", action="store_const", const="cancel",
                     help="withdraw a confirmation the remediator has not acted on")
    f.add_argument("--agent-silence", type=_duration, default=fence_control.DEFAULT_AGENT_SILENCE, metavar="DURATION",
                   help="the policy's darkNodes.agentSilence: a node whose agent wrote within it runs (default 6m)")
    mg = sub.add_parser("migrations", help="the engines' migration plans, or one with each step's status")
    mg.add_argument("name", nargs="?")
    mg.add_argument("-o", "--output", choices=("text", "json"), default="text")
    for verb, text in (("approve", "let the remediator run migration NAME, step by step (needs patch on "
                                   "migrations)"),
                       ("reject", "refuse migration NAME: nothing moves (needs patch on migrations)")):
        sub.add_parser(verb, help=text).add_argument("name")
    sv = sub.add_parser("savings", help="node-hours and cost the placement engine avoided, per day and pool")
    sv.add_argument("--days", type=_days, default=30, help="how many days back (default 30, at most 400)")
    sv.add_argument("--ledger", default=None,
                    help="the ledger's ConfigMap (default: the remediator's --savings-ledger)")
    for s in (sub.choices["status"], w, sv):
        s.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return p


async def run(args: argparse.Namespace, kube: Kube) -> str:
    if args.command == "repair":
        return await repair_control.control(kube, args.node, args.how, now=dt.datetime.now(dt.UTC))
    if args.command == "fence":
        return await fence_control.control(kube, args.node, args.how or "", now=dt.datetime.now(dt.UTC),
                                           agent_silence=args.agent_silence)
    namespace = names.namespace(args.namespace)
    if args.command in ("migrations", "approve", "reject", "savings"):
        return await _objects(args, kube, namespace)
    if args.command == "check":
        node = names.node_name(args.node)
        return render.check(await reach.node(kube, node), await reach.agent_pod(kube, namespace, node))
    leader = await reach.find_leader(kube, namespace)
    status, status_doc = await reach.answer(kube, leader, "/status", StatusAnswer.read)
    if status.version != __version__:
        print(f"kubectl nodemedic: the leader runs version {printable(status.version)}, this plugin {__version__}",
              file=sys.stderr)
    if args.command == "why":
        path = f"/why/{quote(names.node_name(args.node), safe='')}"
        why, why_doc = await reach.answer(kube, leader, path, lambda doc: WhyAnswer.read(doc, path),
                                          leader_version=status.version)
        return json.dumps(why_doc, indent=1) if args.output == "json" else render.why(why)
    plan, plan_doc = await reach.answer(kube, leader, "/plan", PlanAnswer.read, leader_version=status.version)
    if args.command == "plan":
        return json.dumps(plan_doc, indent=1) if args.output == "json" else render.plan(plan)
    if args.output == "json":
        return json.dumps({"leader": leader.pod, "lease": leader.lease, "status": status_doc, "plan": plan_doc},
                          indent=1)
    return render.status(leader, status, plan, await reach.nodes(kube))


async def _objects(args: argparse.Namespace, kube: Kube, namespace: str) -> str:
    """The commands that read or decide objects of their own, whether or not a remediator leads."""
    if args.command == "savings":
        return await savings_ledger.show(kube, namespace, args.ledger, days=args.days, output=args.output,
                                         now=dt.datetime.now(dt.UTC))
    if args.command == "migrations":
        name = migration_control.name_of(args.name) if args.name else None
        return await migration_control.show(kube, namespace, name, output=args.output)
    decision = Decision.APPROVED if args.command == "approve" else Decision.REJECTED
    return await migration_control.decide(kube, namespace, migration_control.name_of(args.name), decision,
                                          now=dt.datetime.now(dt.UTC))


async def _main(args: argparse.Namespace) -> str:
    async with Kube(load_credentials(args.kubeconfig or _default_kubeconfig()),
                    registry=CollectorRegistry(), user_agent="kubectl-nodemedic") as kube:
        return await run(args, kube)


def _days(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"a whole number of days from 1 to {MAX_DAYS}, got {text!r}")
    return int(text)


def _duration(text: str) -> dt.timedelta:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _default_kubeconfig() -> str:
    first = (os.environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
    return first or os.path.expanduser("~/.kube/config")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        print(asyncio.run(_main(args)))
    except (repair_control.Refused, migration_control.Refused, names.BadName, reach.Misunderstood) as e:
        print(f"kubectl nodemedic: {printable(str(e))}", file=sys.stderr)
        return 2
    except (reach.NotFound, CredentialsError, hops.HopFailed) as e:
        print(f"kubectl nodemedic: {printable(str(e))}", file=sys.stderr)
        return 1
    except ApiError as e:
        print(f"kubectl nodemedic: {printable(str(hops.api_server(e)))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
