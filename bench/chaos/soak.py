"""Soak figures: the leader's RSS, threads, open sockets and session durations over time."""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from chaos.cluster import ChaosCluster


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS (bytes) and Threads of a process, from /proc (Linux)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key == "VmRSS":
                out["rss"] = int(value.split()[0]) * 1024
            elif key == "Threads":
                out["threads"] = int(value)
    except OSError:
        pass
    return out


def open_sockets(pid: int) -> int:
    """How many of the process's file descriptors are sockets."""
    directory = f"/proc/{pid}/fd"
    count = 0
    try:
        for entry in os.listdir(directory):
            try:
                if os.readlink(f"{directory}/{entry}").startswith("socket:"):
                    count += 1
            except OSError:
                continue
    except OSError:
        return 0
    return count


@dataclass
class Sampler:
    """Samples the leader every `every` seconds (only while the same replica leads)."""

    chaos: ChaosCluster
    every: float
    samples: list[dict[str, float]] = field(default_factory=list)
    # Scrapes /metrics did not answer.
    missed_scrapes: int = 0
    _next: float = 0.0
    _last: tuple[int, float, float] | None = None

    def maybe_sample(self) -> None:
        """Take a sample if one is due."""
        now = time.time()
        if now < self._next:
            return
        self._next = now + self.every
        leader = self.chaos.leader()
        if leader is None:
            return
        try:
            metrics = leader.scheduler.metrics()
        except AssertionError:
            # /metrics did not answer (the scheduler's loop was busy past the scrape's
            # timeout): a finding for the report, not the end of the soak.
            self.missed_scrapes += 1
            return
        count = metrics.value("muster_session_duration_seconds_count")
        total = metrics.value("muster_session_duration_seconds_sum")
        status = proc_status(leader.process.pid)
        sample: dict[str, float] = {
            "time": now,
            "replica": float(leader.index),
            "rss": float(status.get("rss", 0)),
            "threads": float(status.get("threads", 0)),
            "sockets": float(open_sockets(leader.process.pid)),
            "sim_rss": float(proc_status(self.chaos.sim.process.pid).get("rss", 0)),
            "tasks": metrics.value("muster_asyncio_tasks"),
            "pods": metrics.value("muster_cache_objects", kind="pod"),
        }
        if self._last is not None and self._last[0] == leader.index and count > self._last[1]:
            sample["session_mean"] = (total - self._last[2]) / (count - self._last[1])
        self._last = (leader.index, count, total)
        self.samples.append(sample)


def first_last(
    samples: list[dict[str, float]], key: str, warmup: float
) -> tuple[float, float] | None:
    """`key` in the first sample after warm-up and in the last, over the last leader's
    samples; None with fewer than two of them."""
    if not samples:
        return None
    replica = samples[-1]["replica"]
    mine = [s for s in samples if s["replica"] == replica and key in s]
    begin = mine[0]["time"] + warmup if mine else 0
    after = [s for s in mine if s["time"] >= begin]
    if len(after) < 2:
        return None
    return after[0][key], after[-1][key]


def growth(samples: list[dict[str, float]], key: str, warmup: float) -> float | None:
    """Relative growth of `key` from the first sample after warm-up to the last (one replica)."""
    pair = first_last(samples, key, warmup)
    if pair is None or pair[0] == 0:
        return None
    return pair[1] / pair[0] - 1


def session_trend(samples: list[dict[str, float]]) -> tuple[float, float] | None:
    """Median session duration in the first and the last third of the samples."""
    values = [s["session_mean"] for s in samples if "session_mean" in s]
    if len(values) < 3:
        return None
    third = max(1, len(values) // 3)
    return statistics.median(values[:third]), statistics.median(values[-third:])
