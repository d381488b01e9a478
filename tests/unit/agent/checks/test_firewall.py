"""The firewall check over iptables-save dumps (the shapes iptables 1.8 writes), through a fake command runner."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from agent.bounds import field_problems
from agent.checks.firewall import HIJACKED, MIXED, Config, FirewallCheck, parse_save
from agent.host import HostRoot
from agent.model import Observation, Status
from agent.services.restarts import CommandError

NOW = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
DUMPS = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "firewall"
KUBE_PROXY = (DUMPS / "kube-proxy.save").read_text()  # kube-proxy's and a CNI hostPort's rules, iptables-nft-save
HOSTILE = (DUMPS / "hostile.save").read_text()  # a REJECT in INPUT and a hostPort DNAT on the kubelet's port


class Dumps:
    def __init__(self, **outputs: str) -> None:
        self.outputs = outputs
        self.calls: list[str] = []

    async def __call__(self, argv: Sequence[str]) -> str:
        self.calls.append(argv[0])
        out = self.outputs.get(argv[0].replace("-", "_"), "")
        if out == "fail":
            raise CommandError("exit 4: iptables-nft-save: Permission denied (you must be root)")
        return out


class Kernel:
    """The two answers that spare dumps (agent/sensors/ruleset_versions.py): by default neither is known."""

    def __init__(self) -> None:
        self.generation: int | None = None
        self.tables: dict[str, bool] = {}

    def tables_present(self, tool: str) -> bool | None:
        return self.tables.get(tool)


def check(dumps: Dumps, tools: dict[str, tuple[str, ...]] | None = None, kernel: Kernel | None = None) -> FirewallCheck:
    both: dict[str, tuple[str, ...]] = {"legacy": ("iptables-legacy-save",), "nf_tables": ("iptables-nft-save",)}
    k = Kernel() if kernel is None else kernel
    return FirewallCheck(Config(), HostRoot(Path("/x")), run=dumps, tools=both if tools is None else tools,
                         generation=lambda: k.generation, tables_present=k.tables_present)


def look(c: FirewallCheck) -> Observation:
    return asyncio.run(c.observe(NOW))


def test_kube_proxys_own_rejects_and_drops_are_expected_and_one_backend_is_not_mixed() -> None:
    obs = look(check(Dumps(iptables_nft_save=KUBE_PROXY)))
    assert [(c.type, c.status, c.message) for c in obs.conditions] == [
        (HIJACKED, Status.FALSE, "no DNAT rule for port 10250"),
        (MIXED, Status.FALSE, "0 rules in legacy, 4 rules in nf_tables")]
    assert obs.events == ()


def test_a_hostport_dnat_on_the_kubelets_port_turns_true_and_its_removal_false() -> None:
    dumps = Dumps(iptables_nft_save=KUBE_PROXY + HOSTILE)
    c = check(dumps)
    hijacked = look(c).conditions[0]
    assert (hijacked.status, hijacked.reason) == (Status.TRUE, "KubeletPortDNAT")
    rule = "-A CNI-DN-9a9a -p tcp -m tcp --dport 10250 -j DNAT --to-destination 10.88.0.9:10250"
    assert f"nat: {rule}" in hijacked.message
    dumps.outputs["iptables_nft_save"] = KUBE_PROXY
    assert look(c).conditions[0].status is Status.FALSE


def test_rules_in_both_backends_turn_mixed_true() -> None:
    obs = look(check(Dumps(iptables_nft_save=KUBE_PROXY, iptables_legacy_save="*filter\n-A INPUT -j ACCEPT\n")))
    mixed = obs.conditions[1]
    assert (mixed.type, mixed.status, mixed.reason) == (MIXED, Status.TRUE, "BothBackendsHoldRules")
    assert mixed.message.startswith("1 rules in legacy, 4 rules in nf_tables")


def test_an_unexpected_reject_is_one_event_while_it_stays_and_again_once_it_comes_back() -> None:
    dumps = Dumps(iptables_nft_save=KUBE_PROXY + HOSTILE)
    c = check(dumps)
    (event,) = look(c).events
    assert (event.reason, event.message.split(" (")[0]) == (
        "UnexpectedFirewallRule", "filter: -A INPUT -p tcp -m tcp --dport 10255 -j REJECT --reject-with tcp-reset")
    assert look(c).events == ()
    dumps.outputs["iptables_nft_save"] = KUBE_PROXY
    assert look(c).events == ()
    dumps.outputs["iptables_nft_save"] = KUBE_PROXY + HOSTILE
    assert len(look(c).events) == 1


def test_a_tool_that_fails_makes_the_conditions_unknown_with_its_words() -> None:
    obs = look(check(Dumps(iptables_nft_save="fail")))
    assert {c.status for c in obs.conditions} == {Status.UNKNOWN}
    assert "Permission denied" in obs.error


def test_without_the_split_tools_the_plain_one_is_the_only_backend_and_mixed_is_not_reported() -> None:
    obs = look(check(Dumps(iptables_save=HOSTILE), tools={"iptables": ("iptables-save",)}))
    assert [c.type for c in obs.conditions] == [HIJACKED]


def test_no_tool_no_report() -> None:
    dumps = Dumps()
    assert look(check(dumps, tools={})) == Observation("firewall", NOW)
    assert dumps.calls == []


def test_an_nf_tables_dump_runs_again_only_when_the_ruleset_generation_moved() -> None:
    dumps, kernel = Dumps(iptables_nft_save=KUBE_PROXY + HOSTILE, iptables_legacy_save=""), Kernel()
    kernel.generation = 7
    c = check(dumps, kernel=kernel)
    first = look(c)
    assert len(first.events) == 1
    assert dumps.calls == ["iptables-legacy-save", "iptables-nft-save"]
    dumps.outputs["iptables_nft_save"] = KUBE_PROXY  # (a dump now would see the REJECT and the DNAT gone)
    kept = look(c)
    assert dumps.calls == ["iptables-legacy-save", "iptables-nft-save", "iptables-legacy-save"]
    assert (kept.conditions, kept.events) == (first.conditions, ())
    kernel.generation = 8
    moved = look(c)
    assert dumps.calls[-1] == "iptables-nft-save"
    assert moved.conditions[0].status is Status.FALSE
    kernel.generation = None  # the kernel stopped telling: every look dumps
    look(c)
    look(c)
    assert dumps.calls[-4:] == ["iptables-legacy-save", "iptables-nft-save"] * 2


def test_a_failed_dump_is_not_kept_for_its_generation() -> None:
    dumps, kernel = Dumps(iptables_nft_save="fail"), Kernel()
    kernel.generation = 3
    c = check(dumps, tools={"nf_tables": ("iptables-nft-save",)}, kernel=kernel)
    assert look(c).conditions[0].status is Status.UNKNOWN
    dumps.outputs["iptables_nft_save"] = KUBE_PROXY
    assert look(c).conditions[0].status is Status.FALSE
    assert dumps.calls == ["iptables-nft-save"] * 2


def test_a_legacy_backend_without_a_table_is_not_dumped_and_holds_no_rule() -> None:
    dumps, kernel = Dumps(iptables_nft_save=KUBE_PROXY, iptables_legacy_save="*filter\n-A INPUT -j ACCEPT\n"), Kernel()
    kernel.tables["iptables-legacy-save"] = False
    c = check(dumps, kernel=kernel)
    assert look(c).conditions[1].message == "0 rules in legacy, 4 rules in nf_tables"
    assert dumps.calls == ["iptables-nft-save"]
    kernel.tables["iptables-legacy-save"] = True
    assert look(c).conditions[1].status is Status.TRUE
    assert dumps.calls[-2:] == ["iptables-legacy-save", "iptables-nft-save"]


def test_the_plain_tools_are_dumped_every_look_whatever_the_generation() -> None:
    dumps, kernel = Dumps(iptables_save=HOSTILE), Kernel()
    kernel.generation = 1
    c = check(dumps, tools={"iptables": ("iptables-save", "ip6tables-save")}, kernel=kernel)
    look(c)
    look(c)
    assert dumps.calls == ["iptables-save", "ip6tables-save"] * 2


def test_parse_keeps_table_chain_and_rule() -> None:
    (rule,) = parse_save("*nat\n:X - [0:0]\n-A X -p udp --dport 53 -j DNAT --to-destination 1.2.3.4\nCOMMIT\n")
    assert (rule.table, rule.chain, rule.target(), rule.dport()) == ("nat", "X", "DNAT", "53")


def test_validate_names_the_field() -> None:
    assert problems(Config(kubelet_port=0, allowed_chains=("",))) == [
        "kubeletPort: must be at least 1 and at most 65535, got 0",
        "allowedChains[0]: must be a chain name prefix, got ''"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
