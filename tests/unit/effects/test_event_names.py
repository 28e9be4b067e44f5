"""Event names: `<object>.<suffix>`, valid for any object name the API server accepts."""

from __future__ import annotations

import re

import pytest

from scheduler.effects.recorder import MAX_NAME, event_name

# kube-apiserver's DNS-1123 subdomain rule for an Event's metadata.name.
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
SUFFIX = "0123456789abcdef"


@pytest.mark.parametrize(
    ("object_name", "expected"),
    [
        pytest.param("gang-17", f"gang-17.{SUFFIX}", id="short-name-kept-whole"),
        pytest.param("a" * 253, "a" * 236 + f".{SUFFIX}", id="longest-name-cut"),
        pytest.param("a" * 235 + "-b", "a" * 235 + f".{SUFFIX}", id="cut-at-a-dash-drops-it"),
        pytest.param("a" * 235 + ".b", "a" * 235 + f".{SUFFIX}", id="cut-at-a-dot-drops-it"),
    ],
)
def test_event_names_fit_and_stay_valid(object_name: str, expected: str) -> None:
    name = event_name(object_name, SUFFIX)
    assert name == expected
    assert len(name) <= MAX_NAME and SUBDOMAIN.match(name)
