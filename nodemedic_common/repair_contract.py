"""The repair contract between the remediator and the agent, through the API only (the two never import each other).

The remediator asks; the agent of that node acts and answers:
- **The ask**: the Node annotation `nodemedic.io/repair`, a JSON object the remediator alone writes (a
  ValidatingAdmissionPolicy in the chart refuses it from every other identity, people and the agent included). It
  holds the repair ladder's state; the agent reads four of its keys: `id` (new for every step started), `action`,
  `service` (for a restart) and `requested` (RFC 3339). The agent acts on `restart` and `reboot` only; `replace` is
  the node autoscaler's and `person` a person's.
- **The answer**: the agent's own condition `NodemedicRepair` on its Node, written through nodes/status like every
  other condition it owns: status True while it acts, False once it is done; the reason says how it went and the
  message starts with "request <id>: " so the remediator knows which ask it answers. A reboot's answer carries the
  boot ids before and after (`/proc/sys/kernel/random/boot_id`): a reboot is proven by the id changing.
- **A person's controls**: `nodemedic.io/repair-hold` (any value: take no further step) and `nodemedic.io/repair-next`
  (the id of the step to end now), written with `kubectl nodemedic repair`; the remediator consumes `repair-next`.
- **Opt-out**: a node labelled `nodemedic.io/no-repair=true` is never repaired (it may still be tainted and drained).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from enum import StrEnum

REPAIR_ANNOTATION = "nodemedic.io/repair"
HOLD_ANNOTATION = "nodemedic.io/repair-hold"
NEXT_ANNOTATION = "nodemedic.io/repair-next"
OPT_OUT_LABEL = "nodemedic.io/no-repair"
ANSWER_CONDITION = "NodemedicRepair"
# The services a ladder may restart, as the agent's config names their commands. The container runtime goes by its
# own name: restarting containerd on a CRI-O node would be a silent no-op.
SERVICES = ("kubelet", "containerd", "crio")
MAX_ANNOTATION_BYTES = 16 * 1024  # the ladder's history is bounded well under this (remediator/repair/state.py)
_ID = re.compile(r"[a-z0-9][a-z0-9.-]{0,62}")


class RepairAction(StrEnum):
    RESTART = "restart"  # a node service, by the agent
    REBOOT = "reboot"  # the node, by the agent
    REPLACE = "replace"  # the node, by the node autoscaler that owns it (Karpenter: its NodeClaim deleted)
    PERSON = "person"  # a person is told, and nodemedic stops


AGENT_ACTIONS = (RepairAction.RESTART, RepairAction.REBOOT)


class AnswerReason(StrEnum):
    ACTING = "Acting"  # status True: the agent accepted the ask and is carrying it out (for a reboot: about to)
    DONE = "Done"  # status False: the service answered after its restart / the node came back with a new boot id
    FAILED = "Failed"  # status False: the command failed, or the node came back with the same boot id
    REFUSED = "Refused"  # status False: the agent will not do it (not configured, unknown service, stale ask)


@dataclass(frozen=True)
class RepairRequest:
    """What the agent reads of the ask."""

    id: str
    action: RepairAction
    service: str  # "" unless action is restart
    requested: dt.datetime


class ContractError(ValueError):
    """The annotation or the answer is not what this contract says (the message names the field)."""


def parse_request(text: str) -> RepairRequest | None:
    """The ask in a `nodemedic.io/repair` annotation; None when the ladder's current step is not the agent's.
    Raises ContractError on anything malformed: the agent answers Refused and does nothing."""
    raw = json_object(text, REPAIR_ANNOTATION)
    id_ = raw.get("id")
    if not isinstance(id_, str) or not _ID.fullmatch(id_):
        raise ContractError(f"{REPAIR_ANNOTATION}: id: expected a lowercase name of at most 63 characters")
    try:
        action = RepairAction(str(raw.get("action")))
    except ValueError:
        raise ContractError(f"{REPAIR_ANNOTATION}: action: expected one of {', '.join(RepairAction)}") from None
    if action not in AGENT_ACTIONS:
        return None
    service = raw.get("service", "")
    if action == RepairAction.RESTART and service not in SERVICES:
        raise ContractError(f"{REPAIR_ANNOTATION}: service: expected one of {', '.join(SERVICES)}")
    if action != RepairAction.RESTART and service:
        raise ContractError(f"{REPAIR_ANNOTATION}: service: only a restart names one")
    requested = parse_time(raw.get("requested"))
    if requested is None:
        raise ContractError(f"{REPAIR_ANNOTATION}: requested: expected an RFC 3339 time such as 2026-01-02T03:04:05Z")
    return RepairRequest(id_, action, str(service), requested)


def json_object(text: str, where: str) -> dict[str, object]:
    """The JSON object an annotation holds, bounded; ContractError saying what it is instead."""
    if len(text.encode()) > MAX_ANNOTATION_BYTES:
        raise ContractError(f"{where}: longer than {MAX_ANNOTATION_BYTES} bytes")
    try:
        raw = json.loads(text)
    except RecursionError:  # `[[[[...` nested past the parser's depth: bad data, not a crash
        raise ContractError(f"{where}: not JSON (nested too deeply)") from None
    except ValueError as e:
        raise ContractError(f"{where}: not JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ContractError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    return raw


def parse_time(value: object) -> dt.datetime | None:
    """An RFC 3339 UTC time as the API writes them ("2026-01-02T03:04:05Z"), or None."""
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def format_time(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def answer_message(request_id: str, text: str) -> str:
    return f"request {request_id}: {text}"


def answered_id(message: str) -> str | None:
    """The id of the ask an answer's message is about, or None when it names none."""
    if not message.startswith("request "):
        return None
    head = message[len("request "):].split(":", 1)[0]
    return head if _ID.fullmatch(head) else None
