"""`live_pods`: the live pods by namespace and by label value, and the last cycle's index patched for the nodes whose
pods changed: the lists nothing joined or left are the very objects they were, the others hold what a fresh index
holds."""

from __future__ import annotations

from collections import Counter

from remediator.model.records import PodRecord
from remediator.state.derived import PerList
from remediator.state.live_pods import LivePods


def _pod(name: str, node: str = "n1", namespace: str = "shop", phase: str = "Running", **fields: object) -> PodRecord:
    return PodRecord(namespace=namespace, name=name, uid=f"uid-{name}", node_name=node, phase=phase,
                     **fields)  # type: ignore[arg-type]


def test_live_pods_by_label_value_match_the_key_and_value_in_that_namespace_only() -> None:
    web1 = _pod("web1", labels={"app": "web"})
    web2 = _pod("web2", "n2", labels={"app": "web", "tier": "front"})
    db = _pod("db", labels={"app": "db"})
    unlabelled = _pod("unlabelled")
    elsewhere = _pod("elsewhere", namespace="ops", labels={"app": "web"})
    finished = _pod("finished", phase="Succeeded", labels={"app": "web"})
    live = LivePods({"n1": [web1, db, unlabelled, elsewhere, finished], "n2": [web2]})
    assert live.labelled("shop", "app", "web") == [web1, web2]
    assert live.labelled("shop", "app", "db") == [db]
    assert live.labelled("shop", "app", "cache") == []
    assert live.labelled("shop", "tier", "front") == [web2]
    assert live.labelled("ops", "app", "web") == [elsewhere]
    assert live.labelled("shop", "missing", "") == []


def test_a_label_with_an_empty_value_is_indexed_under_the_empty_value() -> None:
    empty = _pod("empty", labels={"canary": ""})
    assert LivePods({"n1": [empty]}).labelled("shop", "canary", "") == [empty]


WEB1, WEB2 = _pod("web1", labels={"app": "web"}), _pod("web2", "n2", labels={"app": "web"})
DB = _pod("db", "n2", labels={"app": "db"})
OPS = _pod("ops", "n3", namespace="ops", labels={"app": "web"})


def _built(pods_by_node: dict[str, list[PodRecord]], kept: PerList[tuple[PodRecord, ...]]) -> LivePods:
    live = LivePods(pods_by_node, kept)
    for namespace, value in (("shop", "web"), ("shop", "db"), ("ops", "web")):
        live.labelled(namespace, "app", value)
    return live


def _same_as_fresh(live: LivePods, pods_by_node: dict[str, list[PodRecord]]) -> None:
    fresh = LivePods(pods_by_node)
    for namespace in ("shop", "ops", "new"):
        assert Counter(map(id, live.in_namespace(namespace))) == Counter(map(id, fresh.in_namespace(namespace)))
        for value in ("web", "db", "cache"):
            assert Counter(map(id, live.labelled(namespace, "app", value))) == Counter(
                map(id, fresh.labelled(namespace, "app", value)))


def test_the_next_cycles_index_patches_only_what_a_changed_node_s_pods_joined_or_left() -> None:
    kept = PerList[tuple[PodRecord, ...]]()
    first = {"n1": [WEB1], "n2": [WEB2, DB], "n3": [OPS]}
    last = _built(first, kept)
    web3 = _pod("web3", "n2", labels={"app": "web"})
    restarted = _pod("db", "n2", labels={"app": "db"})  # a new record of the same pod
    changed = {**first, "n2": [WEB2, restarted, web3]}
    live = LivePods.after(last, changed, kept)
    _same_as_fresh(live, changed)
    assert live.labelled("shop", "app", "web") == [WEB1, WEB2, web3], "a pod that joined comes last"
    assert live.labelled("shop", "app", "db")[0] is restarted
    assert live.labelled("ops", "app", "web") is last.labelled("ops", "app", "web"), "untouched: the very list"
    assert live.in_namespace("ops") is last.in_namespace("ops")


