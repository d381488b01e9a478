"""`nodemedic-agent run | check | validate`."""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import dataclasses
import datetime as dt
import gc
import json
import logging
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from agent import __version__
from agent.checks import BUILTIN
from agent.checks.gpu import GPUCheck
from agent.checks.logmonitor import LogMonitor
from agent.checks.stuck_pods import StuckPods
from agent.config import AgentConfig, load_config
from agent.host import HostRoot
from agent.logsources.journal_hub import JournalHubs
from agent.model import Check, HoldsResources, NpdMonitor, Observation, Status
from agent.npd import logmonitor_config as npd_logmonitor_config
from agent.pipeline import Pipeline
from agent.repair.config import SOURCE as REPAIR_SOURCE
from agent.repair.worker import RepairWorker
from agent.reporting.condition_metrics import ConditionMetrics
from agent.reporting.conditions import ConditionBook
from agent.reporting.inbox import Inbox
from agent.reporting.node_watch import NodeWatch
from agent.reporting.pod_watch import PodWatch
from agent.reporting.reporter import Reporter, StateFile
from agent.reporting.xid_pairs import XidPairs
from agent.supervisor import Supervisor
from nodemedic_common import credential_files, logs
from nodemedic_common.config_errors import ConfigError
from nodemedic_common.http_server import Answer, BoundedServer
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import CredentialsError
from nodemedic_common.listen import listen_flag
from nodemedic_common.repair_contract import ANSWER_CONDITION, REPAIR_ANNOTATION
from nodemedic_common.tasks import run_until_signal


def build_checks(cfg: AgentConfig, host: HostRoot) -> list[Check]:
    """Every configured check; raises ConfigError naming the file and field of any bad NPD config."""
    checks: list[Check] = [BUILTIN[name].build(c, host) for name, c in cfg.checks.items()]
    errors: list[str] = []
    monitors = cfg.system_log_monitors
    journals = JournalHubs(host.root)  # one journal reader for every journald monitor of the same journal
    for path in npd_logmonitor_config.DEFAULT_MONITORS if monitors is None else monitors:
        try:
            monitor_config = npd_logmonitor_config.load(path)
            checks.append(LogMonitor(monitor_config, host=host, recover_after=cfg.log_monitor_recover_after,
                                     journals=journals))
        except (ConfigError, ValueError) as e:
            errors += getattr(e, "errors", [str(e)])
    if cfg.custom_plugin_monitors:  # opt-in: their loader and runner are imported only for a config that names one
        from agent.checks.custom_plugin import CustomPluginMonitor  # noqa: PLC0415
        from agent.npd import plugin_config as npd_plugin_config  # noqa: PLC0415

        for path in cfg.custom_plugin_monitors:
            try:
                checks.append(CustomPluginMonitor(npd_plugin_config.load(path)))
            except (ConfigError, ValueError) as e:
                errors += getattr(e, "errors", [str(e)])
    owner: dict[str, str] = {}
    for c in checks:
        for t in c.condition_types:
            if t in owner:
                errors.append(f"condition type {t} is reported by both {owner[t]!r} and {c.name!r}; "
                              "disable one (e.g. checks.filesystem.enabled: false to use readonly-monitor.json)")
            owner.setdefault(t, c.name)
    names = [c.name for c in checks]
    errors += repair_clashes(cfg, checks)
    errors += [f"two checks are named {n!r}; give the NPD configs distinct `source` values"
               for n in sorted({n for n in names if names.count(n) > 1})]
    if errors:
        raise ConfigError(errors)
    return checks


def repair_clashes(cfg: AgentConfig, checks: list[Check]) -> list[str]:
    """With repair on, the agent itself reports the answer's condition type under the name `repair`."""
    if not cfg.repair.enabled:
        return []
    errors = [f"condition type {ANSWER_CONDITION} is the agent's repair answer; {c.name!r} may not report it"
              for c in checks if ANSWER_CONDITION in c.condition_types]
    errors += [f"a check is named {REPAIR_SOURCE!r}, the name of the agent's repair answers; give the NPD config "
               "another `source`" for c in checks if c.name == REPAIR_SOURCE]
    return errors


