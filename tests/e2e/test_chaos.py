"""The reliability campaign's short mode (bench/chaos.py): faults of every kind, no violation.

One trial with a fixed seed: sim with 200 nodes, three scheduler replicas with leader
election, the controller with its webhooks, a stream of gangs, bare pods and Jobs, and every
fault the campaign knows. Every invariant is checked over sim's audit log. Then the fuzz mode,
briefly.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import environ_kubeconfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from chaos.campaign import Options, TrialResult, run_trial
from chaos.faults import LEADER_FAULTS, SIM_FAULTS
from chaos.fuzz import run_fuzz

SEED = 16

pytestmark = pytest.mark.skipif(
    environ_kubeconfig() is not None, reason="the campaign drives muster sim's faults and audit"
)


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> TrialResult:
    options = Options(
        seed=SEED,
        seconds=40.0,
        work_dir=tmp_path_factory.mktemp("chaos"),
        # Every leader fault: killed, killed mid-commit of a gang, stopped with SIGTERM,
        # paused past the lease (a gang the kill cuts is completed or undone by the next
        # leader: partly bound).
        leader_faults=LEADER_FAULTS,
    )
    return run_trial(options, log=lambda line: None)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield run_fuzz(200, SEED, tmp_path_factory.mktemp("fuzz"))


@pytest.mark.timeout(240)
def test_a_short_campaign_breaks_no_invariant(trial: TrialResult) -> None:
    details = "\n".join(
        f"[{v.invariant}] {v.message} (audit records {v.seqs})" for v in trial.violations
    )
    assert trial.violations == [], f"seed {SEED}:\n{details}\n{trial.logs}"


@pytest.mark.timeout(240)
def test_a_short_campaign_injects_every_fault_kind(trial: TrialResult) -> None:
    missing = [kind for kind in (*SIM_FAULTS, *LEADER_FAULTS) if not trial.faults.get(kind)]
    assert missing == [], f"seed {SEED}: never injected {missing}; injected {trial.faults}"
    # an attempt put off (its gang's first bind came late) is tried again; none may go unstruck
    assert trial.skipped == {}, (
        f"seed {SEED}: leader faults never struck: {trial.skipped} (put off: {trial.retried})"
    )


@pytest.mark.timeout(240)
def test_every_leader_loss_is_followed_by_binds_of_a_successor(trial: TrialResult) -> None:
    assert [kind for kind, _ in trial.takeovers] == list(LEADER_FAULTS)
    never = [kind for kind, seconds in trial.takeovers if seconds is None]
    assert never == [], f"seed {SEED}: no bind after {never}"
    assert trial.binds > 0 and trial.replicas_started >= 5


@pytest.mark.timeout(240)
def test_the_audit_held_every_kind_of_the_leaders_writes_to_the_lease(trial: TrialResult) -> None:
    # lease_exclusive checks each of these against its writer's term; the trial makes some
    # of each, so that one sent outside a term would be seen. (Evictions are checked the same
    # way, tests/unit/chaos; the short trial's filler leaves room, and it seldom evicts.)
    kinds = ("bind", "pod condition", "podgroup status", "queue status", "event")
    missing = [kind for kind in kinds if not trial.leader_writes.get(kind)]
    assert missing == [], f"seed {SEED}: none audited of {missing}; {trial.leader_writes}"


@pytest.mark.timeout(180)
def test_fuzzed_objects_neither_crash_nor_stall_muster(fuzzed: dict[str, Any]) -> None:
    assert fuzzed["sent"] >= 200
    assert fuzzed["alive"] == {"scheduler": True, "controller": True}
    assert fuzzed["canary_bound"], "a well-formed gang was not bound after the fuzz"
    assert fuzzed["crashes"] == 0


@pytest.mark.timeout(180)
def test_sim_answers_every_fuzzed_object_as_kube_apiserver_would(
    fuzzed: dict[str, Any],
) -> None:
    assert fuzzed["sim_5xx"] == 0, fuzzed["sim_5xx_examples"]


@pytest.mark.timeout(180)
def test_every_accepted_bad_object_gets_a_condition_or_event_naming_the_field(
    fuzzed: dict[str, Any],
) -> None:
    assert fuzzed["unexplained"] == []
