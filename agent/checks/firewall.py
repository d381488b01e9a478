"""The node's firewall rules: `KubeletPortHijacked`, `IPTablesModesMixed`, and an Event per unexpected REJECT/DROP.

Read with iptables' own dump tools, `iptables-legacy-save` and `iptables-nft-save` (IPv4 and IPv6), run from the
agent's image in the host's network namespace (the pod is host-network and privileged, which reading the rules
needs: nothing more). Where the split tools are missing, plain `iptables-save` / `ip6tables-save` is the one backend.
No tool at all: no report. Every `interval` (5 min: rules change rarely), and a look runs only the dumps whose rules
may have changed since the last (agent/sensors/ruleset_versions.py): the nf_tables dumps when the ruleset generation
moved, the legacy ones when that backend has a table at all. On a quiet nf_tables node a look is one netlink request.

- `KubeletPortHijacked`: a DNAT rule for the kubelet's port (`--dport 10250`), e.g. a pod's hostPort on 10250: the
  API server's logs, exec and metrics calls to this node reach that pod instead of the kubelet.
- `IPTablesModesMixed`: both the legacy and the nf_tables backend hold rules. kube-proxy and the CNI plugins each
  write through one backend; rules split over both are applied in an order neither sees (and node-problem-detector's
  own check for this never reports, its script exits 0).
- Event `UnexpectedFirewallRule`: a rule jumping to REJECT or DROP in a chain outside `allowed_chains` (prefixes of
  the chains kube-proxy, the CNI plugins and container runtimes manage), once per rule while it stays.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agent.bounds import PORT, Bounds, bounded, text_form
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Status
from agent.sensors.ruleset_versions import legacy_tables_present, nft_generation
from agent.services.restarts import CommandError, CommandRunner, run_command

HIJACKED = "KubeletPortHijacked"
MIXED = "IPTablesModesMixed"
DEFAULT_ALLOWED = ("KUBE-", "CNI-", "cali-", "CILIUM_", "FLANNEL", "DOCKER", "WEAVE", "ANTREA", "OVN", "AWS-",
                   "AZURE-", "GCP-", "ts-")
_BACKENDS = {"legacy": ("iptables-legacy-save", "ip6tables-legacy-save"),
             "nf_tables": ("iptables-nft-save", "ip6tables-nft-save")}
_PLAIN = ("iptables-save", "ip6tables-save")
_GENERATION_COUNTED = frozenset(_BACKENDS["nf_tables"])  # dumps of what the nf_tables generation counts


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=lambda: CheckTiming(interval=dt.timedelta(minutes=5),
                                                                    timeout=dt.timedelta(seconds=30)))
    kubelet_port: int = bounded(10250, PORT)
    # chain name prefixes where REJECT/DROP rules are expected
    allowed_chains: tuple[str, ...] = bounded(DEFAULT_ALLOWED, Bounds(form=text_form("a chain name prefix", bool)))


@dataclass(frozen=True)
class Rule:
    table: str
    chain: str
    text: str  # the rule as iptables-save writes it, `-A CHAIN ...`

    @property
    def words(self) -> list[str]:
        return self.text.split()

    def target(self) -> str:
        words = self.words
        for flag in ("-j", "--jump"):
            if flag in words[:-1]:
                return words[words.index(flag) + 1]
        return ""

    def dport(self) -> str:
        words = self.words
        return next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--dport", "--destination-port")), "")


def parse_save(text: str) -> list[Rule]:
    """The rules of one iptables-save dump (comments, chain declarations and COMMIT lines carry none)."""
    rules, table = [], ""
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
        elif line.startswith("-A "):
            rules.append(Rule(table, line.split()[1], line.strip()))
    return rules


def find_tools() -> dict[str, tuple[str, ...]]:
    """backend -> its dump tools on PATH; {"iptables": plain tools} where only those exist."""
    found = {backend: tuple(t for t in tools if shutil.which(t)) for backend, tools in _BACKENDS.items()}
    found = {backend: tools for backend, tools in found.items() if tools}
    if not found and (plain := tuple(t for t in _PLAIN if shutil.which(t))):
        found = {"iptables": plain}
    return found


class FirewallCheck:
    name = "firewall"
    condition_types = (HIJACKED, MIXED)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 tools: dict[str, tuple[str, ...]] | None = None,
                 generation: Callable[[], int | None] = nft_generation,
                 tables_present: Callable[[str], bool | None] = legacy_tables_present) -> None:
        self.timing = config.timing
        self._config = config
        self._run = run
        self._tools = find_tools() if tools is None else tools
        self._generation, self._tables_present = generation, tables_present
        self._counted = any(t in _GENERATION_COUNTED for tools in self._tools.values() for t in tools)
        self._dumped: dict[str, tuple[int, list[Rule]]] = {}  # nf_tables tool -> (generation, its rules then)
        self._reported: set[Rule] = set()  # unexpected rules already told, while they stay

    async def observe(self, now: dt.datetime) -> Observation:
        if not self._tools:
            return Observation(self.name, now)
        rules: dict[str, list[Rule]] = {}
        failures: list[str] = []
        # Read before the dumps: a change while they run moves it past what is kept, and the next look dumps again.
        generation = self._generation() if self._counted else None
        for backend, tools in self._tools.items():
            for tool in tools:
                try:
                    rules.setdefault(backend, []).extend(await self._rules(tool, generation))
                except (OSError, CommandError) as exc:
                    failures.append(f"{tool}: {exc}")
        if failures:
            error = "; ".join(failures)
            return Observation(self.name, now, error=error, conditions=tuple(
                ConditionReport(t, Status.UNKNOWN, "FirewallUnreadable", error) for t in self._types()))
        everything = [r for backend_rules in rules.values() for r in backend_rules]
        conditions = [self._hijacked(everything)]
        if len(self._tools) > 1:
            conditions.append(_mixed(rules))
        return Observation(self.name, now, conditions=tuple(conditions), events=tuple(self._unexpected(everything)))

    async def _rules(self, tool: str, generation: int | None) -> list[Rule]:
        """The rules `tool` dumps, without running it where they cannot have changed or cannot exist."""
        if self._tables_present(tool) is False:
            return []
        kept = self._dumped.get(tool)
        if kept is not None and generation is not None and kept[0] == generation:
            return kept[1]
        rules = parse_save(await self._run([tool]))
        if tool in _GENERATION_COUNTED and generation is not None:
            self._dumped[tool] = (generation, rules)
        return rules

    def _types(self) -> tuple[str, ...]:
        return self.condition_types if len(self._tools) > 1 else (HIJACKED,)

    def _hijacked(self, rules: list[Rule]) -> ConditionReport:
        port = str(self._config.kubelet_port)
        found = [r for r in rules if r.target() == "DNAT" and r.dport() == port]
        if found:
            return ConditionReport(HIJACKED, Status.TRUE, "KubeletPortDNAT",
                                   f"traffic to port {port} is rewritten away from the kubelet: "
                                   + "; ".join(f"{r.table}: {r.text}" for r in found[:3]))
        return ConditionReport(HIJACKED, Status.FALSE, "NoKubeletPortDNAT", f"no DNAT rule for port {port}")

    def _unexpected(self, rules: list[Rule]) -> Iterable[EventReport]:
        allowed = self._config.allowed_chains
        unexpected = {r for r in rules if r.target() in ("REJECT", "DROP") and not r.chain.startswith(allowed)}
        for rule in sorted(unexpected - self._reported, key=lambda r: (r.table, r.text)):
            yield EventReport("UnexpectedFirewallRule", f"{rule.table}: {rule.text} (a chain no Kubernetes "
                                                        "component manages rejects or drops traffic)")
        self._reported = unexpected  # a rule removed and added again is told again


def _mixed(rules: dict[str, list[Rule]]) -> ConditionReport:
    counts = {backend: len(backend_rules) for backend, backend_rules in rules.items()}
    words = ", ".join(f"{count} rules in {backend}" for backend, count in counts.items())
    if all(counts.values()):
        return ConditionReport(MIXED, Status.TRUE, "BothBackendsHoldRules",
                               f"{words}: kube-proxy and the CNI see only the rules of the backend they use")
    return ConditionReport(MIXED, Status.FALSE, "OneBackend", words)
