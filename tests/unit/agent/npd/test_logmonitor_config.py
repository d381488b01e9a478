"""NPD system-log-monitor files load unchanged; mistakes come back as FILE: field.path: message."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from agent.npd.logmonitor_config import DEFAULTS_DIR, ConfigError, DefaultCondition, Plugin, RuleType, load, loads
from agent.npd.re2 import compile_rule_pattern
from agent.npd.timestamps import go_layout_to_strptime, parse_log_timestamp

TESTDATA = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "logmonitor"
BAD = TESTDATA / "bad"


def errors_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(path)
    return caught.value.errors


def test_an_npd_kernel_monitor_file_loads_with_its_values_and_defaults() -> None:
    config = load(TESTDATA / "npd-kernel-monitor.json")

    assert config.plugin is Plugin.KMSG
    assert config.log_path == "/dev/kmsg"
    assert config.source == "custom-kernel-monitor"
    assert config.lookback == dt.timedelta(minutes=5)
    assert config.delay == dt.timedelta(minutes=1)  # "Delay": Go's encoding/json matches keys case-insensitively
    assert config.buffer_size == 5
    assert config.metrics_reporting is False
    assert config.skip_list == (" audit:",)
    assert config.conditions == (
        DefaultCondition("KernelDeadlock", "KernelHasNoDeadlock", "kernel has no deadlock"),
        DefaultCondition("ReadonlyFilesystem", "FilesystemIsNotReadOnly", "Filesystem is not read-only"),
    )
    assert [(r.type, r.condition, r.reason) for r in config.rules] == [
        (RuleType.TEMPORARY, "", "OOMKilling"),
        (RuleType.TEMPORARY, "", "TaskHung"),
        (RuleType.PERMANENT, "KernelDeadlock", "DockerHung"),
        (RuleType.PERMANENT, "ReadonlyFilesystem", "FilesystemIsReadOnly"),
    ]
    assert config.rules[0].pattern_generated_message_suffix == "see https://example.com/oom"
    assert [r.spans_lines for r in config.rules] == [True, False, False, False]  # only the OOM rule has "\n"
    assert config.warnings == (f"{TESTDATA / 'npd-kernel-monitor.json'}: vendorExtension: unknown field, ignored",)


def test_defaults_apply_to_a_minimal_file() -> None:
    config = loads('{"plugin": "kmsg", "rules": []}', path="min.json")

    assert (config.log_path, config.lookback, config.delay, config.buffer_size, config.metrics_reporting) == (
        "/dev/kmsg", dt.timedelta(0), dt.timedelta(0), 10, True)
    assert config.source == ""
    assert config.path == Path("min.json")


def test_a_filelog_file_translates_its_go_timestamp_layout() -> None:
    config = load(TESTDATA / "npd-filelog-monitor.json")

    assert config.plugin is Plugin.FILELOG
    assert config.log_path == "/var/log/kern.log"
    assert config.plugin_config.timestamp_format == "Jan _2 15:04:05"
    assert config.plugin_config.strptime_format == "%b %d %H:%M:%S"
    assert config.plugin_config.message is not None
    assert config.plugin_config.message.pattern == r"kernel: \[.*\] (.*)"


@pytest.mark.parametrize("path", [DEFAULTS_DIR / "kernel-monitor.json", DEFAULTS_DIR / "readonly-monitor.json"],
                         ids=lambda p: p.name)
def test_the_shipped_rule_files_load_without_warnings(path: Path) -> None:
    config = load(path)
    assert config.warnings == ()
    assert config.source == path.stem
    assert not any(rule.spans_lines for rule in config.rules), "single-line rules are matched on one line only"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("syntax-error.json", ["syntax-error.json:6:3: invalid JSON: Expecting ',' delimiter"],
                     id="json-syntax-with-line-and-column"),
        pytest.param("bad-regex.json", [
            "bad-regex.json: rules[3].pattern: invalid regular expression: missing ): unclosed (group (RE2 syntax, as "
            "in node-problem-detector)",
            "bad-regex.json: rules[4].pattern: invalid regular expression: invalid perl operator: (?= (RE2 syntax, as "
            "in node-problem-detector)",
        ], id="bad-regex"),
        pytest.param("typo-required.json", [
            "typo-required.json: plugin: required field is missing (found unknown field 'plugn'; a typo?)",
            "typo-required.json: rules[0].reason: required field is missing (found unknown field 'reasn'; a typo?)",
        ], id="typo-in-required-field"),
        pytest.param("journald-no-source.json", [
            'journald-no-source.json: pluginConfig.source: required for the journald plugin (the SYSLOG_IDENTIFIER '
            'to read, e.g. "kubelet")',
        ], id="journald-without-source"),
        pytest.param("undeclared-condition.json", [
            "undeclared-condition.json: rules[0].condition: 'KernelDedlock' is not declared in conditions[] (it needs "
            "a default reason and message)",
        ], id="permanent-rule-names-undeclared-condition"),
        pytest.param("filelog-without-path.json", [
            "filelog-without-path.json: pluginConfig.timestampFormat: timestamp and timestampFormat go together: "
            "set both or neither",
            "filelog-without-path.json: logPath: required for the filelog plugin (the file to tail)",
        ], id="filelog-needs-path-and-layout"),
        pytest.param("wrong-values.json", [
            "wrong-values.json: plugin: must be one of kmsg, filelog, journald, got 'syslog'",
            "wrong-values.json: conditions[0].type: 'Ready' is owned by the kubelet; choose another condition type",
            "wrong-values.json: conditions[1].reason: must not be empty",
            "wrong-values.json: conditions[2].type: duplicate condition type 'A'",
            "wrong-values.json: rules[0].type: must be temporary or permanent, got 'sometimes'",
            "wrong-values.json: rules[1].condition: required for a permanent rule",
            "wrong-values.json: rules[2].pattern: must not be empty",
            "wrong-values.json: lookback: not a duration: '5 minutes'; use a Go duration such as \"30s\", \"5m\", "
            '"1h30m", "500ms" or "0"',
            "wrong-values.json: delay: must not be negative, got '-1m'",
            "wrong-values.json: skipList: must be a list of strings",
            'wrong-values.json: bufferSize: must be an integer, got a string ("10")',
            'wrong-values.json: metricsReporting: must be true or false, got a string ("yes")',
        ], id="every-wrong-value-at-once"),
    ],
)
def test_bad_files_report_every_error_with_file_and_field(name: str, expected: list[str]) -> None:
    assert errors_of(BAD / name) == [f"{BAD}/{line}" for line in expected]


@pytest.mark.parametrize(
    ("document", "error"),
    [
        pytest.param("[]", "<document>: must be a JSON object, got a list ([])", id="not-an-object"),
        pytest.param('{"plugin": "kmsg", "rules": {}}', "rules: must be a list, got an object ({})", id="rules-object"),
        pytest.param('{"plugin": "kmsg", "rules": [], "bufferSize": 5000}',
                     "bufferSize: must be between 1 and 1000 (0 means the default, 10), got 5000", id="huge-buffer"),
        pytest.param('{"plugin": "kmsg", "rules": [], "pluginConfig": "x"}',
                     'pluginConfig: must be a JSON object, got a string ("x")', id="plugin-config-not-object"),
        pytest.param('{"plugin": "kmsg", "rules": [{"type": "temporary", "reason": "R", "pattern": "(a)\\\\1"}]}',
                     "rules[0].pattern: invalid regular expression: invalid escape sequence: \\1 (RE2 syntax, as in "
                     "node-problem-detector)", id="backreference"),
        # Found by tests/unit/fuzz: accepted, then os.stat raised ValueError at the monitor's first read.
        pytest.param('{"plugin": "kmsg", "rules": [], "logPath": "/dev/kmsg\\u0000"}',
                     "logPath: must not contain a NUL character", id="nul-in-log-path"),
    ],
)
def test_structural_errors_name_the_field(document: str, error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        loads(document, path="f.json")
    assert caught.value.errors == [f"f.json: {error}"]


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    assert errors_of(tmp_path / "missing.json")[0].startswith(f"{tmp_path / 'missing.json'}: cannot read: ")


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        pytest.param(r"task \w+:\d+ blocked", "task kworker:12 blocked", id="plain"),
        pytest.param(r"abc\z", "abc", id="end-of-text"),
        pytest.param(r"a\Q.*+\Eb", "a.*+b", id="quoted-literal"),
        pytest.param(r"\x{41}\x42", "AB", id="hex-braces"),
        pytest.param(r"\101\0", "A\x00", id="go-octal"),
        pytest.param(r"(?<pid>\d+)", "42", id="named-group"),
        pytest.param(r"[[:digit:][:upper:]]+", "4X", id="posix-classes"),
        pytest.param(r"[[:^space:]]+", "ab", id="negated-posix"),
        pytest.param(r"[a[&]+", "a[&", id="literal-bracket-in-class"),
        pytest.param(r"[]a]+", "]a", id="leading-bracket-in-class"),
        pytest.param(r"(?i)oops", "OOPS", id="leading-flag-switch"),
        pytest.param(r"a(?i)b|c", "aB", id="switch-spans-alternatives"),
        pytest.param(r"(x(?s).)y", "x\ny", id="switch-ends-with-its-group"),
        pytest.param(r"\pL+", "ÉtÉ", id="unicode-class"),
        pytest.param(r"(?U)a+", "aaa", id="ungreedy"),
    ],
)
def test_go_re2_syntax_is_matched_as_node_problem_detector_matches_it(pattern: str, text: str) -> None:
    # On RE2 itself (google-re2): the constructs the old translation to Python's re rewrote, or refused (\pL, (?U)).
    regex, _ = compile_rule_pattern(pattern)
    assert regex.search(text) is not None


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        pytest.param(r"(a+)\1", "invalid escape sequence: \\1", id="backreference"),
        pytest.param(r"kill(?=ed)", "invalid perl operator: (?=", id="lookahead"),
        pytest.param(r"(?<!not )killed", "invalid perl operator: (?<!", id="lookbehind"),
        pytest.param(r"a{2,1001}", "invalid repetition size: {2,1001}", id="repeat-over-1000"),
        pytest.param(r"a)|(b", "unexpected ): a)|(b", id="closes-the-anchoring-group"),
    ],
)
def test_what_re2_refuses_is_refused_at_load_naming_file_field_and_reason(tmp_path: Path, pattern: str,
                                                                         said: str) -> None:
    path = tmp_path / "monitor.json"
    path.write_text(json.dumps({"plugin": "kmsg", "rules": [
        {"type": "temporary", "reason": "Fine", "pattern": "ok"},
        {"type": "temporary", "reason": "Bad", "pattern": pattern}]}))
    (error,) = errors_of(path)
    assert error.startswith(f"{path}: rules[1].pattern: invalid regular expression: ") and said in error, error
    assert "RE2 syntax" in error


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        pytest.param("a|b", "a then x", False, id="alternation-anchored-as-a-whole"),
        pytest.param("a|b", "x a", True, id="alternation-first-branch-at-end"),
        pytest.param("error", "error!", False, id="must-reach-the-end"),
        pytest.param("err", "an err", True, id="not-anchored-at-the-start"),
        pytest.param(r"\d+", "١٢", False, id="digits-are-ascii-as-in-re2"),
        pytest.param(r"first\nsecond", "first\nsecond", True, id="multi-line"),
    ],
)
def test_rule_patterns_must_match_up_to_the_end(pattern: str, text: str, matches: bool) -> None:
    regex, _ = compile_rule_pattern(pattern)
    assert (regex.search(text) is not None) is matches


@pytest.mark.parametrize(
    ("pattern", "spans"),
    [
        (r"plain text \d+ .*", False),
        (r"[^)\n]+", False),
        (r"[\S ]+", False),
        (r"[^)]+", True),
        (r"a\sb", True),
        (r"a\nb", True),
        (r"(?s)a.b", True),
        (r"[[:space:]]", True),
        (r"\x{0a}", True),
        (r"\x0a", True),
        (r"\x41", False),
    ],
)
def test_patterns_that_cannot_match_a_newline_are_detected(pattern: str, spans: bool) -> None:
    assert compile_rule_pattern(pattern)[1] is spans


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("Jan _2 15:04:05", "%b %d %H:%M:%S"),
        ("2006-01-02T15:04:05.000000Z07:00", "%Y-%m-%dT%H:%M:%S.%f%z"),
        ("Mon Jan 2 15:04:05 MST 2006", "%a %b %d %H:%M:%S %Z %Y"),
        ("02/01/06 03:04PM 00%", "%d/%m/%y %I:%M%p 00%%"),
    ],
)
def test_go_time_layouts_translate_to_strptime(layout: str, expected: str) -> None:
    assert go_layout_to_strptime(layout) == expected


def test_go_layouts_without_a_strptime_equivalent_are_rejected() -> None:
    with pytest.raises(ValueError, match="-07"):
        go_layout_to_strptime("15:04:05 -07")
    with pytest.raises(ValueError, match="microseconds"):
        go_layout_to_strptime("15:04:05.000000000")


@pytest.mark.parametrize("layout", ["02/01/06 03:04PM 100%", "2e3Jan _2 15:04:05", "15:04:05.000 .999"],
                         ids=["month-twice", "day-twice", "fraction-twice"])
def test_a_layout_naming_a_field_twice_is_refused_at_load_not_at_the_first_line(layout: str) -> None:
    # Found by tests/unit/fuzz: strptime raises re.error (not ValueError) on a repeated directive, and that
    # escaped the monitor at the first log line instead of failing the config file.
    with pytest.raises(ValueError, match=r"twice|same field"):
        go_layout_to_strptime(layout)


def test_syslog_timestamps_take_the_current_year_or_last_year_near_new_year() -> None:
    now = dt.datetime(2025, 1, 1, 0, 5, tzinfo=dt.UTC)
    assert parse_log_timestamp("Jan  1 00:04:59", "%b %d %H:%M:%S", now=now, tz=dt.UTC) == dt.datetime(
        2025, 1, 1, 0, 4, 59, tzinfo=dt.UTC)
    assert parse_log_timestamp("Dec 31 23:59:00", "%b %d %H:%M:%S", now=now, tz=dt.UTC) == dt.datetime(
        2024, 12, 31, 23, 59, tzinfo=dt.UTC)
    leap = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    assert parse_log_timestamp("Feb 29 12:00:00", "%b %d %H:%M:%S", now=leap, tz=dt.UTC).day == 29


def test_timestamps_without_a_zone_use_the_given_zone_and_come_back_in_utc() -> None:
    zone = dt.timezone(dt.timedelta(hours=2))
    now = dt.datetime(2025, 6, 1, 12, tzinfo=dt.UTC)
    assert parse_log_timestamp("Jun  1 13:00:00", "%b %d %H:%M:%S", now=now, tz=zone) == dt.datetime(
        2025, 6, 1, 11, tzinfo=dt.UTC)
    assert parse_log_timestamp("2025-06-01T13:00:00+02:00", "%Y-%m-%dT%H:%M:%S%z", now=now, tz=None) == dt.datetime(
        2025, 6, 1, 11, tzinfo=dt.UTC)


@pytest.mark.parametrize(("text", "hours"), [("0001-01-01 00:00:00", 5), ("9999-12-31 23:59:59", -5)],
                         ids=["year-1-east", "year-9999-west"])
def test_a_log_time_moved_past_datetimes_ends_by_its_zone_is_a_line_that_does_not_fit(text: str, hours: int) -> None:
    # Issue 25: the conversion to UTC raised OverflowError, which the filelog reader did not expect: the check failed
    # and the lines read with that one were lost. A ValueError is a line that does not fit the layout: skipped.
    zone = dt.timezone(dt.timedelta(hours=hours))
    with pytest.raises(ValueError, match="time out of range"):
        parse_log_timestamp(text, "%Y-%m-%d %H:%M:%S", now=dt.datetime(2025, 6, 1, tzinfo=dt.UTC), tz=zone)


@pytest.mark.parametrize(("pattern", "text"), [(r"\w+", "é"), (r"\d+", "١٢"), (r"\s", "\u2003")],
                         ids=["word", "digit", "space"])
def test_perl_classes_are_ascii_as_in_re2(pattern: str, text: str) -> None:
    regex, _ = compile_rule_pattern(pattern)
    assert regex.search(text) is None
