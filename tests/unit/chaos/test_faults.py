"""The campaign's sim faults refuse what they name and nothing else: a fault meant for the
scheduler's evictions must not refuse the workload's pod creates (a gang submitted then
would be left short of members for good, and every fault waiting on it put off)."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from chaos.faults import Injector

from muster_sim.http.faults import FaultConfig


class _Sim:
    def __init__(self) -> None:
        self.config: dict[str, Any] = {}

    def set_faults(self, config: dict[str, Any]) -> None:
        self.config = config


class _Chaos:
    def __init__(self) -> None:
        self.sim = _Sim()


def _in_force(kind: str) -> FaultConfig:
    chaos = _Chaos()
    Injector(chaos, random.Random(7)).sim_fault(kind)  # type: ignore[arg-type]
    return msgspec.convert(chaos.sim.config, FaultConfig)


def _refused(config: FaultConfig, verb: str, resource: str) -> bool:
    return any(rule.matches(verb, resource) for rule in config.errors)


def test_an_eviction_fault_refuses_evictions_and_deletions_never_a_pods_create() -> None:
    config = _in_force("evict-5xx")
    assert _refused(config, "create", "pods/eviction")
    assert _refused(config, "delete", "pods")
    assert not _refused(config, "create", "pods")
    assert not _refused(config, "create", "pods/binding")


def test_a_bind_fault_refuses_binds_only() -> None:
    config = _in_force("bind-5xx")
    assert _refused(config, "create", "pods/binding")
    assert not _refused(config, "create", "pods")
    assert not _refused(config, "delete", "pods")
