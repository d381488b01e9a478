"""The `scheduler` section: what kube-scheduler does with the pods nodemedic moves, so that nodemedic plans with the
scheduler instead of against it (docs/zone-balance.md).

`profile`: the schedulerName of the profile that runs the configuration `nodemedic-remediator scheduler-config`
prints: `default-scheduler` when the cluster's own scheduler runs it, another name when the chart's second scheduler
does (managed control planes). `packingProfile`: the schedulerName of the MostAllocated profile HighNodeUtilization
needs ("" for none; `nodemedic-packing` by default when HighNodeUtilization is configured; the same name as
`profile` makes that one profile pack). `otherSchedulers`: more schedulerNames that place pods as an unconfigured
kube-scheduler does; a pod naming any other scheduler has no destination nodemedic can vouch for.
`defaultConstraints`: PodTopologySpread's defaultConstraints in the profile (`defaultingType: List`), which the
topology-spread strategy applies to the pods that declare none, as the scheduler does.
Without the section, the cluster's scheduler is taken as kube-scheduler unconfigured (its internal default
constraints). A DeschedulerPolicy is read with `defaultConstraints: []` (descheduler.py): descheduler reads
declared constraints only.
`zoneExposure.minSurvivingShare`: a workload whose replicas surviving the loss of its worst zone fall below this
share, while a better spread is possible, is named in the plan and gets an Event. `zoneExposure.maxSeries`: how many
of those exposed workloads get their own gauge series (alerts/zone_exposure_gauges.py); the rest are counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from remediator.model.records import HOSTNAME_LABEL, DefaultConstraint
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import INT32, dns_subdomain_problem, qualified_name_problem

_SCHEDULER_KEYS = ("profile", "packingProfile", "otherSchedulers", "defaultConstraints", "zoneExposure")
_CONSTRAINT_KEYS = ("maxSkew", "topologyKey", "whenUnsatisfiable")
_EXPOSURE_KEYS = ("minSurvivingShare", "maxSeries")
DEFAULT_SCHEDULER = "default-scheduler"
PACKING_PROFILE = "nodemedic-packing"
ZONE = "topology.kubernetes.io/zone"
WHEN = ("DoNotSchedule", "ScheduleAnyway")
MAX_EXPOSURE_SERIES = 10_000  # 20,000 series: ~2 MB of /metrics, rendered on the leader's event loop at each scrape


# nodemedic's: spread every replicated workload across zones and nodes, one pod of skew at most. ScheduleAnyway: a
# zone without room never leaves a pod Pending; the profile's scoring weight puts spreading above resource balance.
SPREAD = (DefaultConstraint(1, ZONE, "ScheduleAnyway"), DefaultConstraint(1, HOSTNAME_LABEL, "ScheduleAnyway"))
# kube-scheduler's own when its configuration says nothing (defaultingType: System): what a scheduler nodemedic did
# not configure applies.
SYSTEM = (DefaultConstraint(3, HOSTNAME_LABEL, "ScheduleAnyway"), DefaultConstraint(5, ZONE, "ScheduleAnyway"))


@dataclass(frozen=True)
class SchedulerSettings:
    profile: str = DEFAULT_SCHEDULER
    packing_profile: str = ""
    other_schedulers: tuple[str, ...] = ()
    default_constraints: tuple[DefaultConstraint, ...] = SPREAD
    min_surviving_share: float = 0.6
    # Exposed workloads with their own series: each is two series on every scrape of the leader's /metrics.
    max_exposure_series: int = 500
    configured: bool = False  # the policy has the section: `profile` runs scheduler-config's configuration

    def known(self) -> frozenset[str]:
        """The schedulerNames whose placement nodemedic can predict."""
        return frozenset({DEFAULT_SCHEDULER, self.profile, *self.other_schedulers} - {""}
                         | ({self.packing_profile} if self.packing_profile else set()))

    def constraints_for(self, scheduler_name: str) -> tuple[DefaultConstraint, ...]:
        """The default constraints the scheduler named `scheduler_name` applies to a pod declaring none."""
        if scheduler_name == self.profile and self.configured:
            return self.default_constraints
        if scheduler_name == self.packing_profile and self.configured:
            return ()  # packing: the profile spreads nothing by default (peer_config/scheduler_config.py)
        if scheduler_name == DEFAULT_SCHEDULER or scheduler_name in self.other_schedulers:
            return SYSTEM
        return ()


def _name_problem(value: str) -> str | None:
    # kube-scheduler itself only wants a profile's name non-empty, but the API server refuses a pod whose
    # spec.schedulerName is not a DNS subdomain: a profile named otherwise is one no pod can choose.
    return dns_subdomain_problem(value, "schedulerName")


def read_scheduler(r: Reader, top: Section, *, packs: bool) -> SchedulerSettings:
    """`packs`: a strategy that needs a packing profile is configured (strategies/strategy.py: `packing`), so one is
    wanted unless the policy says ""."""
    m = r.section(top, "scheduler", _SCHEDULER_KEYS)
    configured = "scheduler" in top.values
    d = SchedulerSettings()
    profile = r.text(m, "profile", d.profile, check=_name_problem)
    packing = r.text(m, "packingProfile", PACKING_PROFILE if packs else "",
                     check=lambda v: None if v == "" else _name_problem(v))
    others = r.strings(m, "otherSchedulers", _name_problem) or ()
    exposure = r.section(m, "zoneExposure", _EXPOSURE_KEYS)
    share = d.min_surviving_share
    node = exposure.values.get("minSurvivingShare")
    if node is not None:
        got = r.value(node, exposure.at("minSurvivingShare"))
        if isinstance(got, bool) or not isinstance(got, int | float) or not 0 <= got <= 1:
            r.wrong(node, exposure.at("minSurvivingShare"), "a number from 0 to 1", got)
        else:
            share = float(got)
    max_series = r.integer(exposure, "maxSeries", d.max_exposure_series, maximum=MAX_EXPOSURE_SERIES)
    return SchedulerSettings(profile=profile, packing_profile=packing, other_schedulers=tuple(dict.fromkeys(others)),
                             default_constraints=_constraints(r, m, d.default_constraints), min_surviving_share=share,
                             max_exposure_series=max_series, configured=configured)


def _constraints(r: Reader, m: Section, default: tuple[DefaultConstraint, ...]) -> tuple[DefaultConstraint, ...]:
    items = r.sequence(m, "defaultConstraints")
    if items is None:
        return default
    out: list[DefaultConstraint] = []
    seen: dict[tuple[str, str], str] = {}
    for node, path in items:
        c = r.mapping(node, path, _CONSTRAINT_KEYS)
        # As kube-scheduler checks its PodTopologySpreadArgs: maxSkew an int32 above 0, topologyKey a label key.
        skew = r.integer(c, "maxSkew", 0, minimum=1, maximum=INT32[1])
        if "maxSkew" not in c.values:
            r.error(c.where(), c.at("maxSkew"), "required")
        key = r.text(c, "topologyKey", required=True, check=qualified_name_problem)
        when = r.text(c, "whenUnsatisfiable", required=True,
                      check=lambda v: None if v in WHEN else f"must be one of {', '.join(WHEN)}, got {v!r}")
        if not (skew and key and when):
            continue
        if (key, when) in seen:  # kube-scheduler refuses the same pair twice
            r.error(node, path, f"duplicate topologyKey {key!r} with whenUnsatisfiable {when} (also {seen[key, when]})")
            continue
        seen[key, when] = path
        out.append(DefaultConstraint(skew, key, when))
    return tuple(out)
