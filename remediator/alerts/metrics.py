"""The remediator's Prometheus metrics, registered into a registry passed from main (never the global one); the gauges
of the strategies' reports are each strategy's own (strategies/strategy.py: report_metrics)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from remediator.alerts.dark_metrics import DarkMetrics, create_dark_metrics
from remediator.alerts.repair_metrics import RepairMetrics, create_repair_metrics
from remediator.alerts.savings_metrics import SavingsMetrics, create_savings_metrics
from remediator.model.plan import StrategyReport
from remediator.strategies import STRATEGIES


@dataclass(frozen=True)
class Metrics:
    taint_changes: Counter
    evictions: Counter
    evictions_in_flight: Gauge
    landings: Counter
    migrations: Counter
    held: Counter
    breaker_open: Gauge
    breaker_trips: Counter
    tainted_nodes: Gauge
    tainted_limit: Gauge
    leader: Gauge
    cycle_seconds: Histogram
    policy_reloads: Counter
    dry_run_planned: Counter
    reports: dict[str, Callable[[StrategyReport], None]]  # strategy -> what shows its report (Strategy.report_metrics)
    autoscaler_detected: Gauge
    zone_surviving: Gauge
    zone_surviving_best: Gauge
    zone_exposed: Gauge
    zone_exposed_omitted: Gauge
    scheduler_loops: Counter
    scheduler_loop_held: Gauge
    repair: RepairMetrics
    dark: DarkMetrics
    savings: SavingsMetrics


def create(registry: CollectorRegistry) -> Metrics:
    r = registry
    ProcessCollector(registry=r)  # process_resident_memory_bytes and co.: the chart's memory alert reads it
    return Metrics(
        taint_changes=Counter("nodemedic_taint_changes_total", "Taints added or removed by nodemedic",
                              ["action", "key"], registry=r),
        evictions=Counter("nodemedic_evictions_total", "Eviction outcomes",
                          ["strategy", "outcome"], registry=r),
        evictions_in_flight=Gauge("nodemedic_evictions_in_flight",
                                  "Evictions decided whose outcome is not counted yet (a PDB refusal retried until "
                                  "eviction.retryDeadline counts here)", registry=r),
        landings=Counter("nodemedic_landings_total", "Balance moves' replacements by where they landed: landed "
                         "(the planned node), elsewhere, unguided (not pinned), stuck (pinned, not bound by the "
                         "deadline), none (no replacement)", ["outcome"], registry=r),
        migrations=Counter("nodemedic_migrations_total", "Engines' migrations proposed, and how each ended: "
                           "succeeded, reverted, failed, refused, rejected, expired", ["engine", "outcome"],
                           registry=r),
        held=Counter("nodemedic_taints_held_total", "Taints the rules wanted but a safety rail held back",
                     ["why"], registry=r),
        breaker_open=Gauge("nodemedic_circuit_breaker_open", "1 while the tainted-node limit blocks new taints",
                           registry=r),
        breaker_trips=Counter("nodemedic_circuit_breaker_trips_total", "Times the circuit breaker opened",
                              registry=r),
        tainted_nodes=Gauge("nodemedic_tainted_nodes", "Nodes carrying at least one nodemedic taint", registry=r),
        tainted_limit=Gauge("nodemedic_tainted_nodes_limit", "Maximum nodes nodemedic may taint at once",
                            registry=r),
        leader=Gauge("nodemedic_leader", "1 while this replica leads", registry=r),
        cycle_seconds=Histogram("nodemedic_plan_cycle_seconds",
                                "Time of one planning cycle: snapshot of the watch caches and plan", registry=r,
                                buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)),
        policy_reloads=Counter("nodemedic_policy_reloads_total", "Policy file reloads", ["result"], registry=r),
        dry_run_planned=Counter("nodemedic_dry_run_actions_total", "Actions a dry run would have taken",
                                ["action"], registry=r),
        reports={s.name: s.report_metrics(r) for s in STRATEGIES.values() if s.report_metrics is not None},
        autoscaler_detected=Gauge("nodemedic_autoscaler_detected",
                                  "1 while the node autoscaler is detected in the cluster, else 0: what "
                                  "autoscaler.addsNodes: auto counts on (state/autoscaler_detection.py)",
                                  ["autoscaler"], registry=r),
        zone_surviving=Gauge("nodemedic_workload_zone_loss_surviving_ratio",
                             "Share of an exposed workload's live replicas outside the zone holding most of them: "
                             "what survives that zone's loss (exposed workloads only, at most "
                             "scheduler.zoneExposure.maxSeries of them)", ["namespace", "workload"], registry=r),
        zone_surviving_best=Gauge("nodemedic_workload_zone_loss_surviving_ratio_best",
                                  "The same share with the workload's replicas spread as evenly as the cluster's "
                                  "zones allow", ["namespace", "workload"], registry=r),
        zone_exposed=Gauge("nodemedic_zone_exposed_workloads",
                           "Replicated workloads below scheduler.zoneExposure.minSurvivingShare while a better spread "
                           "exists, with a series or not", registry=r),
        zone_exposed_omitted=Gauge("nodemedic_zone_exposed_workloads_omitted",
                                   "Exposed workloads without a nodemedic_workload_zone_loss_surviving_ratio series: "
                                   "more than scheduler.zoneExposure.maxSeries are exposed", registry=r),
        scheduler_loops=Counter("nodemedic_scheduler_loops_total",
                                "Workloads whose replacements the scheduler kept placing back on the nodes a balance "
                                "strategy moved them off: the scheduler disagrees with the policy", registry=r),
        scheduler_loop_held=Gauge("nodemedic_scheduler_loop_held_workloads",
                                  "Workloads held from balance moves for a scheduler loop", registry=r),
        repair=create_repair_metrics(r),
        dark=create_dark_metrics(r),
        savings=create_savings_metrics(r),
    )
