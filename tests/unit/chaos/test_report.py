"""The campaign's report: a trial's figures are printed and kept as the trial ends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from chaos.campaign import TrialResult
from chaos.invariants import Violation
from chaos.report import figures, trial_line, write


def trial(seed: int, violations: int = 0) -> TrialResult:
    return TrialResult(
        seed=seed,
        seconds=180.0,
        faults={"sigkill": 2, "sim-5xx": 1},
        skipped={},
        violations=[Violation("half-placed", f"gang {i}", (i,)) for i in range(violations)],
        takeovers=[("sigkill", 11.5), ("sigkill", None)],
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
