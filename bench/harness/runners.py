"""One run of one scheduler (built-in or any command) over a workload, observed from outside."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.claims import (
    await_claims_made,
    create_claim_template,
    delete_claims,
    unallocated_claims_in,
)
from harness.cluster import (
    REPO,
    Creator,
    client,
    create_namespace,
    delete_namespace,
    env_with_bench_path,
    fresh_sim,
    scheduler_writes,
    stop,
)
from harness.observe import BindWatcher, Sampler, cpu_seconds, memory_kib
from harness.workload import Workload

RUNNERS = ("ceiling", "naive", "muster")
# The baselines bind with no decision about devices: pods claiming some (--dra-gpus) would be
# bound with their claims never allocated, a figure of work not done.
BINDS_WITHOUT_DEVICES = ("ceiling", "naive")
# What an external scheduler's command may name; each is replaced in every argument.
COMMAND_FIELDS = ("kubeconfig", "namespace", "scheduler_name", "metrics_port", "out")


@dataclass(frozen=True)
class ExternalScheduler:
    """A scheduler the bench starts from a command line (kube-scheduler, Volcano, another muster).

    The command is split as a shell would (no shell runs, so the process measured is the
    scheduler itself) and each argument may hold {kubeconfig}, {namespace}, {scheduler_name},
    {metrics_port} and {out}. Its pods carry `spec.schedulerName` = the workload's scheduler name.
    """

    name: str
    argv: tuple[str, ...]

    @classmethod
    def parse(cls, spec: str, index: int = 1) -> ExternalScheduler:
        """ "NAME=CMD" or "CMD" (named cmd1, cmd2, ... in the order given)."""
        name, sep, command = spec.partition("=")
        if not sep or " " in name.strip() or not name.strip() or name.strip().startswith("-"):
            name, command = f"cmd{index}", spec
        name = name.strip()
        if name in RUNNERS:
            raise ValueError(f"--scheduler-cmd {spec!r}: {name!r} is a built-in runner; rename it")
        argv = tuple(shlex.split(command))
        if not argv:
            raise ValueError(f"--scheduler-cmd {spec!r}: the command is empty; give one to run")
        for arg in argv:
            try:
                arg.format(**dict.fromkeys(COMMAND_FIELDS, ""))
            except (KeyError, IndexError, ValueError) as error:
                raise ValueError(
                    f"--scheduler-cmd {spec!r}: argument {arg!r} names an unknown field {error}; "
                    f"the fields are {', '.join('{' + f + '}' for f in COMMAND_FIELDS)} "
                    "(double braces for a literal brace)"
                ) from error
        return cls(name, argv)

    def serves_metrics(self) -> bool:
        """Whether the command is given {metrics_port}: it then serves muster's /metrics
        there (another muster), which the bench scrapes for session times."""
        return any("{metrics_port}" in arg for arg in self.argv)

    def command(self, fields: dict[str, str]) -> list[str]:
        """The argv with every field filled in."""
        return [arg.format(**fields) for arg in self.argv]


@dataclass
class Options:
    """How runs are made: fresh sim or a given cluster, muster's period, profiling."""

    kubeconfig: Path | None = None  # None: a fresh `muster sim` per run
    schedule_period: str = "0.2s"
    timeout: float = 300.0
    profile: str = ""  # "", "py-spy", "py-spy-raw" or "cprofile" (muster only)
    out: Path = REPO / "bench" / "out"
    external: dict[str, ExternalScheduler] = field(default_factory=dict)  # runner name -> command
    # The `muster` runner's core, and the tree it runs from (harness.core.tree_of).
    core: str = "plain"
    tree: Path = REPO


@dataclass
class RunResult:
    """What one run measured; times are seconds since the scheduler process started."""

    runner: str
    workload: str
    pods: int
    bound: int
    first_bind_s: float
    last_bind_s: float
    pods_per_s: float  # first to last bind
    pods_per_s_from_start: float  # process start to last bind
    pod_latency_p50_s: float
    pod_latency_p99_s: float
    gang_latency_p50_s: float
    gang_latency_p99_s: float
    cpu_s: float
    cpu_ms_per_pod: float
    cpu_ms_per_pod_binding: float  # from the sample before the first bind to the end
    peak_rss_mib: float
    sessions: list[tuple[float, float, int]] = field(default_factory=list)
    decisions: list[tuple[float, float, int]] = field(default_factory=list)  # the same, deciding
    core: str = ""  # the core muster reported (muster_build_info); "" for other runners
    bind_curve: list[tuple[float, int]] = field(default_factory=list)
    cpu_curve: list[tuple[float, float]] = field(default_factory=list)
    profile: str = ""
    # On a fresh sim, muster's writes (harness.cluster.scheduler_writes): in all, while binding.
    writes: dict[str, list[int]] = field(default_factory=dict)
    gangs: int = 0
    # With --dra-gpus, the bound pods that do not hold a GPU of their node once the run is
    # done (harness.claims.unallocated_claims): any makes the run's figure misleading.
    unallocated: list[str] = field(default_factory=list)


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def run(runner: str, workload: Workload, options: Options) -> RunResult:
    """One run on a fresh sim (or the given cluster), with every process stopped afterwards."""
    options.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="muster-bench-") as tmp:
        workdir = Path(tmp)
        if options.kubeconfig is not None:
            return asyncio.run(_run(runner, workload, options, options.kubeconfig, workdir))
        log = options.out / f"sim-{runner}.log"
        with fresh_sim(workload, workdir, log) as kubeconfig:
            return asyncio.run(_run(runner, workload, options, kubeconfig, workdir))


