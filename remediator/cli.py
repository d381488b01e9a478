"""`nodemedic-remediator run | validate | plan | convert | autoscaler-flags | scheduler-config`."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from nodemedic_common import bounded_json, logs
from nodemedic_common.config_errors import ConfigError
from nodemedic_common.durations import parse_go_duration
from nodemedic_common.kube_errors import ApiError, CredentialsError
from nodemedic_common.listen import listen_flag
from nodemedic_common.terminal_text import printable
from remediator import __version__
from remediator.control.leader import LeaseTimings
from remediator.control.planner import PlannerMemory, make_plan
from remediator.peer_config.autoscaler_flags import status_taint_flags
from remediator.peer_config.scheduler_config import Connection, render
from remediator.policy.autoscaler import AUTO
from remediator.policy.loader import convert_policy, load_policy, validate_main
from remediator.policy.secret_files import DEFAULT_SECRETS_DIR
from remediator.policy.syntax import dns_subdomain_problem, namespace_problem
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.plan_text import plan_lines
from remediator.state.caches import snapshot_from_list
from remediator.state.live_cluster import read_live_cluster
from remediator.state.measured.reader import sources
from remediator.state.measured.resource_metrics_api import usage_from_items
from remediator.state.records import parse_time, time_problem
from remediator.state.snapshot import MeasuredUsage, NodeAutoscaler
from remediator.strategies import CATALOG

LEASE_NAME = "nodemedic-remediator"
NO_AUTOSCALER = "none"  # plan --autoscaler none: the cluster runs no node autoscaler


def _load_or_exit(path: str, secrets_dir: str) -> Any:
    try:
        return load_policy(path, secrets_dir=secrets_dir, catalog=CATALOG)
    except ConfigError as e:
        for err in e.errors:
            print(err, file=sys.stderr)
        raise SystemExit(2) from None


def cmd_run(args: argparse.Namespace) -> int:
    policy = _load_or_exit(args.policy, args.secrets_dir)
    from remediator import daemon  # noqa: PLC0415 - the one command that needs it: see daemon.py
    return asyncio.run(daemon.run(args, policy))


# --- plan -------------------------------------------------------------------------------------------
def _autoscaler_flag(value: str | None) -> frozenset[NodeAutoscaler] | None:
    """`plan --autoscaler`: the node autoscalers it names; None when not given."""
    if value is None:
        return None
    return frozenset() if value == NO_AUTOSCALER else frozenset({NodeAutoscaler(value)})


def cmd_plan(args: argparse.Namespace) -> int:
    # A one-shot process: no cyclic collection while a whole cluster is decoded and planned (it halves the time
    # on 15,000 pods; see remediator/state/heap.py). Memory comes back when the process exits.
    gc.disable()
    policy = _load_or_exit(args.policy, args.secrets_dir)
    now = parse_time(args.now) if args.now else dt.datetime.now(dt.UTC)
    if now is None:
        print(f"--now: {time_problem(args.now)} (give an RFC 3339 time with an offset, e.g. 2026-03-01T12:00:00Z)",
              file=sys.stderr)
        return 2
    said = _autoscaler_flag(args.autoscaler)
    if args.snapshot:
        try:
            with open(args.snapshot) as f:
                doc = bounded_json.loads(f.read())
        except (OSError, ValueError) as e:
            print(f"{args.snapshot}: {e}", file=sys.stderr)
            return 2
        try:
            snapshot = snapshot_from_list(doc, now, warn=lambda problem: print(f"{args.snapshot}: {problem}",
                                                                               file=sys.stderr),
                                          autoscalers=frozenset() if said is None else said)
        except ValueError as e:  # valid JSON of the wrong shape
            print(f"{args.snapshot}: {e}", file=sys.stderr)
            return 2
        # NodeMetrics and PodMetrics items of the file (`kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes`
        # and `.../pods` items, each with its kind) are its measured usage; a Prometheus query needs the cluster.
        nodes, pods, _ = usage_from_items(doc.get("items") or [], now=now, max_age=policy.metrics.max_age) \
            if sources(policy)[0] else ({}, {}, 0)
        measured = MeasuredUsage(nodes=nodes, pods=pods)
    else:
        try:
            # Only what addsNodes: auto needs and the user did not say.
            live = asyncio.run(read_live_cluster(args.kubeconfig, policy, now, args.secrets_dir,
                                           detect_autoscalers=said is None and policy.autoscaler.adds_nodes == AUTO))
        except CredentialsError as e:
            print(f"nodemedic-remediator: {e}", file=sys.stderr)
            return 2
        except ApiError as e:
            print(f"cannot read the cluster: {e}", file=sys.stderr)
            return 1
        except ValueError as e:  # answers that are not Kubernetes lists
            print(f"nodemedic-remediator plan: {e}", file=sys.stderr)
            return 2
        for why in live.unanswered:
            print(f"nodemedic-remediator plan: node autoscaler {why}: counted as not detected", file=sys.stderr)
        snapshot = live.parts.snapshot(now, autoscalers=live.autoscalers if said is None else said)
        measured = live.measured
    snapshot.measured = measured
    plan = make_plan(snapshot, policy, PlannerMemory())
    if args.json:
        print(json.dumps(PlanAnswer.of(plan).to_json(), indent=1))
    else:
        print("\n".join(plan_lines(plan)))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    """A DeschedulerPolicy (or a nodemedic policy) as the nodemedic policy it is read as, to add rules to."""
    source = printable(args.policy)  # in messages and the header: a newline in the name would start YAML keys
    try:
        with open(args.policy, encoding="utf-8") as f:
            text = f.read()
        converted = convert_policy(text, source=source, secrets_dir=args.secrets_dir, catalog=CATALOG)
    except (OSError, UnicodeDecodeError) as e:
        print(f"{source}: cannot read the policy file: {e}", file=sys.stderr)
        return 2
    except ConfigError as e:
        print("\n".join(e.errors), file=sys.stderr)
        return 2
    header = (f"# nodemedic RemediationPolicy converted from {os.path.basename(source)} by nodemedic-remediator "
              f"convert: it plans as the original does.\n# Add condition -> taint rules under `rules:` "
              f"(docs/remediator.md).\n")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(header + converted)
    else:
        sys.stdout.write(header + converted)
    return 0


def cmd_autoscaler_flags(args: argparse.Namespace) -> int:
    flags = status_taint_flags(_load_or_exit(args.policy, args.secrets_dir))
    print(f"# cluster-autoscaler flags for the taints {printable(args.policy)} may put on nodes "
          "(docs/autoscalers.md):")
    print("\n".join(flags) if flags else "# none: the policy owns no taint")
    return 0


def cmd_scheduler_config(args: argparse.Namespace) -> int:
    policy = _load_or_exit(args.policy, args.secrets_dir)
    text = render(policy, os.path.basename(args.policy), Connection(
        kubeconfig=args.kubeconfig, leader_elect=not args.no_leader_elect, lease_namespace=args.lease_namespace,
        lease_name=args.lease_name))
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        print(f"{args.output}: cannot write the scheduler configuration: {e}", file=sys.stderr)
        return 2
    return 0


def _run_flag_problems(args: argparse.Namespace) -> list[str]:
    problems = LeaseTimings(args.lease_duration, args.renew_deadline, args.retry_period).errors()
    if not args.sync_timeout > 0:  # 0 would fail every --once run before its first LIST could finish
        problems.append(f"--sync-timeout: must be greater than zero, got {args.sync_timeout:g}s")
    return problems


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_go_duration(text).total_seconds()
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _name(problem: Callable[[str], str | None], *, empty: bool = False) -> Callable[[str], str]:
    """A flag naming a Lease or a namespace: it goes into the API's URL paths and the scheduler's configuration."""
    def check(text: str) -> str:
        if not (empty and text == "") and (why := problem(text)):
            raise argparse.ArgumentTypeError(why)
        return text
    return check


_LEASE, _NAMESPACE = _name(lambda s: dns_subdomain_problem(s, "Lease name")), _name(namespace_problem)
_LEASE_OR_DEFAULT = _name(lambda s: dns_subdomain_problem(s, "Lease name"), empty=True)
_LEDGER = _name(lambda s: dns_subdomain_problem(s, "ConfigMap name"), empty=True)  # --savings-ledger


def _secrets_dir_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--secrets-dir", default=DEFAULT_SECRETS_DIR,
                        help="the only directory the policy's {file: PATH} secrets and authToken.file are read from "
                             f"(default {DEFAULT_SECRETS_DIR}, where the chart mounts the notifications Secret)")


def _scheduler_config_flags(sched: argparse.ArgumentParser) -> None:
    sched.add_argument("--policy", required=True)
    _secrets_dir_flag(sched)
    sched.add_argument("--kubeconfig", default="", help="clientConnection.kubeconfig (default: in-cluster)")
    sched.add_argument("--lease-namespace", default="kube-system", type=_NAMESPACE,
                       help="where the scheduler's Lease lives")
    sched.add_argument("--lease-name", default="", type=_LEASE_OR_DEFAULT,
                       help="its Lease (default: kube-scheduler for default-scheduler, else nodemedic-scheduler)")
    sched.add_argument("--no-leader-elect", action="store_true", help="one scheduler replica, no Lease")
    sched.add_argument("--output", "-o", help="file to write (default: stdout); the chart's second scheduler's "
                                              "init container writes it for kube-scheduler to read")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nodemedic-remediator", description="nodemedic cluster remediator")
    ap.add_argument("--version", action="version", version=f"nodemedic-remediator {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="watch the cluster and remediate")
    run.add_argument("--policy", required=True)
    _secrets_dir_flag(run)
    run.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None,
                     help="default: $KUBECONFIG, else in-cluster credentials")
    run.add_argument("--dry-run", action="store_true", help="plan and report, write nothing")
    run.add_argument("--once", action="store_true",
                     help="one cycle, then exit 0 (or 1 with the reason): for a Job or CronJob; no leader election")
    run.add_argument("--sync-timeout", type=_seconds, default=120.0,
                     help="with --once: seconds to wait for the first LIST of nodes, pods and PDBs")
    run.add_argument("--lease-namespace", default="kube-system", type=_NAMESPACE)
    run.add_argument("--lease-name", default=LEASE_NAME, type=_LEASE,
                     help="the Lease replicas elect a leader with (one per installation)")
    run.add_argument("--savings-ledger", default="", type=_LEDGER,
                     help="the ConfigMap in --lease-namespace keeping the placement engine's savings ('': none)")
    run.add_argument("--listen", default=":8080", type=listen_flag, help="metrics, /healthz and /plan ('' to disable)")
    run.add_argument("--identity", default="")
    run.add_argument("--cluster-name", default="")
    # Seconds or a duration ("15s"); checked together below as client-go checks them.
    run.add_argument("--lease-duration", type=_seconds, default=LeaseTimings.lease_duration,
                     help="a standby takes over a lease not renewed for this long (default 15s)")
    run.add_argument("--renew-deadline", type=_seconds, default=LeaseTimings.renew_deadline,
                     help="the leader stops acting when it could not renew for this long (default 10s)")
    run.add_argument("--retry-period", type=_seconds, default=LeaseTimings.retry_period,
                     help="how often each replica tries to acquire or renew (default 2s)")
    run.add_argument("--log-level", choices=logs.LEVELS, default="INFO")
    run.add_argument("--log-format", choices=logs.FORMATS, default="json",
                     help="json (default: one object per line, for log pipelines) or text (for a terminal)")
    val = sub.add_parser("validate", help="check a policy file: exit 0, or 2 with file:line: field errors")
    val.add_argument("--policy", required=True)
    _secrets_dir_flag(val)
    plan = sub.add_parser("plan", help="print what would be done now; writes nothing")
    plan.add_argument("--policy", required=True)
    _secrets_dir_flag(plan)
    src = plan.add_mutually_exclusive_group(required=True)
    src.add_argument("--kubeconfig")
    src.add_argument("--snapshot", help="`kubectl get nodes,pods,pdb,priorityclasses,pvc -A -o json` output "
                     "(priorityclasses only matter for evictor.priorityThreshold.name, pvc for "
                     "evictor.protectedStorageClasses)")
    plan.add_argument("--json", action="store_true")
    plan.add_argument("--now", help="RFC3339 time to plan at (default: now)")
    plan.add_argument("--autoscaler", choices=[*map(str, NodeAutoscaler), NO_AUTOSCALER],
                      help="the node autoscaler the cluster runs, for autoscaler.addsNodes: auto (default: detected "
                           "with --kubeconfig; none with --snapshot, which does not show it)")
    conv = sub.add_parser("convert", help="write a DeschedulerPolicy (descheduler/v1alpha2 or v1alpha1) as the "
                                          "equivalent nodemedic policy")
    conv.add_argument("--policy", required=True)
    _secrets_dir_flag(conv)
    conv.add_argument("--output", "-o", help="file to write (default: stdout)")
    flags = sub.add_parser("autoscaler-flags",
                           help="print the cluster-autoscaler --status-taint flags for the taints the policy owns")
    flags.add_argument("--policy", required=True)
    _secrets_dir_flag(flags)
    _scheduler_config_flags(sub.add_parser(
        "scheduler-config", help="print the KubeSchedulerConfiguration that places pods as the policy plans them"))
    args = ap.parse_args(argv)
    if args.cmd == "run" and (problems := _run_flag_problems(args)):
        run.exit(2, "".join(f"{run.prog}: {p}\n" for p in problems))  # before anything starts
    if args.cmd == "convert":
        return cmd_convert(args)
    if args.cmd == "scheduler-config":
        return cmd_scheduler_config(args)
    if args.cmd == "autoscaler-flags":
        return cmd_autoscaler_flags(args)
    if args.cmd == "validate":
        return validate_main(args.policy, secrets_dir=args.secrets_dir, catalog=CATALOG)
    if args.cmd == "plan":
        return cmd_plan(args)
    return cmd_run(args)