def config_warnings(checks: list[Check]) -> list[str]:
    """Keys NPD would ignore silently in the loaded system-log-monitor files ("FILE: field: unknown field")."""
    return [w for c in checks if isinstance(c, LogMonitor) for w in c.config.warnings]


def _load(args: argparse.Namespace) -> tuple[AgentConfig, list[Check], HostRoot]:
    host = HostRoot(Path(args.host_root))
    cfg = load_config(args.config, registry=BUILTIN)
    return cfg, build_checks(cfg, host), host


def _print_errors(e: ConfigError) -> int:
    for err in e.errors:
        print(err, file=sys.stderr)
    return 2


# --- validate ---------------------------------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    try:
        cfg, checks, _ = _load(args)
    except ConfigError as e:
        return _print_errors(e)
    for warning in config_warnings(checks):
        print(f"warning: {warning}", file=sys.stderr)
    print(f"OK: {args.config}: {len(checks)} checks: {', '.join(c.name for c in checks)}; "
          f"repair: {'on' if cfg.repair.enabled else 'off'}")
    return 0


# --- check ------------------------------------------------------------------------------------------
async def _check_once(checks: list[Check]) -> list[Observation]:
    sup = Supervisor(checks, registry=CollectorRegistry(), log=logging.getLogger("nodemedic.agent"))
    try:
        return list(await asyncio.gather(*(sup.run_once(c) for c in checks)))
    finally:
        await _release(checks)  # the healthz probes' connections, a journald source's journal


def _one_shot(cfg: AgentConfig) -> AgentConfig:
    """`check` runs every check once: a check that waits for a sustained window (cpu, memory) judges the current
    reading instead of saying nothing."""
    def now(c: Any) -> Any:
        if dataclasses.is_dataclass(c) and not isinstance(c, type) and "window" in {
                f.name for f in dataclasses.fields(c)}:
            return dataclasses.replace(c, window=dt.timedelta(0))
        return c
    return dataclasses.replace(cfg, checks={name: now(c) for name, c in cfg.checks.items()})


def cmd_check(args: argparse.Namespace) -> int:
    try:
        host = HostRoot(Path(args.host_root))
        cfg = _one_shot(load_config(args.config, registry=BUILTIN))
        checks = build_checks(cfg, host)
    except ConfigError as e:
        return _print_errors(e)
    observations = asyncio.run(_check_once(checks))
    rows = []
    for obs in observations:
        if obs.error:
            rows += [{"check": obs.check, "type": t, "status": "Unknown", "reason": "CheckFailed",
                      "message": obs.error} for t in _types_of(checks, obs.check)]
        rows += [{"check": obs.check, "type": c.type, "status": str(c.status), "reason": c.reason,
                  "message": c.message} for c in obs.conditions]
        # A log monitor reports a type only once a rule matched; otherwise its config's default holds.
        check = next(c for c in checks if c.name == obs.check)
        if isinstance(check, LogMonitor) and not obs.error and not check.absent:
            reported = {c.type for c in obs.conditions}
            rows += [{"check": obs.check, "type": d.type, "status": str(d.status), "reason": d.reason,
                      "message": d.message} for d in check.initial_conditions() if d.type not in reported]
    xids = XidPairs()  # an Xid in the kernel log and in NVML's event set is one event, as in `run`
    events = [{"check": o.check, "reason": e.reason, "severity": str(e.severity), "message": e.message}
              for o in observations for e in o.events if xids.first_telling(e, source=o.check, at=o.at)]
    problem = any(r["status"] == str(Status.TRUE) for r in rows)
    if args.json:
        print(json.dumps({"conditions": rows, "events": events, "healthy": not problem}, indent=1))
    else:
        print(f"{'CHECK':<20} {'CONDITION':<34} {'STATUS':<8} {'REASON':<30} MESSAGE")
        for r in rows:
            print(f"{r['check']:<20} {r['type']:<34} {r['status']:<8} {r['reason']:<30} {r['message'][:200]}")
        for ev in events:
            print(f"event  {ev['check']:<13} {ev['severity']:<8} {ev['reason']:<30} {ev['message'][:200]}")
    return 1 if problem else 0


def _types_of(checks: list[Check], name: str) -> tuple[str, ...]:
    return next((c.condition_types for c in checks if c.name == name), ())


