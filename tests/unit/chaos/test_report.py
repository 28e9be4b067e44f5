"""The campaign's report: a trial's figures are printed and kept as the trial ends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from chaos.campaign import TrialResult
from chaos.invariants import Violation
from chaos.report import figures, table, trial_line, write
from chaos.soak import first_last, growth


def trial(seed: int, violations: int = 0) -> TrialResult:
    return TrialResult(
        seed=seed,
        seconds=180.0,
        faults={"sigkill": 2, "sim-5xx": 1},
        skipped={},
        violations=[Violation("half-placed", f"gang {i}", (i,)) for i in range(violations)],
        takeovers=[("sigkill", 11.5), ("sigkill", None)],
        leases_taken=[("sigkill", 14.2)],
        mid_commit_cuts=[],
        created={"gangs": 3},
        refused_writes=0,
        binds=42,
        audit_records=100,
        replicas_started=4,
        quiescent_moments=5,
    )


def test_a_trial_line_names_its_seed_binds_violations_faults_and_takeovers() -> None:
    line = trial_line(trial(301, violations=2))
    assert line.startswith("seed 301: 180s, 42 binds, 2 violation(s)")
    assert "sigkill 2, sim-5xx 1" in line
    assert "takeovers: 11.5s, none" in line


def test_the_figures_so_far_are_written_before_the_campaign_ends(tmp_path: Path) -> None:
    results = [trial(300), trial(301, violations=1)]
    out = tmp_path / "chaos.json"
    write(out, {**figures(results), "seed": 300, "partial": True}, results)
    doc = json.loads(out.read_text())
    assert doc["partial"] is True
    assert doc["trials"] == 2
    assert doc["violations"] == 1
    assert [d["seed"] for d in doc["violation_details"]] == [301]


def sample(at: float, replica: int, **values: float) -> dict[str, float]:
    return {"time": at, "replica": float(replica), **values}


def test_soak_figures_start_after_warm_up_and_follow_the_last_leader() -> None:
    samples = [
        sample(0, 1, rss=50, tasks=90),  # warm-up
        sample(400, 1, rss=100, tasks=80),
        sample(500, 2, rss=10, tasks=5),  # another leader for a while
        sample(900, 1, rss=104, tasks=81),
    ]
    assert first_last(samples, "tasks", warmup=300) == (80, 81)
    assert growth(samples, "rss", warmup=300) == pytest.approx(0.04)
    assert first_last(samples[:2], "tasks", warmup=300) is None  # one sample after warm-up


def test_the_soak_table_names_tasks_cached_pods_and_unanswered_scrapes() -> None:
    soak = trial(320)
    soak.samples = [
        sample(float(t), 1, rss=100 + t / 100, threads=4, sockets=9, tasks=70, pods=300)
        for t in range(0, 1000, 10)
    ]
    soak.missed_scrapes = 2
    text = table({**figures([trial(300), soak]), "seed": 300})
    assert "| soak: event-loop tasks after warm-up, first/last" in text
    assert "70 / 70" in text and "300 / 300" in text
    assert "| soak: /metrics scrapes unanswered" in text and "| 2 |" in text


def test_the_soak_table_counts_arrivals_held_back_and_gangs_given_up_by_reason() -> None:
    first, second = trial(320), trial(321)
    for soak in (first, second):
        soak.samples = [sample(float(t), 1, rss=100, threads=4, sockets=9) for t in (0, 400)]
        soak.arrivals_held_back = 3
        soak.abandoned = {"NotEnoughTasks": 2}
    second.abandoned = {"NotEnoughTasks": 1, "no pods": 4}
    doc = figures([first, second])
    assert doc["soak"]["arrivals_held_back"] == 6
    assert doc["soak"]["gangs_abandoned_by_reason"] == {"NotEnoughTasks": 3, "no pods": 4}
    text = table({**doc, "seed": 320})
    assert "| soak: arrivals held back (backlog)" in text and "| 6 |" in text
    assert "NotEnoughTasks 3, no pods 4" in text


def test_the_soak_figures_keep_every_sample_in_readable_units() -> None:
    soak = trial(320)
    soak.samples = [
        sample(1000.0, 1, rss=100 * 2**20, threads=2, sockets=9, tasks=70, pods=300),
        sample(
            1010, 1, rss=101 * 2**20, threads=2, sockets=10, tasks=70, pods=310, session_mean=0.0125
        ),
    ]
    rows = figures([soak])["soak"]["series"]
    assert rows == [
        {"t": 0.0, "replica": 1.0, "rss": 100.0, "sockets": 9.0, "tasks": 70.0, "pods": 300.0},
        {
            "t": 10.0,
            "replica": 1.0,
            "rss": 101.0,
            "sockets": 10.0,
            "tasks": 70.0,
            "pods": 310.0,
            "session_mean": 12.5,
        },
    ]


def test_the_table_prints_the_takeover_maximum_by_fault_and_the_lease_times_of_unbound_ones() -> (
    None
):
    rows = {
        cells[1].strip(): cells[2].strip()
        for cells in (line.split("|") for line in table(figures([trial(300)])).splitlines())
        if len(cells) > 3
    }
    assert rows["leader loss to next bind, max by fault"] == "sigkill 11.5s"
    lease = "leader losses with no bind after (nothing placeable): loss to the lease taken"
    assert rows[lease] == "1 (14.2s)"


def test_the_failover_table_gives_trials_faults_of_each_kind_violations_and_takeovers() -> None:
    first, second = trial(300), trial(301, violations=1)
    second.takeovers = [("sigterm", 3.0), ("sigkill", 16.0)]
    rows = {
        cells[1].strip(): cells[2].strip()
        for cells in (line.split("|") for line in table(figures([first, second])).splitlines())
        if len(cells) > 3
    }
    assert rows["trials run"] == "2"
    # every leader fault, struck or not, and the sim faults as injected
    assert rows["leader faults struck"] == ("sigkill-mid-commit 0, sigkill 4, sigterm 0, sigstop 0")
    assert rows["sim faults injected"] == "sim-5xx 2"
    assert rows["invariant violations (target 0)"] == "1"
    takeover = "leader loss to next bind, min / median / max (target <= 17s)"
    assert rows[takeover] == "3.0s / 11.5s / 16.0s (all: 3.0, 11.5, 16.0)"


def test_a_leader_fault_put_off_and_one_never_struck_are_told_apart() -> None:
    late = trial(302)
    late.retried = {"sigstop": 1}
    never = trial(303)
    never.skipped = {"sigterm": 1}
    text = table({**figures([late, never]), "seed": 302})
    rows = {
        cells[0]: cells[1]
        for line in text.splitlines()
        if len(cells := [c.strip() for c in line.strip("|").split("|")]) == 2
    }
    assert rows["leader fault attempts put off (struck on a later try)"] == "sigstop 1"
    assert rows["leader faults never struck"] == "sigterm 1"
