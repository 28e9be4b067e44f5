"""Go durations ("1m30s", "600s", "1h2m3s4ms5us6ns"), as Volcano's annotations and
arguments write them (time.ParseDuration), to seconds."""

from __future__ import annotations

import re

# Go's units, in seconds; "µs" and "μs" (micro and mu) are both microseconds in Go.
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class InvalidDuration(ValueError):
    """Text that time.ParseDuration would refuse."""


def parse_duration(text: str) -> float:
    """Seconds of a Go duration; "0" alone needs no unit, as in Go. A sign is allowed
    ("-1m"), as Go allows it: callers refuse what they cannot use."""
    original = text
    text = text.strip()
    sign = 1.0
    if text[:1] in ("+", "-"):
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise InvalidDuration(f"{original!r} is not a duration; use e.g. 90s, 10m or 1h30m")
    position = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(text):
        raise InvalidDuration(
            f"{original!r} is not a duration; use a number with a unit "
            "(ns, us, ms, s, m, h), e.g. 90s, 10m or 1h30m"
        )
    return sign * total