# --- run --------------------------------------------------------------------------------------------
def unmetered(checks: list[Check]) -> dict[str, tuple[str, ...]]:
    """NPD monitors with `metricsReporting: false`: check name -> its condition types, kept out of the metrics."""
    return {c.name: c.condition_types for c in checks
            if isinstance(c, NpdMonitor) and not c.metrics_reporting}


def repair_answer(cfg: AgentConfig) -> dict[str, tuple[str, ...]]:
    """With repair on, the condition type of its answer, owned by the agent (a type no longer owned is deleted from
    the Node: turning repair off removes the answer) and kept out of the condition metrics (`Acting` is no problem;
    nodemedic_agent_repairs_total counts the answers)."""
    return {REPAIR_SOURCE: (ANSWER_CONDITION,)} if cfg.repair.enabled else {}


async def _settle_heap(*, first: float = 10.0, every: float = 60.0) -> None:
    """Once started (`first` seconds: imports, config parsing, the first rounds of checks and API round-trips done),
    move what startup left to the garbage collector's permanent generation, then hand heap pages that are free but
    still resident back to the kernel.

    Freezing: the ~40,000 objects of the modules and the config live as long as the agent, yet each automatic full
    collection walked them all, 10-20 ms of CPU each, about what the rest of an idle agent used in a minute. Trimming:
    glibc keeps the pages startup freed, about 1 MiB of an agent that runs on every node; nothing to do off glibc."""
    await asyncio.sleep(first)
    gc.collect()  # startup's own garbage goes first, not into the permanent generation
    gc.freeze()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    while True:
        trim(0)
        await asyncio.sleep(every)


async def _serve(listen: str, registry: CollectorRegistry, health: Any) -> BoundedServer:
    async def metrics(_: str) -> Answer:
        return Answer(200, CONTENT_TYPE_LATEST, generate_latest(registry))

    async def healthz(_: str) -> Answer:
        ok, why = health()
        return Answer(200 if ok else 503, "text/plain; charset=utf-8", f"{why}\n".encode())

    server = BoundedServer({"/metrics": metrics, "/healthz": healthz})
    await server.start(listen)
    return server


def api_client(kubeconfig: str | None, registry: CollectorRegistry) -> Kube:
    """The agent's API client: its own credentials (no `kubernetes` package), few connections (its status writes,
    Events and two watches), and its metrics under the agent's prefix."""
    return Kube(credential_files.load(kubeconfig), registry=registry, metrics_prefix="nodemedic_agent",
                user_agent="nodemedic-agent", connections=4, timeout=10.0)


def _pod_watch(checks: list[Check], kube: Kube, node: str, log: logging.Logger) -> PodWatch | None:
    """The pods of this node being deleted, watched for the stuckPods check (none without that check)."""
    stuck = [c for c in checks if isinstance(c, StuckPods)]
    if not stuck:
        return None
    watch = PodWatch(kube, node, log=log)
    for check in stuck:
        check.attach(watch.terminating)
    return watch


def _attach_capacity(checks: list[Check], reporter: Reporter) -> None:
    """The gpu check compares the host with the Node's nvidia.com/gpu capacity, read from the Node objects the
    reporter gets anyway (agent/reporting/node_capacity.py)."""
    for check in checks:
        if isinstance(check, GPUCheck):
            check.attach_capacity(reporter.capacity.count)


def _repair(cfg: AgentConfig, *, kube: Kube, node: str, pipeline: Pipeline, host: HostRoot,
            registry: CollectorRegistry, log: logging.Logger) -> list[Coroutine[Any, Any, None]]:
    """The watch of this Node's repair ask and the worker that answers it (agent/repair/worker.py)."""
    watch = NodeWatch(kube, node, annotation=REPAIR_ANNOTATION, log=log)
    worker = RepairWorker(cfg.repair, asks=watch, answers=pipeline, host=host, registry=registry, log=log)
    return [watch.run(), worker.run()]


async def _release(checks: list[Check]) -> None:
    for check in checks:
        if isinstance(check, HoldsResources):
            await check.close()  # a journald source closes its journal, a healthz probe its connection


