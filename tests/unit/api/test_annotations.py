"""Volcano's labels and annotations that tune preemption and starvation, read as Volcano
reads them, with the values that cannot be read said, never dropped."""

from __future__ import annotations

import pytest

from scheduler.api.annotations import (
    NO_SETTINGS,
    UNPROTECTED,
    group_settings,
    pod_protection,
)
from scheduler.api.durations import InvalidDuration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("1m30s", 90.0),
        ("1h2m3s", 3723.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("10us", 1e-5),
        ("10µs", 1e-5),
        ("0", 0.0),
        ("-1m", -60.0),
    ],
    ids=["s", "m-s", "h-m-s", "fraction", "ms", "us", "micro-sign", "bare-zero", "negative"],
)
def test_go_durations_read_as_time_parse_duration_reads_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "1x", "m", "1m 30s", "s1", "1h-2m"])
def test_text_go_refuses_is_not_a_duration(text: str) -> None:
    with pytest.raises(InvalidDuration):
        parse_duration(text)


def test_a_pod_that_says_nothing_is_unprotected() -> None:
    assert pod_protection({"app": "x"}, {}) is UNPROTECTED


def test_the_annotation_wins_over_the_label_for_preemptable() -> None:
    protection = pod_protection(
        {"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}
    )
    assert not protection.preemptable


def test_the_label_wins_over_the_annotation_for_cooldown_as_volcanos_cdp_reads_it() -> None:
    protection = pod_protection(
        {"volcano.sh/cooldown-time": "10m"}, {"volcano.sh/cooldown-time": "1m"}
    )
    assert protection.cooldown == 600.0
    assert protection.preemptable


def test_unreadable_values_protect_as_volcano_does_and_are_said() -> None:
    protection = pod_protection(
        {}, {"volcano.sh/preemptable": "maybe", "volcano.sh/cooldown-time": "soon"}
    )
    assert not protection.preemptable
    assert protection.cooldown == 0.0
    assert any("volcano.sh/preemptable='maybe'" in p for p in protection.problems)
    assert any("volcano.sh/cooldown-time" in p and "'soon'" in p for p in protection.problems)


def test_a_podgroup_waiting_time_reads_the_prefixed_annotation_first() -> None:
    settings = group_settings({}, {"volcano.sh/sla-waiting-time": "2m", "sla-waiting-time": "5m"})
    assert settings.waiting_time == 120.0
    assert group_settings({}, {"sla-waiting-time": "5m"}).waiting_time == 300.0


def test_a_podgroup_that_says_nothing_has_no_settings() -> None:
    assert group_settings({"a": "b"}, {"c": "d"}) is NO_SETTINGS


def test_a_bad_waiting_time_falls_back_to_the_schedulers_and_is_said() -> None:
    settings = group_settings({}, {"volcano.sh/sla-waiting-time": "-5s"})
    assert settings.waiting_time is None
    assert "is not above 0" in settings.problems[0]


def test_a_podgroup_preemptable_label_counts_when_no_annotation() -> None:
    assert group_settings({"volcano.sh/preemptable": "false"}, {}).preemptable is False
    assert group_settings({}, {}).preemptable is None