def test_a_node_gone_takes_its_pods_out_a_new_node_puts_its_in_and_an_emptied_value_goes() -> None:
    kept = PerList[tuple[PodRecord, ...]]()
    first = {"n1": [WEB1], "n2": [WEB2, DB], "n3": [OPS]}
    last = _built(first, kept)
    moved = {"n1": [WEB1], "n3": [OPS], "n4": [WEB2]}  # n2 gone, its web pod's record on a new node
    live = LivePods.after(last, moved, kept)
    _same_as_fresh(live, moved)
    assert live.labelled("shop", "app", "db") == [] and "db" not in live._labelled[("shop", "app")]
    assert live.labelled("shop", "app", "web") == [WEB1, WEB2], "the same record, once"
    finished = {**moved, "n3": [_pod("ops", "n3", namespace="ops", phase="Succeeded", labels={"app": "web"})]}
    after_that = LivePods.after(live, finished, kept)
    assert after_that.in_namespace("ops") == [] and "ops" not in (after_that._by_namespace or {})
    _same_as_fresh(after_that, finished)


def test_an_index_that_built_nothing_leaves_the_next_to_build_its_own() -> None:
    kept = PerList[tuple[PodRecord, ...]]()
    last = LivePods({"n1": [WEB1]}, kept)
    live = LivePods.after(last, {"n1": [WEB1], "n2": [WEB2]}, kept)
    assert live._by_namespace is None and live.labelled("shop", "app", "web") == [WEB1, WEB2]


def test_a_new_record_of_a_listed_pod_takes_its_place_unless_its_label_value_changed() -> None:
    kept = PerList[tuple[PodRecord, ...]]()
    web0 = _pod("web0", "n2", labels={"app": "web"})
    first = {"n1": [WEB1], "n2": [web0, WEB2, DB], "n3": [OPS]}
    last = _built(first, kept)
    restarted = _pod("web0", "n2", labels={"app": "web"}, start_time=None)  # a new record of the same pod
    relabelled = _pod("web2", "n2", labels={"app": "db"})  # the same pod, now under another value
    changed = {**first, "n2": [restarted, relabelled, DB]}
    live = LivePods.after(last, changed, kept)
    _same_as_fresh(live, changed)
    assert live.labelled("shop", "app", "web") == [WEB1, restarted], "in web0's place"
    assert live.labelled("shop", "app", "web")[1] is restarted
    assert live.labelled("shop", "app", "db") == [DB, relabelled], "left web, joined db: last"
    assert [p.name for p in live.in_namespace("shop")] == ["web1", "web0", "web2", "db"], "each in its place"
    assert live.in_namespace("shop")[2] is relabelled


def test_a_namespace_s_list_waits_for_its_few_changes_until_asked_and_then_holds_them_all_in_order() -> None:
    kept = PerList[tuple[PodRecord, ...]]()
    pods = [_pod(f"p{i:02d}", f"n{i}", labels={"app": "web"}) for i in range(50)]
    first = {f"n{i}": [p] for i, p in enumerate(pods)}
    last = _built(first, kept)
    last.in_namespace("shop")
    once = _pod("p03", "n3", labels={"app": "web"}, start_time=None)
    second = {**first, "n3": [once]}
    middle = LivePods.after(last, second, kept)
    assert "shop" in middle._pending, "one change of fifty pods: not applied yet"
    twice = _pod("p03", "n3", labels={"app": "web"}, start_time=None)
    new = _pod("p50", "n50", labels={"app": "web"})
    third = {**second, "n3": [twice], "n50": [new]}
    live = LivePods.after(middle, third, kept)
    assert "shop" in live._pending and middle._pending["shop"] != live._pending["shop"]
    _same_as_fresh(live, third)
    assert live.in_namespace("shop")[3] is twice and live.in_namespace("shop")[-1] is new
    assert "shop" not in live._pending
    assert [p.name for p in middle.in_namespace("shop")][3] == "p03" and middle.in_namespace("shop")[3] is once
    many = {**first, **{f"n{i}": [_pod(f"p{i:02d}", f"n{i}", labels={"app": "web"}, start_time=None)]
                        for i in range(7)}}
    assert "shop" not in LivePods.after(last, many, kept)._pending, "seven of fifty: applied at once"
