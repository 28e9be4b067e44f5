"""Volcano's labels and annotations that tune how a pod or PodGroup is treated over time:
`volcano.sh/preemptable` and `volcano.sh/cooldown-time` (may it be a victim, and when),
and `volcano.sh/sla-waiting-time` (when a waiting gang starts to starve).

Each rule is read here once; actions/eviction.py and framework/holds.py ask these
records (api/budgets.py holds the PodDisruptionBudgets). Values that cannot be read
never pass silently: the record keeps the problem, and the session puts it on a
Warning event on the object.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.api.durations import InvalidDuration, parse_duration

# volcano.sh/preemptable on a pod (annotation, then label; default true) or a PodGroup
# (annotation, then label; unset leaves it to the pods): "false" keeps it from being a
# victim. Volcano reads an unparsable value as false; muster does too, and says so.
PREEMPTABLE = "volcano.sh/preemptable"
# How long a PodGroup may wait before it starves (a Go duration): Volcano's sla plugin
# reads the first, then the second (its older, unprefixed key).
SLA_WAITING_TIME = "volcano.sh/sla-waiting-time"
SLA_WAITING_TIME_OLD = "sla-waiting-time"
# muster's own, on a PodGroup: "false" keeps muster from asking a cluster autoscaler for
# nodes for the gang (framework/scaleup.py); Go's boolean spellings, as the others.
SCALE_UP = "muster.dev/scale-up"
# volcano.sh/cooldown-time on a pod (label, then annotation, as Volcano's cdp plugin reads
# it): a Go duration during which the pod, once started, is not a victim.
COOLDOWN_TIME = "volcano.sh/cooldown-time"

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _go_bool(text: str) -> bool | None:
    """strconv.ParseBool's answer, None when it would fail."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


@dataclass(frozen=True, slots=True)
class PodProtection:
    """A pod's own say on being a victim: whether it may be one at all, for how long
    after it starts it may not, and the values that could not be read."""

    preemptable: bool = True
    cooldown: float = 0.0
    problems: tuple[str, ...] = ()


UNPROTECTED = PodProtection()


def pod_protection(labels: Mapping[str, str], annotations: Mapping[str, str]) -> PodProtection:
    """The protection a pod's labels and annotations ask for (UNPROTECTED, shared, for
    the pods that ask none: almost all)."""
    preemptable_text = annotations.get(PREEMPTABLE, labels.get(PREEMPTABLE))
    cooldown_text = labels.get(COOLDOWN_TIME, annotations.get(COOLDOWN_TIME))
    if preemptable_text is None and cooldown_text is None:
        return UNPROTECTED
    return _protection(preemptable_text, cooldown_text)


@functools.lru_cache(maxsize=256)
def _protection(preemptable_text: str | None, cooldown_text: str | None) -> PodProtection:
    problems: list[str] = []
    preemptable = True
    if preemptable_text is not None:
        parsed = _go_bool(preemptable_text)
        if parsed is None:
            problems.append(
                f"{PREEMPTABLE}={preemptable_text!r} is not true or false; the pod is treated "
                'as not preemptable, as Volcano does; write "true" or "false"'
            )
        preemptable = bool(parsed)
    cooldown = 0.0
    if cooldown_text is not None:
        try:
            cooldown = parse_duration(cooldown_text)
        except InvalidDuration as error:
            problems.append(f"{COOLDOWN_TIME}: {error}; the pod has no cooldown")
        if cooldown < 0:
            problems.append(
                f"{COOLDOWN_TIME}={cooldown_text!r} is negative; the pod has no cooldown"
            )
            cooldown = 0.0
    return PodProtection(preemptable, cooldown, tuple(problems))


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """What a PodGroup's labels and annotations ask: its own starvation waiting time
    (None: the scheduler's), whether its pods may be victims (None: each pod says),
    whether muster may ask an autoscaler for nodes for it, and the values that could not
    be read."""

    waiting_time: float | None = None
    preemptable: bool | None = None
    problems: tuple[str, ...] = ()
    scale_up: bool = True


NO_SETTINGS = GroupSettings()


def group_settings(labels: Mapping[str, str], annotations: Mapping[str, str]) -> GroupSettings:
    """The settings a PodGroup's labels and annotations ask for (NO_SETTINGS, shared, when
    it asks none)."""
    waiting_key = next(
        (k for k in (SLA_WAITING_TIME, SLA_WAITING_TIME_OLD) if k in annotations), ""
    )
    preemptable_text = annotations.get(PREEMPTABLE, labels.get(PREEMPTABLE))
    scale_up_text = annotations.get(SCALE_UP)
    if not waiting_key and preemptable_text is None and scale_up_text is None:
        return NO_SETTINGS
    problems: list[str] = []
    waiting_time: float | None = None
    if waiting_key:
        text = annotations[waiting_key]
        try:
            waiting_time = parse_duration(text)
        except InvalidDuration as error:
            problems.append(f"{waiting_key}: {error}; the scheduler's waiting time applies")
        if waiting_time is not None and waiting_time <= 0:
            problems.append(
                f"{waiting_key}={text!r} is not above 0; the scheduler's waiting time applies"
            )
            waiting_time = None
    preemptable: bool | None = None
    if preemptable_text is not None:
        preemptable = _go_bool(preemptable_text)
        if preemptable is None:
            preemptable = False
            problems.append(
                f"{PREEMPTABLE}={preemptable_text!r} is not true or false; none of the "
                "PodGroup's pods is preempted or reclaimed, as Volcano reads it; write "
                '"true" or "false"'
            )
    scale_up = True
    if scale_up_text is not None:
        parsed = _go_bool(scale_up_text)
        if parsed is None:
            problems.append(
                f"{SCALE_UP}={scale_up_text!r} is not true or false; muster asks for nodes for "
                'the gang as its scheduler config says; write "false" to keep it from asking'
            )
        scale_up = parsed is not False
    return GroupSettings(waiting_time, preemptable, tuple(problems), scale_up)
