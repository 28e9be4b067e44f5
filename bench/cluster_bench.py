"""muster against a whole (simulated) cluster, side by side with a binding ceiling and a naive loop.

    .venv/bin/python bench/cluster_bench.py [--nodes 1000] [--pods 10000] [--gang 8-64]
        [--rate 0] [--runners ceiling,naive,muster] [--repeat 3] [--kubeconfig FILE]
        [--scheduler-cmd [NAME=]CMD ...] [--scheduler-name NAME] [--core plain|compiled]
        [--dra-gpus N]
    .venv/bin/python bench/cluster_bench.py --scale      # the scale curve (many minutes)

Each run starts a fresh `muster sim` with the nodes (or, with --kubeconfig, uses that cluster's
nodes in a namespace of its own that it deletes afterwards), creates the gangs (a backlog before
the scheduler starts, or --rate pods/s while it runs), starts one scheduler process and watches the
pods until all are bound. Runners:

  ceiling  posts bindings round-robin with no decisions, 128 in flight on pipelined connections
           (as muster binds): the API server's limit
  naive    first-fit, one pod at a time, each bind awaited: a one-at-a-time scheduler
  muster   `muster scheduler --no-leader-elect --schedule-period 0.2s`, from the checkout
           (--core plain) or from build/compiled (--core compiled, as the image runs it)
  NAME     any `--scheduler-cmd NAME=CMD` (kube-scheduler, Volcano, another muster): CMD's
           arguments may hold {kubeconfig}, {namespace}, {scheduler_name}, {metrics_port}, {out};
           every run's pods carry `spec.schedulerName` = --scheduler-name (default muster)

With --dra-gpus N every node publishes N simulated GPUs through Dynamic Resource Allocation
(sim's driver gpu.sim.muster.dev; on a --kubeconfig cluster the bench publishes them on the
nodes --create-nodes makes) and every pod claims one from the ResourceClaimTemplate one-gpu.
Only muster and --scheduler-cmd runners take part (ceiling and naive bind without allocating
devices), and a run in which a bound pod does not hold a GPU of its node fails the bench.

It writes bench/out/cluster-bench.json and .png and prints a table (medians [min-max]).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.claims import publish_gpus
from harness.cluster import client, ensure_nodes, env_with_bench_path
from harness.core import CORES, tree_of, write_bytecode
from harness.memory import cache_bytes
from harness.report import (
    ceiling_note,
    decision_figures,
    plot_scale,
    plot_side_by_side,
    session_figures,
    side_by_side,
    table,
    write_json,
)
from harness.runners import (
    BINDS_WITHOUT_DEVICES,
    RUNNERS,
    ExternalScheduler,
    Options,
    RunResult,
    run,
)
from harness.workload import Workload

from scheduler.kube.config import load_configuration


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--gang", default="8-64", help='a size ("8") or a range ("8-64")')
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=0.0, help="pods/s; 0 = backlog")
    parser.add_argument(
        "--mixed",
        type=float,
        default=0.0,
        help="fraction of gangs with pod-to-pod terms (anti-affinity on hostname, zone spread)",
    )
    parser.add_argument(
        "--running",
        type=int,
        default=0,
        help="pods another scheduler runs before the backlog comes (muster sim only)",
    )
    parser.add_argument(
        "--runners", default="", help=f"default: {','.join(RUNNERS)} and every --scheduler-cmd"
    )
    parser.add_argument(
        "--scheduler-cmd",
        action="append",
        default=[],
        metavar="[NAME=]CMD",
        help="run this command as one more runner (repeatable); see the module doc",
    )
    parser.add_argument(
        "--scheduler-name",
        default="muster",
        help="spec.schedulerName of every pod (muster is started with it too)",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--kubeconfig", type=Path, help="use this cluster instead of muster sim")
    parser.add_argument(
        "--create-nodes",
        action="store_true",
        help="with --kubeconfig: first create the --nodes Node objects the cluster lacks "
        "(a bare API server with no kubelets)",
    )
    parser.add_argument(
        "--core",
        choices=CORES,
        default="plain",
        help="how the muster runner runs its scheduling core: plain Python from the checkout, "
        "or compiled with mypyc as the image runs it (from build/compiled: `make compiled`)",
    )
    parser.add_argument("--schedule-period", default="0.2s")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--profile", choices=["", "py-spy", "py-spy-raw", "cprofile"], default="")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--scale", action="store_true", help="run the scale curve instead")
    parser.add_argument("--scale-nodes", default="100,1000,5000")
    parser.add_argument("--scale-pods", default="1000,10000,50000,100000")
    parser.add_argument("--scale-skip", default="", help='e.g. "5000x50000,100x50000"')
    parser.add_argument(
        "--scale-budget", type=float, default=1800, help="skip what is left after this many s"
    )
    parser.add_argument("--scale-png", type=Path, help="also write the scale plot here")
    parser.add_argument(
        "--dra-gpus",
        type=int,
        default=0,
        metavar="N",
        help="simulated GPUs every node publishes through DRA, one claimed by every pod from "
        "the ResourceClaimTemplate one-gpu (muster and --scheduler-cmd runners only); "
        "0: no devices, no claims",
    )
    args = parser.parse_args(argv)
    refusal = dra_refusal(args)
    if refusal:
        parser.error(refusal)
    return args


def dra_refusal(args: argparse.Namespace) -> str:
    """Why --dra-gpus cannot run with the other flags, "" when it can (or is off)."""
    gpus = args.dra_gpus
    if gpus < 0:
        return f"--dra-gpus {gpus}: give the GPUs per node, 0 (none) or more"
    if not gpus:
        return ""
    if args.scale:
        return "--dra-gpus: the scale curve (--scale) times its sessions without claims"
    named = [r.strip() for r in args.runners.split(",") if r.strip()]
    baseline = next((r for r in named if r in BINDS_WITHOUT_DEVICES), "")
    if baseline:
        return (
            f"--dra-gpus {gpus} with --runners {baseline}: the {baseline} runner binds pods "
            "without allocating their claims' devices, a figure of work not done; leave it out "
            "(muster and --scheduler-cmd runners allocate them)"
        )
    if args.kubeconfig and not args.create_nodes:
        return (
            "--dra-gpus with --kubeconfig needs --create-nodes: the bench publishes GPUs "
            "(a ResourceSlice per node) only on the nodes it makes"
        )
    if args.nodes * gpus < args.pods:
        return (
            f"--dra-gpus {gpus}: {args.nodes} nodes x {gpus} GPUs = {args.nodes * gpus} GPUs, "
            f"fewer than the {args.pods} pods that claim one each; give --dra-gpus "
            f"{math.ceil(args.pods / args.nodes)} or more, or more --nodes"
        )
    return ""


def options_of(args: argparse.Namespace, profile: str) -> Options:
    """How runs are made, with every --scheduler-cmd parsed into a runner."""
    external: dict[str, ExternalScheduler] = {}
    for index, spec in enumerate(args.scheduler_cmd, start=1):
        command = ExternalScheduler.parse(spec, index)
        if command.name in external:
            raise SystemExit(f"--scheduler-cmd {spec!r}: runner {command.name!r} given twice")
        external[command.name] = command
    try:
        tree = tree_of(args.core)
    except ValueError as error:
        raise SystemExit(str(error)) from error
    # Absolute paths: the compiled runner runs from its own tree.
    kubeconfig = args.kubeconfig.resolve() if args.kubeconfig else None
    return Options(
        kubeconfig,
        args.schedule_period,
        args.timeout,
        profile,
        args.out.resolve(),
        external,
        core=args.core,
        tree=tree,
    )


def runners_of(args: argparse.Namespace, options: Options) -> list[str]:
    """--runners, or the built-in runners and every --scheduler-cmd (with --dra-gpus, those
    that allocate devices); unknown names refused."""
    runners = [r.strip() for r in args.runners.split(",") if r.strip()]
    built_in = [r for r in RUNNERS if not (args.dra_gpus and r in BINDS_WITHOUT_DEVICES)]
    runners = runners or [*built_in, *options.external]
    unknown = [r for r in runners if r not in RUNNERS and r not in options.external]
    if unknown:
        known = ", ".join([*RUNNERS, *options.external])
        raise SystemExit(
            f"--runners: {', '.join(unknown)} not known (known: {known}); "
            "name an external scheduler with --scheduler-cmd NAME=CMD"
        )
    return runners


def server_of(kubeconfig: Path | None) -> str:
    """The --kubeconfig cluster's API server URL, "" for a fresh muster sim."""
    return str(load_configuration(str(kubeconfig)).host) if kubeconfig else ""


