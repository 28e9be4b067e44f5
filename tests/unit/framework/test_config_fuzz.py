"""No scheduler config that loads can make a session fail: arguments are checked at load."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.actions import ACTIONS
from scheduler.api.errors import ConfigError
from scheduler.api.podgroup import PodGroupPhase
from scheduler.engine import load_config, schedule
from scheduler.plugins import PLUGINS
from tests.unit.builders import gang, node, queue, resources, running_gang, snapshot

# Every argument muster knows, and some it does not, so both paths are explored.
KEYS = sorted(
    {
        info.alias or name
        for kind in (*ACTIONS.values(), *PLUGINS.values())
        for name, info in kind.arguments_model.model_fields.items()
        if not (info.alias or "").endswith("*")
    }
    | {"binpack.resources.nvidia.com/gpu", "binpack.resources.cpu", "bogus"}
)
VALUES = st.one_of(
    st.integers(min_value=-3, max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from(["", "2", "heavy", "nvidia.com/gpu, cpu", "1e400", "-1", "nan"]),
    st.lists(st.sampled_from(["nvidia.com/gpu", "cpu", "memory"]), max_size=3),
    st.none(),
)
ARGUMENTS = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4)
PLUGIN = st.fixed_dictionaries({"name": st.sampled_from(sorted(PLUGINS)), "arguments": ARGUMENTS})


@st.composite
def configs(draw: st.DrawFn) -> str:
    actions = draw(st.lists(st.sampled_from(sorted(ACTIONS)), min_size=1, max_size=5))
    tiers = [
        {"plugins": draw(st.lists(PLUGIN, min_size=1, max_size=4, unique_by=lambda p: p["name"]))}
        for _ in range(draw(st.integers(min_value=1, max_value=2)))
    ]
    configurations = [
        {"name": name, "arguments": draw(ARGUMENTS)}
        for name in draw(st.lists(st.sampled_from(sorted(ACTIONS)), max_size=3, unique=True))
    ]
    document: dict[str, Any] = {
        "actions": ", ".join(actions),
        "tiers": tiers,
        "configurations": configurations,
    }
    return yaml.safe_dump(document)


def busy_cluster() -> Any:
    low = [running_gang(f"low{i}", 1, priority=1, queue="a", on=[f"n{i % 2}"]) for i in range(6)]
    jobs = [
        *low,
        gang("high", 2, priority=100, queue="a"),
        gang("other", 2, queue="b", phase=PodGroupPhase.PENDING, min_resources=resources(2)),
        gang("gpu", 1, gpu=1, queue="b"),
    ]
    nodes = [node("n0", cpu=4), node("n1", cpu=4, gpu=2)]
    return snapshot(nodes, jobs, [queue("a"), queue("b", weight=2)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_no_config_that_loads_makes_a_session_fail(text: str) -> None:
    try:
        config = load_config(text)
    except ConfigError:
        return
    result = schedule(busy_cluster(), config)
    assert result is not None
