"""The engines' migrations worded for a person: the list (`kubectl nodemedic migrations`) and one plan with each step
and its status (`kubectl nodemedic migrations NAME`)."""

from __future__ import annotations

from collections.abc import Sequence

from nodemedic_common.repair_contract import format_time
from nodemedic_common.terminal_text import printable
from remediator.kubectl.render import table
from remediator.model.migration import Migration


def listing(found: Sequence[Migration], problems: Sequence[str]) -> str:
    if not found and not problems:
        return "no migrations: no engine with `approval: required` has proposed one"
    rows = [("NAME", "ENGINE", "STEPS", "GAIN", "DECISION", "PHASE", "PROPOSED", "EXPIRES")]
    rows += [(m.name, m.engine, str(len(m.steps)), _gain(m), _decision(m), str(m.phase or "not nodemedic's"),
              format_time(m.proposed), format_time(m.expires)) for m in found]
    return "\n".join([*table(rows, indent=""), *(printable(p) for p in problems)])


def detail(m: Migration) -> str:
    lines = [f"{m.name}  {m.engine}  {m.phase or 'not proposed by nodemedic'}",
             f"gain        {_gain(m)}",
             f"decision    {_decision(m)}",
             f"proposed    {format_time(m.proposed)}, decide by {format_time(m.expires)}",
             f"disrupts    {', '.join(m.disrupts) or '-'}"]
    if m.message:
        lines.append(f"status      {m.message}")
    rows = [("STEP", "POD", "OWNER", "FROM", "TO", "STATE", "AT", "REPLACEMENT", "MESSAGE")]
    for i, s in enumerate(m.steps):
        st = m.state(i)
        rows.append((str(i + 1), s.pod, s.owner, s.source, s.target, str(st.state),
                     format_time(st.at) if st.at else "-", st.replacement or "-", st.message or "-"))
    return "\n".join([*(printable(line) for line in lines), *table(rows)])


def _gain(m: Migration) -> str:
    return f"{m.gain.measure} {m.gain.before:g} -> {m.gain.after:g}"


def _decision(m: Migration) -> str:
    return f"{m.decision.value} by {m.decided_by}" if m.decision.value else "waiting"