def workload_of(args: argparse.Namespace, nodes: int, pods: int, rate: float) -> Workload:
    """The workload with the command line's gangs, seed and scheduler name."""
    if args.running and args.kubeconfig:
        raise SystemExit("--running needs muster sim: it places its pods on sim's node names")
    return Workload(
        nodes,
        pods,
        args.gang,
        args.seed,
        rate,
        scheduler_name=args.scheduler_name,
        mixed=args.mixed,
        running=args.running,
        dra_gpus=args.dra_gpus,
    )


async def _create_nodes(kubeconfig: Path, workload: Workload) -> tuple[int, int]:
    async with client(kubeconfig) as kube:
        made = await ensure_nodes(kube, workload)
        return made, await publish_gpus(kube, workload) if workload.dra_gpus else 0


def side_by_side_main(args: argparse.Namespace) -> int:
    """Every runner on the same workload, interleaved `--repeat` times."""
    workload = workload_of(args, args.nodes, args.pods, args.rate)
    options = options_of(args, args.profile)
    runners = runners_of(args, options)
    write_bytecode(options.tree)
    if args.create_nodes:
        if args.kubeconfig is None:
            raise SystemExit("--create-nodes needs --kubeconfig (muster sim makes its own nodes)")
        made, slices = asyncio.run(_create_nodes(args.kubeconfig, workload))
        print(f"created {made} Node objects on {server_of(args.kubeconfig)}", flush=True)
        if workload.dra_gpus:
            print(f"published {slices} ResourceSlices of {workload.dra_gpus} GPUs", flush=True)
    if workload.dra_gpus and not args.runners:
        print(f"--dra-gpus: {' and '.join(BINDS_WITHOUT_DEVICES)} left out (no devices)")
    print(f"{workload.label()}; runners {', '.join(runners)} x {args.repeat}", flush=True)
    results: list[RunResult] = []
    for attempt in range(args.repeat):
        # Each repeat starts one runner further on, so that no runner always follows the
        # same one (or always runs first after the nodes are made) on a server that drifts.
        shift = attempt % len(runners)
        for runner in runners[shift:] + runners[:shift]:
            began = time.perf_counter()
            result = run(runner, workload, options)
            results.append(result)
            print(
                f"  run {attempt + 1} {runner:8s} {result.pods_per_s:8,.0f} pods/s  "
                f"{result.cpu_ms_per_pod:6.3f} CPU ms/pod  ({time.perf_counter() - began:.0f} s)",
                flush=True,
            )
            if result.unallocated:
                return refuse_unallocated(result, attempt + 1)
    memory = cache_bytes(workload)
    summary = side_by_side(results, memory, server_of(args.kubeconfig), args.gang)
    print()
    print(table(results, summary))
    write_json(
        args.out / "cluster-bench.json",
        results,
        summary,
        workload=workload.label(),
        dra_gpus=workload.dra_gpus,
    )
    plot_side_by_side(args.out / "cluster-bench.png", results, workload.label())
    print(f"\nwrote {args.out / 'cluster-bench.json'} and {args.out / 'cluster-bench.png'}")
    return 0