async def _run(
    runner: str, workload: Workload, options: Options, kubeconfig: Path, workdir: Path
) -> RunResult:
    namespace = f"muster-bench-{runner}-{secrets.token_hex(3)}"
    async with client(kubeconfig) as kube:
        await create_namespace(kube, namespace)
        if workload.dra_gpus:
            await create_claim_template(kube, namespace)
        process: subprocess.Popen[bytes] | None = None
        profiler: subprocess.Popen[bytes] | None = None
        background: list[asyncio.Task[Any]] = []
        try:
            watcher = BindWatcher(kube, namespace, workload.pods)
            background.append(await watcher.start())
            creator = Creator(kube, workload, namespace)
            if workload.running:
                await creator.running()
            if not workload.rate:
                await creator.backlog()
                if workload.dra_gpus:
                    await await_claims_made(kube, namespace, workload.pods)
            metrics_port = free_port()
            process, profile_path = _start(
                runner, workload, options, kubeconfig, namespace, metrics_port
            )
            started = time.perf_counter()
            if options.profile.startswith("py-spy") and runner == "muster":
                profiler = _start_py_spy(process.pid, profile_path)
            if workload.rate:
                background.append(asyncio.create_task(creator.arrivals(workload.rate)))
            scraped = runner == "muster" or (
                runner in options.external and options.external[runner].serves_metrics()
            )
            url = f"http://127.0.0.1:{metrics_port}/metrics" if scraped else None
            sampler = Sampler(process.pid, url)
            background.append(asyncio.create_task(sampler.run()))
            await _wait_bound(watcher, process, options.timeout)
            hwm = memory_kib(process.pid).get("VmHWM", 0)  # a process that exits takes it along
            cpu = await _settled_cpu(process.pid)
            await sampler.sample()
            with contextlib.suppress(OSError):
                hwm = max(hwm, memory_kib(process.pid).get("VmHWM", 0))
            writes = await scheduler_writes(kube) if options.kubeconfig is None else {}
            unallocated = await unallocated_claims_in(kube, namespace) if workload.dra_gpus else []
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)  # py-spy writes its flame graph on SIGINT
                with contextlib.suppress(subprocess.TimeoutExpired):
                    profiler.wait(timeout=60)
                stop(profiler)
            stop(process, grace=20)
            if options.kubeconfig is not None:
                await delete_namespace(kube, namespace)
                if workload.dra_gpus:
                    await delete_claims(kube, namespace)
    result = _result(runner, workload, watcher, creator, sampler, started, cpu, hwm, profile_path)
    result.writes = writes
    result.unallocated = unallocated
    return result


def _start(
    runner: str,
    workload: Workload,
    options: Options,
    kubeconfig: Path,
    namespace: str,
    metrics_port: int,
) -> tuple[subprocess.Popen[bytes], str]:
    profile_path = ""
    if runner == "muster":
        args = [sys.executable]
        if options.profile == "cprofile":
            profile_path = str(options.out / "muster.prof")
            args += ["-m", "cProfile", "-o", profile_path]
        elif options.profile == "py-spy":
            profile_path = str(options.out / "muster-profile.svg")
        elif options.profile == "py-spy-raw":
            profile_path = str(options.out / "muster-profile.folded")
        args += ["-m", "scheduler.cli", "scheduler", "--kubeconfig", str(kubeconfig)]
        args += ["--no-leader-elect", "--schedule-period", options.schedule_period]
        args += ["--metrics-address", f"127.0.0.1:{metrics_port}", "--log-level", "warning"]
        args += ["--scheduler-name", workload.scheduler_name]
    elif runner in options.external:
        fields = {
            "kubeconfig": str(kubeconfig),
            "namespace": namespace,
            "scheduler_name": workload.scheduler_name,
            "metrics_port": str(metrics_port),
            "out": str(options.out),
        }
        args = options.external[runner].command(fields)
    elif runner in RUNNERS:
        args = [sys.executable, "-m", "harness.baselines", runner, "--kubeconfig", str(kubeconfig)]
        args += ["--namespace", namespace, "--expect", str(workload.pods)]
    else:
        known = ", ".join([*RUNNERS, *options.external])
        raise ValueError(f"runner {runner!r} is not one of {known}; add it with --scheduler-cmd")
    tree = options.tree if runner == "muster" else REPO
    with (options.out / f"{runner}.log").open("ab") as log:
        process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, cwd=tree, env=env_with_bench_path(tree)
        )
    return process, profile_path


