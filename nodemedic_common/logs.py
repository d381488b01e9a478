"""Structured logs, one line per event with the `extra={...}` fields of each call: a JSON object (the default, for log
pipelines), or text for a person at a terminal (`--log-format text`): time, level, logger, message, then key=value."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


FORMATS = ("json", "text")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # --log-level, the chart's logLevel


def _time(record: logging.LogRecord) -> str:
    return dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds")


def _fields(record: logging.LogRecord) -> dict[str, object]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {"time": _time(record), "level": record.levelname.lower(), "logger": record.name,
                                  "msg": record.getMessage(), **_fields(record)}
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        pairs = " ".join(f"{k}={_value(v)}" for k, v in _fields(record).items())
        line = f"{_time(record)} {record.levelname:<7} {record.name}: {record.getMessage()}" + (
            f"  {pairs}" if pairs else "")
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _value(v: object) -> str:
    """A value as one token: quoted (JSON) when it would not read as one, so a line still splits into its fields."""
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if text and not any(c.isspace() or c in '"=' for c in text) else json.dumps(text)


def setup(name: str, level: str = "INFO", fmt: str = "json") -> logging.Logger:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextFormatter() if fmt == "text" else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    return logging.getLogger(name)
