"""`kubectl nodemedic savings`: the remediator's savings ledger, read from its ConfigMap with the person's own
credentials (`get` on that ConfigMap: the chart's viewer role), whether or not a remediator leads right now; the
figures of the rooms still open are counted up to now, as the leader counts them."""

from __future__ import annotations

import datetime as dt
import json

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError, TooLarge
from remediator.kubectl import reach, savings_view
from remediator.kubectl.names import DNS_SUBDOMAIN
from remediator.kubectl.reach import NotFound
from remediator.model.savings import MAX_LEDGER, LedgerError, configmap_path, ledger_of, to_json

FLAG = "--savings-ledger"


async def ledger_name(kube: Kube, namespace: str) -> str:
    """The ConfigMap the remediator pods in `namespace` keep their ledger in (their --savings-ledger)."""
    try:
        pods = await reach.remediator_pods(kube, namespace)
    except NotFound as e:
        raise NotFound(f"{e}; or name its savings ledger with --ledger NAME") from None
    name = reach.pod_args(pods[0]).get(FLAG, "")
    if not name:
        raise NotFound(f"the remediator in {namespace} keeps no savings ledger (no {FLAG} argument)")
    if not DNS_SUBDOMAIN.fullmatch(name):
        raise NotFound(f"the remediator pods in {namespace} name a ledger this plugin cannot read ({FLAG}={name!r})")
    return name


async def show(kube: Kube, namespace: str, name: str | None, *, days: int, output: str, now: dt.datetime) -> str:
    name = name or await ledger_name(kube, namespace)
    where = f"{namespace}/{name}"
    try:
        doc = await kube.request("GET", configmap_path(namespace, name), limit=MAX_LEDGER + 65536)
    except TooLarge:
        raise NotFound(f"the savings ledger {where} is over {MAX_LEDGER >> 20} MiB: not nodemedic's") from None
    except ApiError as e:
        if e.status == 404:
            raise NotFound(f"no savings ledger {where} yet: the remediator writes it when the placement engine first "
                           "seats a pending pod without a new node") from None
        if e.status == 403:
            raise NotFound(f"not allowed to read configmap {where}: ask for the chart's viewer role "
                           f"(rbac.viewerGroups): {e.message}") from None
        raise
    try:
        ledger = ledger_of(doc, f"configmap {where}")
    except LedgerError as e:
        raise NotFound(str(e)) from None
    if output == "json":
        return json.dumps(to_json(ledger), indent=1)
    return savings_view.render(ledger, where, now, days)
