"""Pressure stall information, read for the pressure checks (cpu, memory, disk, iostall).

PSI (pressure stall information, kernel >= 4.20) lives in `/proc/pressure/{cpu,memory,io}`:

    some avg10=1.53 avg60=0.87 avg300=0.40 total=3127363
    full avg10=0.00 avg60=0.00 avg300=0.00 total=0

`avg*` are the percentages of wall time in which some (or all non-idle) tasks were stalled on the resource,
`total` the cumulative stall in microseconds. A kernel without PSI has no such files; one booted with `psi=0`
has them but refuses to read them (EOPNOTSUPP). Both mean "PSI unavailable", which is not an error.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from agent.host import HostRoot


@dataclass(frozen=True)
class PSILine:
    avg10: float  # percent, 0..100
    avg60: float
    avg300: float
    total: int  # microseconds stalled since boot


@dataclass(frozen=True)
class Pressure:
    some: PSILine
    full: PSILine | None  # absent from /proc/pressure/cpu before kernel 5.13


def read_pressure(host: HostRoot, host_path: str) -> Pressure | None:
    """The parsed PSI file, or None when the kernel has no PSI. Raises ValueError (with the path) on bad data."""
    try:
        text = host.read_text(host_path)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.EOPNOTSUPP:  # PSI compiled in but disabled at boot (psi=0)
            return None
        raise ValueError(f"{host_path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ValueError(f"{host_path}: not text") from e
    try:
        return parse_pressure(text)
    except ValueError as e:
        raise ValueError(f"{host_path}: {e}") from e


def parse_pressure(text: str) -> Pressure:
    lines: dict[str, PSILine] = {}
    for raw in text.splitlines():
        if not raw.strip():
            continue
        kind, *fields = raw.split()
        if kind not in ("some", "full"):
            raise ValueError(f"unexpected line {raw.strip()!r}")
        if kind in lines:
            raise ValueError(f"{kind!r} line appears twice")
        lines[kind] = _parse_line(kind, fields)
    if "some" not in lines:
        raise ValueError("no 'some' line" if lines else "empty")
    return Pressure(some=lines["some"], full=lines.get("full"))


def _parse_line(kind: str, fields: list[str]) -> PSILine:
    values: dict[str, str] = {}
    for field in fields:
        key, sep, value = field.partition("=")
        if not sep:
            raise ValueError(f"{kind}: field {field!r} is not key=value")
        values[key] = value
    missing = [k for k in ("avg10", "avg60", "avg300", "total") if k not in values]
    if missing:
        raise ValueError(f"{kind}: missing {', '.join(missing)}")
    avgs: list[float] = []
    for key in ("avg10", "avg60", "avg300"):
        try:
            avg = float(values[key])
        except ValueError:
            raise ValueError(f"{kind}: {key}={values[key]!r} is not a number") from None
        if not 0 <= avg <= 100:  # also rejects nan
            raise ValueError(f"{kind}: {key}={values[key]} is not a percentage")
        avgs.append(avg)
    try:
        total = int(values["total"])
    except ValueError:
        raise ValueError(f"{kind}: total={values['total']!r} is not an integer") from None
    if total < 0:
        raise ValueError(f"{kind}: total={total} is negative")
    return PSILine(avgs[0], avgs[1], avgs[2], total)


def describe(resource: str, pressure: Pressure | None) -> str:
    if pressure is None:
        return f"{resource} PSI unavailable"
    text = f"{resource} PSI some avg60={pressure.some.avg60:.1f}%"
    if pressure.full is not None:
        text += f" full avg60={pressure.full.avg60:.1f}%"
    return text
