"""What the bench watches: bind times from a pod watch, a process's CPU and memory, /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field

import aiohttp
import msgspec
from prometheus_client.parser import text_string_to_metric_families

from scheduler.api.errors import ApiError
from scheduler.kube.client import KubeClient

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class _Meta(msgspec.Struct):
    name: str = ""
    resourceVersion: str = ""


class _Spec(msgspec.Struct):
    nodeName: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _Event(msgspec.Struct):
    type: str
    object: _Pod


class _PodList(msgspec.Struct):
    metadata: _Meta
    items: list[_Pod]


_event = msgspec.json.Decoder(_Event)
_list = msgspec.json.Decoder(_PodList)


class BindWatcher:
    """Watches the namespace's pods; notes when each first shows spec.nodeName."""

    def __init__(self, kube: KubeClient, namespace: str, expected: int) -> None:
        self.kube = kube
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        self.expected = expected
        self.bound: dict[str, float] = {}  # pod name -> perf_counter of the first event with a node
        self.nodes: dict[str, str] = {}
        self.done = asyncio.Event()
        self._rv = ""

    async def start(self) -> asyncio.Task[None]:
        """List (to learn the resourceVersion), then watch in the background."""
        await self._relist()
        return asyncio.create_task(self._watch())

    async def _relist(self) -> None:
        pods = _list.decode(await self.kube.request("GET", self.path))
        for pod in pods.items:
            self._note(pod, time.perf_counter())
        self._rv = pods.metadata.resourceVersion

    def _note(self, pod: _Pod, now: float) -> None:
        if pod.spec.nodeName and pod.metadata.name not in self.bound:
            self.bound[pod.metadata.name] = now
            self.nodes[pod.metadata.name] = pod.spec.nodeName
            if len(self.bound) >= self.expected:
                self.done.set()

    async def _watch(self) -> None:
        while True:
            params = {"resourceVersion": self._rv, "timeoutSeconds": "3600"}
            try:
                async for line in self.kube.watch(self.path, params, timeout=3600):
                    now = time.perf_counter()
                    event = _event.decode(line)
                    if event.type == "ERROR":  # 410 Gone: the history moved on
                        await self._relist()
                        break
                    self._rv = event.object.metadata.resourceVersion or self._rv
                    self._note(event.object, now)
            except (ApiError, msgspec.DecodeError):
                await asyncio.sleep(0.2)
                with contextlib.suppress(ApiError):
                    await self._relist()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        # the command name may hold spaces: fields start after the last ')'
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in KiB."""
    values: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return values


@dataclass
class Sample:
    """One scrape: time, process CPU and RSS, and the scheduler's counters if it has /metrics."""

    at: float
    cpu_s: float
    rss_kib: int
    session_sum: float = 0.0
    session_count: float = 0.0
    # The decision alone (snapshot and actions), without applying it.
    decide_sum: float = 0.0
    decide_count: float = 0.0
    binds: float = 0.0
    core: str = ""  # muster_build_info's core label: how the scheduler ran its core


@dataclass
class Sampler:
    """Every `period` seconds: the process's CPU and RSS, and /metrics when a URL is given."""

    pid: int
    metrics_url: str | None = None
    period: float = 0.5
    samples: list[Sample] = field(default_factory=list)

    async def run(self) -> None:
        """Sample until cancelled."""
        async with aiohttp.ClientSession() as http:
            while True:
                await self.sample(http)
                await asyncio.sleep(self.period)

    async def sample(self, http: aiohttp.ClientSession | None = None) -> Sample | None:
        """Take one sample now (None once the process is gone)."""
        now = time.perf_counter()
        try:
            cpu = cpu_seconds(self.pid)
            rss = memory_kib(self.pid).get("VmRSS", 0)
        except OSError:
            return None
        sample = Sample(now, cpu, rss)
        if self.metrics_url and http is not None:
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with http.get(self.metrics_url, timeout=aiohttp.ClientTimeout(2)) as resp:
                    parse_metrics(await resp.text(), sample)
        self.samples.append(sample)
        return sample

    def session_series(self) -> list[tuple[float, float, int]]:
        """(time, mean session seconds, sessions) per interval that ran at least one session."""
        return self._series("session_sum", "session_count")

    def decision_series(self) -> list[tuple[float, float, int]]:
        """The same for the decision alone (muster_scheduling_attempt_duration_seconds)."""
        return self._series("decide_sum", "decide_count")

    def core(self) -> str:
        """The core the scheduler said it runs ("" if it serves no muster_build_info)."""
        return next((s.core for s in reversed(self.samples) if s.core), "")

    def _series(self, sums: str, counts: str) -> list[tuple[float, float, int]]:
        series = []
        for before, after in zip(self.samples, self.samples[1:], strict=False):
            count = getattr(after, counts) - getattr(before, counts)
            if count > 0:
                mean = (getattr(after, sums) - getattr(before, sums)) / count
                series.append((after.at, mean, int(count)))
        return series


def parse_metrics(text: str, sample: Sample) -> None:
    """Fill the session's and the decision's sums and counts, the successful binds and the
    core muster says it runs, from Prometheus text."""
    for family in text_string_to_metric_families(text):
        for metric in family.samples:
            if metric.name == "muster_session_duration_seconds_sum":
                sample.session_sum = metric.value
            elif metric.name == "muster_session_duration_seconds_count":
                sample.session_count = metric.value
            elif metric.name == "muster_scheduling_attempt_duration_seconds_sum":
                sample.decide_sum = metric.value
            elif metric.name == "muster_scheduling_attempt_duration_seconds_count":
                sample.decide_count = metric.value
            elif metric.name == "muster_binds_total" and metric.labels.get("result") == "success":
                sample.binds = metric.value
            elif metric.name == "muster_build_info":
                sample.core = metric.labels.get("core", "")
