"""Logging setup: text for people, JSON for log pipelines; fields name the objects involved."""

from __future__ import annotations

import logging
import sys

import msgspec

# Extra fields the code attaches (extra={...}) that belong in every line.
_FIELDS = ("pod", "podgroup", "queue", "node", "resource", "lease", "identity")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the object fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in _FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return msgspec.json.encode(entry).decode()


class TextFormatter(logging.Formatter):
    """A readable line with the object fields appended as key=value."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [f"{n}={getattr(record, n)}" for n in _FIELDS if getattr(record, n, None)]
        return f"{line} {' '.join(fields)}" if fields else line


def configure(fmt: str, level: str) -> None:
    """Send logs to stderr in the chosen format and level."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # aiohttp's access log would print every metrics scrape.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
