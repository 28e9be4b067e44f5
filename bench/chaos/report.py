"""The campaign's figures: a table over trials, and JSON for the record."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chaos.campaign import TrialResult
from chaos.cluster import LEASE_SECONDS
from chaos.faults import LEADER_FAULTS, NOT_INJECTED
from chaos.soak import first_last, growth, session_trend

TAKEOVER_TARGET = LEASE_SECONDS + 2.0


def figures(trials: list[TrialResult], fuzz: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every figure the campaign reports, as plain data."""
    faults: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    retried: Counter[str] = Counter()
    violations: Counter[str] = Counter()
    takeovers: list[float] = []
    missing_takeovers = 0
    for trial in trials:
        faults.update(trial.faults)
        skipped.update(trial.skipped)
        retried.update(trial.retried)
        violations.update(v.invariant for v in trial.violations)
        for _, seconds in trial.takeovers:
            if seconds is None:
                missing_takeovers += 1
            else:
                takeovers.append(seconds)
    doc: dict[str, Any] = {
        "trials": sum(1 for t in trials if not t.samples),
        "soak_runs": sum(1 for t in trials if t.samples),
        "seeds": [t.seed for t in trials],
        "faults": dict(sorted(faults.items())),
        "faults_not_injected": list(NOT_INJECTED),
        "faults_skipped": dict(skipped),
        "faults_retried": dict(retried),
        "violations": sum(violations.values()),
        "violations_by_invariant": dict(violations),
        "takeover_seconds": sorted(takeovers),
        "takeover_min": min(takeovers) if takeovers else None,
        "takeover_median": statistics.median(takeovers) if takeovers else None,
        "takeover_max": max(takeovers) if takeovers else None,
        "takeover_target": TAKEOVER_TARGET,
        "leader_losses_without_a_bind_after": missing_takeovers,
        # those losses (nothing placeable after them): the loss to the Lease taken over
        "lease_taken_seconds_without_a_bind_after": sorted(
            round(s, 1) for t in trials for _, s in t.leases_taken if s is not None
        ),
        "takeover_max_by_fault": takeover_max_by_fault(trials),
        "bind_after_renewal_max": max((t.bind_after_renewal for t in trials), default=0.0),
        "leader_writes": dict(
            sorted(sum((Counter(t.leader_writes) for t in trials), Counter()).items())
        ),
        "mid_commit_cuts": [c for t in trials for c in t.mid_commit_cuts],
        "binds": sum(t.binds for t in trials),
        "created": dict(sum((Counter(t.created) for t in trials), Counter())),
        "refused_writes": sum(t.refused_writes for t in trials),
        "audit_records": sum(t.audit_records for t in trials),
        "quiescent_moments": sum(t.quiescent_moments for t in trials),
    }
    samples = [s for t in trials for s in t.samples]
    if samples:
        trend = session_trend(samples)
        doc["soak"] = {
            "samples": len(samples),
            "rss_growth_after_warmup": growth(samples, "rss", warmup=300.0),
            "sockets_first_last": (samples[0]["sockets"], samples[-1]["sockets"]),
            "threads_first_last": (samples[0]["threads"], samples[-1]["threads"]),
            "tasks_first_last_after_warmup": first_last(samples, "tasks", warmup=300.0),
            "cached_pods_first_last_after_warmup": first_last(samples, "pods", warmup=300.0),
            "missed_scrapes": sum(t.missed_scrapes for t in trials),
            "arrivals_held_back": sum(t.arrivals_held_back for t in trials),
            "gangs_abandoned_by_reason": dict(
                sum((Counter(t.abandoned) for t in trials), Counter())
            ),
            "session_median_first_last_third": trend,
            # every sample, for a reader to tell a leak from a pool or a backlog that grew
            "series": series(samples),
        }
    if fuzz is not None:
        doc["fuzz"] = fuzz
    return doc


def takeover_figures(doc: dict[str, Any]) -> str:
    """Leader loss to the successor's first bind: min / median / max, and every one."""
    if doc["takeover_max"] is None:
        return "n/a"
    every = ", ".join(f"{s:.1f}" for s in doc["takeover_seconds"])
    return (
        f"{doc['takeover_min']:.1f}s / {doc['takeover_median']:.1f}s / "
        f"{doc['takeover_max']:.1f}s (all: {every})"
    )


def without_bind(doc: dict[str, Any]) -> str:
    """How many losses had no bind after them, and when the Lease was taken after each."""
    taken = doc["lease_taken_seconds_without_a_bind_after"]
    count = str(doc["leader_losses_without_a_bind_after"])
    return f"{count} ({', '.join(f'{s:g}s' for s in taken)})" if taken else count


def takeover_max_by_fault(trials: list[TrialResult]) -> dict[str, float]:
    """The longest leader loss to next bind, for each kind of leader fault."""
    longest: dict[str, float] = {}
    for trial in trials:
        for kind, seconds in trial.takeovers:
            if seconds is not None:
                longest[kind] = max(seconds, longest.get(kind, 0.0))
    return longest


SERIES_KEYS = ("replica", "rss", "sockets", "tasks", "pods", "session_mean")


def series(samples: list[dict[str, float]]) -> list[dict[str, float]]:
    """The soak's samples, seconds from the first, RSS in MiB, sessions in ms."""
    if not samples:
        return []
    start = samples[0]["time"]
    out = []
    for sample in samples:
        row = {"t": round(sample["time"] - start, 1)}
        for key in SERIES_KEYS:
            if key not in sample:
                continue
            value = sample[key]
            if key == "rss":
                value /= 2**20
            elif key == "session_mean":
                value *= 1000
            row[key] = round(value, 1)
        out.append(row)
    return out