def refuse_unallocated(result: RunResult, attempt: int) -> int:
    """Say loudly that a run bound pods without their GPUs (its figure counts work not done);
    the bench's exit status."""
    shown = "\n".join(f"  {line}" for line in result.unallocated[:10])
    more = len(result.unallocated) - 10
    print(
        f"\nFAILED: run {attempt} of {result.runner}: {len(result.unallocated)} problems with "
        f"the claims of its {result.bound} bound pods; its {result.pods_per_s:,.0f} pods/s "
        f"would mislead, so no figure is reported:\n{shown}"
        + (f"\n  ... and {more} more" if more > 0 else ""),
        file=sys.stderr,
        flush=True,
    )
    return 1


def scale_main(args: argparse.Namespace) -> int:
    """muster at every size of the grid: session time, memory and throughput."""
    options = options_of(args, "")
    write_bytecode(options.tree)
    skip = {s.strip() for s in args.scale_skip.split(",") if s.strip()}
    sizes = [
        (int(n), int(p)) for p in args.scale_pods.split(",") for n in args.scale_nodes.split(",")
    ]
    began = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for nodes, pods in sorted(sizes, key=lambda s: (s[1], s[0])):
        key = f"{nodes}x{pods}"
        if key in skip or time.perf_counter() - began > args.scale_budget:
            why = "asked" if key in skip else "over the time budget"
            print(f"{key}: skipped ({why})", flush=True)
            rows.append({"nodes": nodes, "pods": pods, "skipped": why})
            continue
        rows.append(scale_point(workload_of(args, nodes, pods, 0.0), options, args.repeat))
        print(scale_line(rows[-1]), flush=True)
    done = [r for r in rows if "skipped" not in r]
    print("\n" + ceiling_note(server_of(args.kubeconfig)))
    write_json(args.out / "scale.json", [], {"scale": rows})
    for path in filter(None, [args.out / "scale.png", args.scale_png]):
        plot_scale(path, done)
    print(f"wrote {args.out / 'scale.json'} and scale.png")
    return 0


