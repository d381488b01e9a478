"""The system log monitor: NPD's kmsg/filelog rules over the kernel log, with conditions that recover.

Matching follows node-problem-detector: every new line goes into a ring buffer of `bufferSize` lines; each rule
must match the buffer (lines joined with "\\n") up to the end of the newest line, so a pattern may span lines
but fires once, on the line that completes it. A pattern that cannot match a newline is tried on the newest
line alone, which gives the same matches for less work (and lets `^` mean the start of that line). The message
is the log lines the match covers, plus "; <patternGeneratedMessageSuffix>" when set.

History, as in NPD: on the first read, lines logged before max(now - `lookback`, boot + `delay`) are dropped
(kmsg times are the record's microseconds since boot plus `btime` from /proc/stat; filelog times come from
`pluginConfig`). With no lookback, or no way to date a line, the history is skipped entirely. Lines logged
within `delay` after boot are never matched.

Beyond NPD, a permanent condition recovers: after `recover_after` with no new match it goes back to False with
reason "<Reason>Recovered". And a restart does not reset a True condition: see `LogMonitor.observe`.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.host import HostRoot
from agent.logsources.filelog import FileLogReader
from agent.logsources.journal_hub import JournalHubs
from agent.logsources.journald import JournalEntry
from agent.logsources.kmsg import KmsgReader, KmsgRecord
from agent.logsources.source import LogSource, SourceAbsent
from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Status
from agent.npd.logmonitor_config import LogMonitorConfig, Plugin
from agent.npd.re2 import MAX_MATCHED_BUFFER, bounded
from agent.npd.timestamps import parse_log_timestamp
from agent.npd.vocabulary import RuleType
from agent.sensors.idle import idle_timing
from nodemedic_common.durations import format_duration

DEFAULT_RECOVER_AFTER = dt.timedelta(minutes=10)
# Kernel line -> condition on the API server within about a second needs a short poll of a source that cannot
# say when it has input (a log file, a kmsg fixture file); a poll of an empty file costs one syscall.
DEFAULT_TIMING = CheckTiming(interval=dt.timedelta(milliseconds=200), timeout=dt.timedelta(seconds=5))
# A source that can (the /dev/kmsg device, sd-journal's descriptor) wakes the monitor itself (WaitsForInput); then the
# interval only paces the quiet-period timers: every 30 s while one runs (a True condition waiting to recover, the
# defaults waiting for the first `recover_after` since the start, a read that failed), else the idle pace: nothing is
# due until a line comes, and the monitors on every node otherwise woke twice a minute to find that out.
WAITING_TIMING = CheckTiming(interval=dt.timedelta(seconds=30), timeout=dt.timedelta(seconds=5))
QUIET_TIMING = idle_timing(WAITING_TIMING)
UNREADABLE_REASON = "LogUnreadable"


@dataclass(frozen=True)
class _Held:
    """What this monitor currently says about one condition type."""

    status: Status
    reason: str
    message: str
    last_match: dt.datetime | None = None  # when a rule last set it True


@dataclass(frozen=True)
class _Line:
    text: str
    at: dt.datetime | None  # when it was logged, if the source tells


class LogMonitor:
    """One NPD system-log-monitor config as a `Check`.

    `recover_after` is the quiet period after which a permanent condition goes back to False (None: never,
    as in NPD). `tz` is the zone of filelog timestamps without one (default: the agent's local zone). `journals`
    are the agent's shared journal readers (`agent/logsources/journal_hub.py`); without them a journald monitor
    has a reader of its own.
    """

    def __init__(self, config: LogMonitorConfig, *, host: HostRoot,
                 recover_after: dt.timedelta | None = DEFAULT_RECOVER_AFTER, timing: CheckTiming = DEFAULT_TIMING,
                 tz: dt.tzinfo | None = None, journals: JournalHubs | None = None) -> None:
        self.config = config
        self.name = config.source or config.path.stem
        self._timing = timing
        self.condition_types = tuple(condition.type for condition in config.conditions)
        self._host = host
        self._recover_after = recover_after
        self._tz = tz
        log_path = host.path(config.log_path)
        # The source, and how one of its records becomes a line to match (given `now`, which dates a filelog
        # timestamp written without a year): chosen once, by the config's plugin.
        self._reader: LogSource[Any]
        self._line: Callable[[Any, dt.datetime], _Line | None]
        journal_present = True
        match config.plugin:
            case Plugin.JOURNALD:
                hub = (journals or JournalHubs(host.root)).hub(log_path if config.log_path else None)
                self._reader, self._line = hub.subscribe(config.plugin_config.source), _journal_line
                journal_present = hub.present()
            case Plugin.KMSG:
                self._reader, self._line = KmsgReader(log_path), self._kmsg_line
            case Plugin.FILELOG:
                self._reader, self._line = FileLogReader(log_path), self._translate
        self._buffer: deque[str] = deque(maxlen=config.buffer_size)
        self._held: dict[str, _Held] = {}
        self._started_at: dt.datetime | None = None
        self._boot: dt.datetime | None = None
        self._history_from: dt.datetime | None = None  # lines before this are history to drop (lookback)
        self._in_history = False  # True until the backlog present at start has been read
        self._live_from: dt.datetime | None = None  # lines before boot + delay are never matched
        # the log does not exist on this host (no journal): nothing to report, not even the config's defaults
        self._absent = config.plugin is Plugin.JOURNALD and not journal_present
        self._timers_running = True  # a quiet period runs, or the last read failed (see WAITING_TIMING)

    @property
    def timing(self) -> CheckTiming:
        if self._absent:
            return QUIET_TIMING  # looked at again at the idle pace: a journal may appear
        if self.input_fd() is None:
            return self._timing
        return WAITING_TIMING if self._timers_running else QUIET_TIMING

    @property
    def absent(self) -> bool:
        """The log does not exist on this host (no journal): the monitor reports nothing."""
        return self._absent

    def input_fd(self) -> int | None:
        """The source's readable descriptor once it has one (see `WaitsForInput`)."""
        return self._reader.fileno()

    async def close(self) -> None:
        """Release the log source (a journald source closes its journal); see `HoldsResources`."""
        self._reader.close()

    @property
    def metrics_reporting(self) -> bool:
        return self.config.metrics_reporting

    def initial_conditions(self) -> tuple[ConditionReport, ...]:
        """The config's defaults (`conditions[]`): what to write for a type the Node does not carry yet. None for a
        log this host does not have: a default would say "no problem" about what nobody looked at."""
        if self._absent:
            return ()
        return tuple(ConditionReport(type=c.type, status=Status.FALSE, reason=c.reason, message=c.message)
                     for c in self.config.conditions)

    async def observe(self, now: dt.datetime) -> Observation:
        """Read the lines logged since the last call, match them, and report.

        Events: one per temporary-rule match. Conditions, per type in `conditions[]`:
        - after a permanent-rule match: True with the rule's reason and the matched lines;
        - True with no new match for `recover_after`: False, reason "<Reason>Recovered";
        - no match since this monitor started: **no report at all** until `recover_after` has passed since the
          start, then the config's default (False). A restart therefore never flips a condition that is True on
          the Node back to False before the quiet period; the state machine keeps what the Node carries (and
          gives a type it has never seen the default from `initial_conditions`). With `recover_after=None`
          such a type is reported only once a rule matches.
        If the log cannot be read, every condition is Unknown and `error` says why; nothing raises. A log this
        host does not have (no journal) gives an empty observation: no condition, no error.
        """
        if self._started_at is None:
            self._start(now)
        try:
            lines = self._read(now)
        except SourceAbsent:
            self._absent = True
            return Observation(check=self.name, at=now)
        except OSError as exc:
            self._timers_running = True
            return self._failed(now, exc)
        self._absent = False
        events: list[EventReport] = []
        for line in lines:
            events.extend(self._push(line, now))
        conditions = self._conditions(now)
        self._timers_running = self._quiet_period_runs(now)
        return Observation(check=self.name, at=now, conditions=conditions, events=tuple(events))

    def _quiet_period_runs(self, now: dt.datetime) -> bool:
        """A condition will change with time alone: the defaults are still waiting for `recover_after` since the
        start, or a True condition for `recover_after` without a match."""
        assert self._started_at is not None
        if self._recover_after is None:
            return False
        return now - self._started_at < self._recover_after or any(
            held.status is Status.TRUE and held.last_match is not None for held in self._held.values())

    def _start(self, now: dt.datetime) -> None:
        self._started_at = now
        self._boot = _boot_time(self._host)
        config = self.config
        if self._boot is not None and config.delay > dt.timedelta(0):
            self._live_from = self._boot + config.delay
        dated = {Plugin.KMSG: self._boot is not None, Plugin.JOURNALD: True,
                 Plugin.FILELOG: config.plugin_config.timestamp is not None}[config.plugin]
        if config.lookback <= dt.timedelta(0) or not dated:
            # Nothing to replay, or no way to tell how old a line is: skip the history rather than guess.
            self._reader.seek_end()
            return
        self._history_from = now - config.lookback
        if self._live_from is not None:
            self._history_from = max(self._history_from, self._live_from)
        self._in_history = True
        # sd-journal seeks past the older entries itself; the kernel log and files are read whole, filtered in _read
        self._reader.start_at(self._history_from)

    def _read(self, now: dt.datetime) -> list[_Line]:
        translated = (self._line(record, now) for record in self._reader.read())
        lines = [line for line in translated if line is not None]
        if self._in_history:
            history_from = self._history_from
            lines = [line for line in lines if line.at is None or history_from is None or line.at >= history_from]
            self._in_history = self._reader.behind  # the backlog is read once a call ends before its bound
        if self._live_from is not None:
            lines = [line for line in lines if line.at is None or line.at >= self._live_from]
        return lines

    def _kmsg_line(self, record: KmsgRecord, now: dt.datetime) -> _Line:
        return _Line(record.message, _logged_at(self._boot, record.usec))

    def _translate(self, text: str, now: dt.datetime) -> _Line | None:
        """NPD filelog: the last group of `timestamp` and of `message`; a line that does not fit is skipped."""
        plugin = self.config.plugin_config
        at = None
        text = bounded(text)
        if plugin.timestamp is not None:
            found = plugin.timestamp.search(text)
            if found is None:
                return None
            try:
                at = parse_log_timestamp(found.group(plugin.timestamp.groups) or "", plugin.strptime_format,
                                         now=now, tz=self._tz)
            except ValueError:
                return None
        if plugin.message is not None:
            found = plugin.message.search(text)
            if found is None:
                return None
            text = found.group(plugin.message.groups) or ""
        return _Line(text, at)

    def _push(self, line: _Line, now: dt.datetime) -> list[EventReport]:
        if any(skip in line.text for skip in self.config.skip_list):
            return []
        text = bounded(line.text)  # the work per line is bounded, whatever its length (agent/npd/re2.py)
        self._buffer.append(text)
        joined: str | None = None
        events: list[EventReport] = []
        for rule in self.config.rules:
            if rule.spans_lines:
                joined = _newest(self._buffer) if joined is None else joined
                found = rule.regex.search(joined)
                if found is None:
                    continue
                count = joined.count("\n", found.start()) + 1
                message = "\n".join(list(self._buffer)[-count:])
            elif rule.regex.search(text) is not None:
                message = text
            else:
                continue
            if rule.pattern_generated_message_suffix:
                message = f"{message}; {rule.pattern_generated_message_suffix}"
            if rule.type is RuleType.TEMPORARY:
                events.append(EventReport(reason=rule.reason, message=message))
            else:
                # The quiet period counts from when the line was logged (a replayed line is already old).
                at = min(line.at, now) if line.at is not None else now
                self._held[rule.condition] = _Held(Status.TRUE, rule.reason, message, last_match=at)
        return events

    def _conditions(self, now: dt.datetime) -> tuple[ConditionReport, ...]:
        assert self._started_at is not None
        quiet = self._recover_after
        reports: list[ConditionReport] = []
        for default in self.config.conditions:
            held = self._held.get(default.type)
            if held is None:
                if quiet is None or now - self._started_at < quiet:
                    continue  # no evidence yet: leave whatever the Node carries
                held = _Held(Status.FALSE, default.reason, default.message)
            elif (held.status is Status.TRUE and quiet is not None and held.last_match is not None
                  and now - held.last_match >= quiet):
                held = _Held(Status.FALSE, f"{held.reason}Recovered",
                             f"no new log line matched {held.reason} for {format_duration(quiet)}; "
                             f"last: {held.message}")
            self._held[default.type] = held
            reports.append(ConditionReport(type=default.type, status=held.status, reason=held.reason,
                                           message=held.message))
        return tuple(reports)

    def _failed(self, now: dt.datetime, exc: OSError) -> Observation:
        error = f"{self._reader.path}: {exc.strerror or exc}"
        return Observation(check=self.name, at=now, error=error, conditions=tuple(
            ConditionReport(type=t, status=Status.UNKNOWN, reason=UNREADABLE_REASON, message=error)
            for t in self.condition_types))


def _journal_line(entry: JournalEntry, now: dt.datetime) -> _Line:
    return _Line(entry.message, entry.at)


def _newest(buffer: deque[str]) -> str:
    """The buffer's newest lines, joined, up to MAX_MATCHED_BUFFER (always the newest line: at most
    MAX_MATCHED_LINE): a multi-line rule's match ends at the newest line, so the oldest lines are the ones to drop."""
    taken: list[str] = []
    size = 0
    for text in reversed(buffer):
        size += len(text) + 1
        if taken and size > MAX_MATCHED_BUFFER:
            break
        taken.append(text)
    return "\n".join(reversed(taken))


def _boot_time(host: HostRoot) -> dt.datetime | None:
    """The host's boot time from `btime` in /proc/stat; None when it cannot be read."""
    try:
        for line in host.read_text("/proc/stat").splitlines():
            if line.startswith("btime "):
                return dt.datetime.fromtimestamp(int(line.split()[1]), dt.UTC)
    except (OSError, ValueError, IndexError, OverflowError):
        return None
    return None


def _logged_at(boot: dt.datetime | None, usec: int) -> dt.datetime | None:
    """When a kmsg record was logged; None (undated) without a boot time, or for a stamp past any date (a corrupt
    record must not raise: the valid records read with it would be lost)."""
    if boot is None:
        return None
    try:
        return boot + dt.timedelta(microseconds=usec)
    except OverflowError:
        return None