def table(doc: dict[str, Any]) -> str:
    """The figures as a Markdown table."""
    faults = doc["faults"]
    rows = [
        ("trials run", str(doc["trials"])),
        (
            "leader faults struck",
            ", ".join(f"{k} {faults.get(k, 0)}" for k in LEADER_FAULTS),
        ),
        (
            "sim faults injected",
            ", ".join(f"{k} {v}" for k, v in faults.items() if k not in LEADER_FAULTS) or "none",
        ),
        ("faults not injected", ", ".join(doc["faults_not_injected"]) or "none"),
        (
            "leader fault attempts put off (struck on a later try)",
            ", ".join(f"{k} {v}" for k, v in sorted(doc["faults_retried"].items())) or "none",
        ),
        (
            "leader faults never struck",
            ", ".join(f"{k} {v}" for k, v in sorted(doc["faults_skipped"].items())) or "none",
        ),
        ("invariant violations (target 0)", str(doc["violations"])),
        (
            f"leader loss to next bind, min / median / max (target <= {doc['takeover_target']:g}s)",
            takeover_figures(doc),
        ),
        (
            "leader losses with no bind after (nothing placeable): loss to the lease taken",
            without_bind(doc),
        ),
        (
            "leader loss to next bind, max by fault",
            ", ".join(f"{k} {v:.1f}s" for k, v in sorted(doc["takeover_max_by_fault"].items()))
            or "n/a",
        ),
        (
            "longest bind after its binder's last lease renewal (renew deadline 10s < lease 15s)",
            f"{doc['bind_after_renewal_max']:.1f}s",
        ),
        (
            "replicas' writes as leader held to the lease term, by kind",
            ", ".join(f"{k} {v}" for k, v in doc["leader_writes"].items()) or "none",
        ),
        ("binds", str(doc["binds"])),
        ("objects created", ", ".join(f"{k} {v}" for k, v in sorted(doc["created"].items()))),
        ("writes refused by injected faults", str(doc["refused_writes"])),
        ("audit records checked", str(doc["audit_records"])),
    ]
    if doc["violations_by_invariant"]:
        rows.append(
            (
                "violations by invariant",
                ", ".join(f"{k} {v}" for k, v in doc["violations_by_invariant"].items()),
            )
        )
    soak = doc.get("soak")
    if soak:
        rss = soak["rss_growth_after_warmup"]
        rows.append(("soak: RSS growth after warm-up", "n/a" if rss is None else f"{rss:+.1%}"))
        rows.append(("soak: sockets first/last", "{:g} / {:g}".format(*soak["sockets_first_last"])))
        rows.append(("soak: threads first/last", "{:g} / {:g}".format(*soak["threads_first_last"])))
        for key, label in (
            ("tasks_first_last_after_warmup", "soak: event-loop tasks after warm-up, first/last"),
            ("cached_pods_first_last_after_warmup", "soak: cached pods after warm-up, first/last"),
        ):
            pair = soak.get(key)
            rows.append((label, "n/a" if pair is None else "{:g} / {:g}".format(*pair)))
        rows.append(("soak: /metrics scrapes unanswered", str(soak.get("missed_scrapes", 0))))
        rows.append(("soak: arrivals held back (backlog)", str(soak.get("arrivals_held_back", 0))))
        abandoned = soak.get("gangs_abandoned_by_reason") or {}
        rows.append(
            (
                "soak: waiting gangs given up, by reason",
                ", ".join(f"{k} {v}" for k, v in sorted(abandoned.items())) or "none",
            )
        )
        trend = soak["session_median_first_last_third"]
        rows.append(
            (
                "soak: median session first/last third",
                "n/a" if trend is None else f"{trend[0] * 1000:.1f} / {trend[1] * 1000:.1f} ms",
            )
        )
    fuzz = doc.get("fuzz")
    if fuzz:
        rows.append(("fuzzed objects sent", str(fuzz["sent"])))
        rows.append(("fuzz: accepted / refused", f"{fuzz['accepted']} / {fuzz['refused']}"))
        rows.append(("fuzz: muster crashes or stalls (target 0)", str(fuzz["crashes"])))
        rows.append(("fuzz: sim 5xx answers (target 0)", str(fuzz["sim_5xx"])))
        rows.append(
            (
                "fuzz: accepted bad objects not explained (target 0)",
                f"{len(fuzz['unexplained'])} of {fuzz['accepted_bad']}",
            )
        )
    width = max(len(k) for k, _ in rows)
    lines = [f"| {'figure'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
    lines += [f"| {k.ljust(width)} | {v} |" for k, v in rows]
    return "\n".join(lines)


def trial_line(trial: TrialResult) -> str:
    """One trial's figures on one line, printed as it ends."""
    takeovers = ", ".join("none" if s is None else f"{s:.1f}s" for _, s in trial.takeovers)
    faults = ", ".join(f"{k} {v}" for k, v in sorted(trial.faults.items())) or "none"
    return (
        f"seed {trial.seed}: {trial.seconds:g}s, {trial.binds} binds, "
        f"{len(trial.violations)} violation(s); faults: {faults}; takeovers: {takeovers or 'none'}"
    )


def write(path: Path, doc: dict[str, Any], trials: list[TrialResult]) -> None:
    """The figures and every violation, as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    full = dict(doc)
    full["violation_details"] = [
        {"seed": t.seed, **asdict(v)} for t in trials for v in t.violations
    ]
    path.write_text(json.dumps(full, indent=2, default=str))