async def _run(args: argparse.Namespace, log: logging.Logger) -> int:
    try:
        cfg, checks, host = _load(args)
    except ConfigError as e:
        return _print_errors(e)
    for warning in config_warnings(checks):
        log.warning("ignored a field in a log monitor config", extra={"warning": warning})
    registry = CollectorRegistry()
    book = ConditionBook({c.name: c.condition_types for c in checks} | repair_answer(cfg))
    try:
        kube = api_client(args.kubeconfig, registry)
    except CredentialsError as e:
        log.error("no credentials for the API server", extra={"error": str(e)})
        print(f"nodemedic-agent: {e}", file=sys.stderr)
        return 2
    state_dir = Path(args.state_dir) if args.state_dir else host.path("/var/lib/nodemedic")
    reporter = Reporter(kube, args.node_name, book, state=StateFile(state_dir / f"agent-{args.node_name}.json"),
                        registry=registry, log=log, heartbeat=cfg.heartbeat.total_seconds(),
                        defaults=[d for c in checks if isinstance(c, NpdMonitor) for d in c.initial_conditions()])
    _attach_capacity(checks, reporter)
    inbox = Inbox(suppressed=reporter.suppressed, log=log)
    supervisor = Supervisor(checks, registry=registry, log=log, publish=inbox.put)
    pod_watch = _pod_watch(checks, kube, args.node_name, log)
    pipeline = Pipeline(inbox=inbox, book=book, reporter=reporter,
                        metrics=ConditionMetrics(registry, unmetered=unmetered(checks) | repair_answer(cfg)),
                        log=log)
    try:
        server = await _serve(args.listen, registry, supervisor.health) if args.listen else None
    except (ValueError, OSError) as e:
        log.error("cannot serve /metrics and /healthz", extra={"listen": args.listen, "error": str(e)})
        print(f"nodemedic-agent: --listen {args.listen}: {e}", file=sys.stderr)
        await kube.close()
        return 2
    log.info("agent starting", extra={"node": args.node_name, "checks": [c.name for c in checks],
                                      "repair": cfg.repair.enabled, "version": __version__,
                                      "host_root": str(host.root)})
    background = [pipeline.run(), reporter.run(), _settle_heap()]
    if checks:  # with none, its gather ends at once, and with it the agent: a repair-only agent has none
        background.append(supervisor.run())
    if pod_watch is not None:
        background.append(pod_watch.run())
    if cfg.repair.enabled:
        background += _repair(cfg, kube=kube, node=args.node_name, pipeline=pipeline, host=host, registry=registry,
                              log=log)
    code = await run_until_signal(background, log)
    await pipeline.close()
    await _release(checks)
    if server is not None:
        await server.close()
    await kube.close()
    log.info("agent stopped")
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nodemedic-agent", description="nodemedic per-node problem detector")
    ap.add_argument("--version", action="version", version=f"nodemedic-agent {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="watch this node and report conditions and events")
    run.add_argument("--node-name", required=True)
    run.add_argument("--kubeconfig", help="default: in-cluster credentials")
    run.add_argument("--state-dir", help="where written condition types are remembered "
                                        "(default: <host-root>/var/lib/nodemedic)")
    run.add_argument("--listen", default=":8081", type=listen_flag, help="/metrics and /healthz ('' to disable)")
    run.add_argument("--log-level", choices=logs.LEVELS, default="INFO")
    run.add_argument("--log-format", choices=logs.FORMATS, default="json",
                     help="json (default: one object per line, for log pipelines) or text (for a terminal)")
    check = sub.add_parser("check", help="run every check once on this host and print the result")
    check.add_argument("--json", action="store_true")
    val = sub.add_parser("validate", help="check a config file (and the NPD files it names)")
    for p in (run, check, val):
        p.add_argument("--config", required=p is val, help="agent config YAML (default: embedded defaults)")
        p.add_argument("--host-root", default="/", help="where the host's /proc, /sys, /dev, /var/log are")
    args = ap.parse_args(argv)
    if args.cmd == "validate":
        return cmd_validate(args)
    if args.cmd == "check":
        logging.basicConfig(level=logging.WARNING)
        return cmd_check(args)
    return asyncio.run(_run(args, logs.setup("nodemedic.agent", args.log_level, args.log_format)))