def scale_point(workload: Workload, options: Options, repeat: int) -> dict[str, Any]:
    """One grid point: in-process session time and cache bytes, and muster on sim."""
    low, _, high = workload.gang.partition("-")
    gang = (int(low) + int(high or low)) // 2
    session_s = session_in(options, workload.pods, workload.nodes, gang, 3, workload.mixed)
    memory = cache_bytes(workload)
    runs = [run("muster", workload, options) for _ in range(repeat)]
    peaks = [session_figures(r)[0] * 1000 for r in runs]
    decisions = [decision_figures(r)[0] * 1000 for r in runs]
    return {
        "nodes": workload.nodes,
        "pods": workload.pods,
        "core": options.core,
        "session_ms": session_s * 1000,
        "session_gang": gang,
        **memory,
        "pods_per_s": statistics.median(r.pods_per_s for r in runs),
        "pods_per_s_runs": [r.pods_per_s for r in runs],
        "scraped_session_peak_ms": _median_of_known(peaks),
        "scraped_decision_peak_ms": _median_of_known(decisions),
        "cpu_ms_per_pod": statistics.median(r.cpu_ms_per_pod for r in runs),
        "peak_rss_mib": statistics.median(r.peak_rss_mib for r in runs),
        "first_bind_s": statistics.median(r.first_bind_s for r in runs),
    }


def session_in(
    options: Options, pods: int, nodes: int, gang: int, repeat: int, mixed: float = 0.0
) -> float:
    """session_bench's median session seconds, measured in a process run from the runs'
    tree, so the compiled core is timed when the runs use it (refused if it is not)."""
    code = (
        "import session_bench; from scheduler.build import core; "
        f"print(core(), session_bench.measure({pods}, {nodes}, {gang}, {repeat}, {mixed})[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=options.tree,
        env=env_with_bench_path(options.tree),
        capture_output=True,
        text=True,
        check=True,
    )
    core, seconds = done.stdout.split()[-2:]
    if core != options.core:
        raise SystemExit(f"the session was timed on the {core} core, not {options.core}")
    return float(seconds)


def _median_of_known(values: list[float]) -> float:
    known = [v for v in values if not math.isnan(v)]
    return statistics.median(known) if known else math.nan


def scale_line(row: dict[str, Any]) -> str:
    """One printed row of the scale table."""
    return (
        f"{row['nodes']:>5} nodes {row['pods']:>6} pods: session {row['session_ms']:7.0f} ms, "
        f"{row['bytes_per_pod']:5.0f} B/pod, {row['bytes_per_node']:5.0f} B/node, "
        f"{row['pods_per_s']:6,.0f} pods/s, CPU {row['cpu_ms_per_pod']:.3f} ms/pod, "
        f"RSS {row['peak_rss_mib']:.0f} MiB, 1st bind {row['first_bind_s']:.1f} s, "
        f"scraped session peak {row['scraped_session_peak_ms']:.0f} ms "
        f"(deciding {row['scraped_decision_peak_ms']:.0f} ms)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the side-by-side benchmark or the scale curve."""
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    return scale_main(args) if args.scale else side_by_side_main(args)


if __name__ == "__main__":
    sys.exit(main())
