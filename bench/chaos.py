"""muster's reliability campaign: kill, pause, fault and fuzz a cluster, check invariants.

    .venv/bin/python bench/chaos.py                    # short: one trial, about a minute
    .venv/bin/python bench/chaos.py --seed 7           # the same fault schedule and work
    .venv/bin/python bench/chaos.py --long             # trials, fuzz, and an hour's soak
    .venv/bin/python bench/chaos.py --fuzz 2000        # the fuzz mode alone
    .venv/bin/python bench/chaos.py --failover         # the long mode's trials, shorter

A trial is a strict `muster sim` with 200 nodes, three `muster scheduler` replicas with
leader election (preempt and reclaim on), `muster controller`, a seeded stream of gangs,
bare pods and Jobs, and seeded faults. Every invariant is checked over sim's audit log
(every write, with its writer's identity). Prints the figures and writes
bench/out/chaos.json; exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chaos.campaign import Options, TrialResult, run_trial
from chaos.faults import LEADER_FAULTS
from chaos.report import figures, table, trial_line, write

OUT = Path(__file__).resolve().parent / "out"
# The soak looks for leaks and slowdowns at a steady state, so its arrivals must stay
# below what the cluster serves. A trial's 4 a second (about 17 pods a second) is this
# 2-core machine's whole capacity with sim, three replicas, the controller and the
# campaign on it: one hour kept up at 16.7 binds a second, the next fell behind at 9.7
# and its backlog grew to 19,700 pods in 44 minutes, which measures the machine, not muster.
SOAK_ARRIVALS = 2.0
# Nor may work that can never start pile up: the trial's stream raises minMember past a
# gang's pods, preempts members nobody recreates and sends a gang bigger than the cluster, so
# a 25-minute soak held 3,380 cached pods at its end against 439 after warm-up, and its
# sessions slowed with them (15 ms to 397 ms). The soak deletes a gang that waited this many
# seconds with nothing running, as its user would, and holds arrivals back while more than
# SOAK_MAX_PENDING pods wait for a node; both are counted in the report.
SOAK_ABANDON = 180.0
SOAK_MAX_PENDING = 400
# --failover's trials: room for the four leader faults, each waiting for the takeover before
FAILOVER_SECONDS = 90.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, help="default: a fresh one, printed")
    parser.add_argument("--long", action="store_true", help="trials, fuzz, soak: about 1.5 h")
    parser.add_argument(
        "--failover",
        action="store_true",
        help="the long mode's leader faults and sim faults in ten trials of 90 s, no soak, "
        "no fuzz: its takeover figures in about 20 minutes",
    )
    parser.add_argument("--trials", type=int, help="default 1 (short), 10 (long)")
    parser.add_argument("--seconds", type=float, help="per trial; default 45 (short), 180 (long)")
    parser.add_argument("--soak", type=float, help="soak seconds; default 0 (short), 3600 (long)")
    parser.add_argument(
        "--soak-arrivals",
        type=float,
        default=SOAK_ARRIVALS,
        help=f"soak: arrivals a second (default {SOAK_ARRIVALS:g}; a trial's are 4)",
    )
    parser.add_argument("--fuzz", type=int, help="fuzzed objects; default 0 (short), 10000 (long)")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=3, choices=(2, 3))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep-logs", action="store_true", help="keep every trial's logs")
    args = parser.parse_args(argv)
    if args.soak_arrivals <= 0:
        parser.error(f"--soak-arrivals {args.soak_arrivals:g}: give a rate above 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the campaign; 0 when no invariant broke."""
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    trials = args.trials if args.trials is not None else (10 if args.long or args.failover else 1)
    default_seconds = 180.0 if args.long else FAILOVER_SECONDS if args.failover else 45.0
    seconds = args.seconds if args.seconds is not None else default_seconds
    soak = args.soak if args.soak is not None else (3600.0 if args.long else 0.0)
    fuzz_count = args.fuzz if args.fuzz is not None else (10_000 if args.long else 0)
    print(
        f"chaos: seed {seed}; {trials} trial(s) of {seconds:g}s; soak {soak:g}s; fuzz {fuzz_count}"
    )
    results: list[TrialResult] = []
    began = time.time()
    for index in range(trials):
        options = Options(
            seed=seed + index,
            seconds=seconds,
            nodes=args.nodes,
            replicas=args.replicas,
            work_dir=args.out / "chaos",
            leader_faults=LEADER_FAULTS,
            keep_logs=args.keep_logs,
        )
        result = run_trial(options)
        results.append(result)
        for violation in result.violations:
            print(
                f"  VIOLATION [{violation.invariant}] {violation.message} (audit {violation.seqs})"
            )
        # the figures so far, so a later part that dies (the soak, the fuzz) loses none of them
        print(trial_line(result), flush=True)
        write(args.out / "chaos.json", {**figures(results), "seed": seed, "partial": True}, results)
    if soak > 0:
        options = Options(
            seed=seed + trials,
            seconds=soak,
            nodes=args.nodes,
            replicas=args.replicas,
            work_dir=args.out / "chaos",
            leader_faults=(),
            sim_faults=False,
            sample_every=10.0,
            arrivals_per_second=args.soak_arrivals,
            # steady state: finished gangs go 30 s after they finished, as with a Job's TTL;
            # gangs that cannot start (minMember raised past their pods, a member preempted,
            # bigger than the cluster) go after SOAK_ABANDON as their users would give up;
            # and while SOAK_MAX_PENDING pods wait, nothing new arrives
            clean_finished_after=30.0,
            abandon_waiting_after=SOAK_ABANDON,
            max_pending_pods=SOAK_MAX_PENDING,
            keep_logs=args.keep_logs,
        )
        results.append(run_trial(options))
        print(trial_line(results[-1]), flush=True)
        write(args.out / "chaos.json", {**figures(results), "seed": seed, "partial": True}, results)
    fuzz_figures = None
    if fuzz_count > 0:
        from chaos.fuzz import run_fuzz

        fuzz_figures = run_fuzz(fuzz_count, seed, args.out / "chaos", args.nodes)
    doc = figures(results, fuzz_figures)
    doc["seed"] = seed
    doc["wall_seconds"] = round(time.time() - began, 1)
    print(table(doc))
    print(f"seed {seed}; {doc['wall_seconds']:g}s; figures in {args.out / 'chaos.json'}")
    write(args.out / "chaos.json", doc, results)
    broken = doc["violations"] > 0 or (
        fuzz_figures is not None and (fuzz_figures["crashes"] > 0 or fuzz_figures["sim_5xx"] > 0)
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