def _start_py_spy(pid: int, path: str) -> subprocess.Popen[bytes]:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    # .folded: collapsed stacks (speedscope, flamegraph.pl, grep); .svg: a flame graph
    kind = "raw" if path.endswith(".folded") else "flamegraph"
    return subprocess.Popen(
        [py_spy, "record", "--pid", str(pid), "-o", path, "--rate", "200", "--format", kind],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


# A scheduler's work for a pod does not end with its bind: the statuses and events that
# follow are written after it (muster holds its events while binds wait). Its CPU is read
# once it has settled: less than SETTLE_CORE of a core used over SETTLE_WINDOW seconds, or
# SETTLE_MAX seconds after the last bind, or when it exits.
SETTLE_WINDOW = 1.0
SETTLE_CORE = 0.05
SETTLE_MAX = 15.0
SETTLE_POLL = 0.25


async def _settled_cpu(pid: int) -> float:
    """The process's CPU seconds once it has settled (see SETTLE_CORE)."""
    readings = [(time.monotonic(), cpu_seconds(pid))]
    deadline = readings[0][0] + SETTLE_MAX
    while readings[-1][0] < deadline:
        await asyncio.sleep(SETTLE_POLL)
        try:
            readings.append((time.monotonic(), cpu_seconds(pid)))
        except OSError:
            break  # it exited: its last reading is its whole
        now, cpu = readings[-1]
        then, cpu_then = next(r for r in readings if r[0] >= now - SETTLE_WINDOW - SETTLE_POLL / 2)
        if now - then >= SETTLE_WINDOW and cpu - cpu_then < SETTLE_CORE * (now - then):
            break
    return readings[-1][1]


async def _wait_bound(
    watcher: BindWatcher, process: subprocess.Popen[bytes], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not watcher.done.is_set():
        if process.poll() is not None and not watcher.done.is_set():
            await asyncio.sleep(1.0)  # let the watch catch up with the last binds
            if watcher.done.is_set():
                return
            raise RuntimeError(
                f"the scheduler exited ({process.returncode}) with "
                f"{len(watcher.bound)}/{watcher.expected} bound"
            )
        if time.monotonic() > deadline:
            # The figures of what was bound (start to first bind, sessions, memory) still
            # hold: the run reports them, and its table row says how many were bound.
            print(
                f"warning: {len(watcher.bound)}/{watcher.expected} pods bound after "
                f"{timeout:.0f}s; the run's figures cover the pods bound",
                file=sys.stderr,
            )
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watcher.done.wait(), 0.25)


def _result(
    runner: str,
    workload: Workload,
    watcher: BindWatcher,
    creator: Creator,
    sampler: Sampler,
    started: float,
    cpu: float,
    hwm_kib: int,
    profile: str,
) -> RunResult:
    times = sorted(watcher.bound.values())
    first, last = times[0], times[-1]
    bound = len(times)
    latencies: list[float] = []
    gang_ready: dict[str, float] = {}
    gang_done: dict[str, float] = {}
    for name, at in watcher.bound.items():
        # a backlog's pods wait for the scheduler to start: latency counts from then
        ready = max(creator.created.get(name, started), started)
        latencies.append(at - ready)
        gang = creator.gang_of.get(name, name)
        gang_ready[gang] = max(gang_ready.get(gang, ready), ready)
        gang_done[gang] = max(gang_done.get(gang, at), at)
    gangs = [gang_done[g] - gang_ready[g] for g in gang_done]
    before_first = [s.cpu_s for s in sampler.samples if s.at <= first]
    cpu_at_first = before_first[-1] if before_first else 0.0
    step = max(1, bound // 400)
    return RunResult(
        runner=runner,
        workload=workload.label(),
        pods=workload.pods,
        bound=bound,
        first_bind_s=first - started,
        last_bind_s=last - started,
        pods_per_s=(bound - 1) / (last - first) if last > first else float("nan"),
        pods_per_s_from_start=bound / (last - started),
        pod_latency_p50_s=percentile(latencies, 50),
        pod_latency_p99_s=percentile(latencies, 99),
        gang_latency_p50_s=percentile(gangs, 50),
        gang_latency_p99_s=percentile(gangs, 99),
        cpu_s=cpu,
        cpu_ms_per_pod=cpu * 1000 / max(1, bound),
        cpu_ms_per_pod_binding=(cpu - cpu_at_first) * 1000 / max(1, bound),
        peak_rss_mib=hwm_kib / 1024,
        sessions=[(at - started, mean, n) for at, mean, n in sampler.session_series()],
        decisions=[(at - started, mean, n) for at, mean, n in sampler.decision_series()],
        core=sampler.core(),
        bind_curve=[
            (t - started, i + 1) for i, t in enumerate(times) if i % step == 0 or i == bound - 1
        ],
        cpu_curve=[(s.at - started, s.cpu_s) for s in sampler.samples],
        profile=profile,
        gangs=len(gang_done),
    )
