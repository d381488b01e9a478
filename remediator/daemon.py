"""`nodemedic-remediator run`: the controller, its caches, leader election, alerts and the /metrics, /healthz and /plan
server, until a signal (or one cycle: `run --once`). Apart from the CLI (cli.py) so that the one-shot commands load
none of it (aiohttp, prometheus_client's server, the controller): `plan --kubeconfig` is timed against descheduler's
one-shot run (issue 43)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
import uuid

from prometheus_client import CollectorRegistry

from nodemedic_common import logs
from nodemedic_common.http_server import BoundedServer
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import CredentialsError
from nodemedic_common.tasks import cancelled, run_until_signal
from remediator import __version__
from remediator.alerts import metrics as metrics_mod
from remediator.alerts.announcer import Alerts
from remediator.alerts.memory_headroom import MemoryHeadroom, container_limit
from remediator.alerts.notifier import Notifier
from remediator.control.controller import Controller
from remediator.control.leader import LeaderElector, LeaseTimings
from remediator.control.policy_reload import PolicyReload
from remediator.policy.model import Policy
from remediator.policy.source import PolicySource
from remediator.read_side.server import loop_health, routes
from remediator.read_side.status_answer import StatusAnswer
from remediator.state.autoscaler_detection import AutoscalerDetector
from remediator.state.caches import ClusterCache
from remediator.state.credentials import load_credentials
from remediator.state.measured.reader import UsageReader
from remediator.strategies import CATALOG


async def run(args: argparse.Namespace, policy: Policy) -> int:
    """Until SIGTERM or SIGINT (or one cycle with --once): `args` as the CLI parsed and checked them, `policy` as it
    loaded it."""
    log = logs.setup("nodemedic.remediator", args.log_level, args.log_format)
    registry = CollectorRegistry()
    metrics = metrics_mod.create(registry)
    identity = args.identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    try:
        kube = Kube(load_credentials(args.kubeconfig), registry=registry)
    except CredentialsError as e:
        log.error("no credentials for the API server", extra={"error": str(e)})
        print(f"nodemedic-remediator: {e}", file=sys.stderr)
        return 2
    cache = ClusterCache(kube, log=log)
    notifier = Notifier(policy.notifications, cluster=args.cluster_name, registry=registry, log=log)
    await notifier.start()
    alerts = Alerts(kube, notifier, identity=identity, log=log)
    elector = None
    if not args.dry_run and not args.once:  # a dry run writes nothing, not even a Lease; a Job runs alone
        elector = LeaderElector(
            kube, namespace=args.lease_namespace, name=args.lease_name, identity=identity, log=log,
            timings=LeaseTimings(args.lease_duration, args.renew_deadline, args.retry_period),
            on_change=lambda leading: metrics.leader.set(1 if leading else 0),
        )
    # Always there: a reloaded policy may start asking for measured usage; it reads nothing until one does.
    usage = UsageReader(kube, registry=registry, log=log, secrets_dir=args.secrets_dir)
    # Likewise: it looks for the node autoscalers only while the policy says addsNodes: auto.
    autoscalers = AutoscalerDetector(kube, gauge=metrics.autoscaler_detected, log=log)
    source = PolicySource(args.policy, policy, secrets_dir=args.secrets_dir, catalog=CATALOG)
    reload = PolicyReload(source, alerts=alerts, metrics=metrics, log=log, lease_namespace=args.lease_namespace,
                          lease_name=args.lease_name, announce=not args.dry_run)
    controller = Controller(kube=kube, cache=cache, policy=reload, alerts=alerts, metrics=metrics, log=log,
                            elector=elector, dry_run=args.dry_run, usage=usage, autoscalers=autoscalers,
                            memory_headroom=MemoryHeadroom(registry, log, limit=container_limit()),
                            landing_namespace=args.lease_namespace, savings_ledger=args.savings_ledger)
    server = None
    if args.listen:
        try:
            server = BoundedServer(routes(
                registry=registry, plan=lambda: controller.plan, why=controller.why,
                status=lambda: StatusAnswer(identity, controller.leading(), args.dry_run,
                                            "once" if args.once else "deployment", __version__, str(source.path),
                                            source.digest[:12]),
                healthy=lambda: loop_health(lambda: controller.last_cycle,
                                            lambda: all(i.synced.is_set() for i in cache.informers), 60.0),
            ))
            await server.start(args.listen)
        except (ValueError, OSError) as e:  # a host that does not resolve, a port in use or not ours to take
            log.error("cannot serve /metrics, /healthz and /plan", extra={"listen": args.listen, "error": str(e)})
            print(f"nodemedic-remediator: --listen {args.listen}: {e}", file=sys.stderr)
            await notifier.close()
            await kube.close()
            return 2
    log.info("remediator starting", extra={"identity": identity, "dry_run": args.dry_run, "version": __version__,
                                           "rules": len(policy.rules), "once": args.once})
    if args.once:
        return await _once(controller, cache=cache, kube=kube, usage=usage, notifier=notifier, server=server,
                           log=log, sync_timeout=args.sync_timeout)
    background = [cache.run(), controller.run(), *([] if elector is None else [elector.run()])]
    code = await run_until_signal(background, log)
    if elector is not None:
        await elector.release()
    await notifier.close()
    if server is not None:
        await server.close()
    await usage.close()
    await kube.close()
    log.info("remediator stopped")
    return code


async def _once(controller: Controller, *, cache: ClusterCache, kube: Kube, usage: UsageReader, notifier: Notifier,
                server: BoundedServer | None, log: logging.Logger, sync_timeout: float) -> int:
    """`run --once`: one cycle, then exit 0, or 1 with the reason (a Job's or CronJob's run)."""
    watching = asyncio.create_task(cache.run())
    try:
        code, summary = await controller.run_once(sync_timeout)
    finally:
        await cancelled(watching, log)
        await notifier.close()
        if server is not None:
            await server.close()
        await usage.close()
        await kube.close()
    (log.info if code == 0 else log.error)("one cycle done", extra={"summary": summary, "exit": code})
    if code:
        print(f"nodemedic-remediator run --once: {summary}", file=sys.stderr)
    return code
