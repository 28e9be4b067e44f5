"""LeaderElector: one active scheduler among replicas, through a coordination.k8s.io Lease.

Follows client-go's rules: a replica takes the lease when it is free or its
holder has not renewed it for leaseDuration, measured on the local clock from
when this replica last saw the record change (so clocks need not agree);
the leader renews every retryPeriod and steps down at once if it could not
renew within renewDeadline; updates carry the resourceVersion, so two
replicas racing for the lease cannot both win. On shutdown the leader
releases the lease so a standby takes over without waiting it out: it stops
campaigning first and waits for a renewal in flight, so that no renewal can
land after the release and take the lease back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from scheduler.kube.client import KubeClient
from scheduler.kube.clock import now_micro
from scheduler.kube.errors import Conflict, NotFound, StatusError, TransportError

log = logging.getLogger(__name__)
# How long past an observed expiry a standby tries to take the lease over (clock slack).
EXPIRY_MARGIN = 0.05
# How soon an attempt the API server did not answer is made again (at most the retry
# period): a standby counts the holder's term from when it first saw the last renewal, so
# each retry period spent not seeing it (an API server restarting) would lengthen the
# takeover by as much.
FAILED_RETRY = 0.5
# How often a standby reads a lease another replica holds. It counts the holder's term from
# when it first saw the last renewal, so it sees a renewal up to one read late and takes
# over as much later: every 2 s (the retry period, client-go's default) made a takeover
# after a SIGKILL take up to 17.9 s, past lease + 2 s (chaos campaign, seed 312). Two reads
# of one Lease a second are nothing to the API server; the leader still renews every retry
# period.
STANDBY_READ = 0.5


class LeaderElector:
    """Campaigns for a Lease and reports whether this replica leads."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_change: Callable[[bool], None] = lambda leading: None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_change = on_change
        self._leading = False
        self._renewed_at = 0.0
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        # When the other holder's lease runs out, as this replica observed it (monotonic).
        self._expires_at: float | None = None
        self._stopped = False
        # Set each time this replica takes the lease (the scheduling loop clears it).
        self.taken = asyncio.Event()
        # one attempt at a time: release() waits for a renewal in flight
        self._attempt = asyncio.Lock()

    @property
    def path(self) -> str:
        """The Lease's API path."""
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    @property
    def is_leader(self) -> bool:
        """True while this replica holds a lease it renewed within the renew deadline."""
        if self._leading and time.monotonic() - self._renewed_at > self.renew_deadline:
            self._set_leading(False)
        return self._leading

    async def run(self) -> None:
        """Try to acquire, then keep renewing, until cancelled or released."""
        while not self._stopped:
            async with self._attempt:
                if self._stopped:
                    return
                # The term is counted from before the renewal was sent: others count
                # theirs from when they saw it, which is later, however long the answer
                # took (or however long this process was stopped waiting for it).
                started = time.monotonic()
                failed = False
                try:
                    acquired = await self._try_acquire_or_renew()
                except (StatusError, TransportError) as error:
                    log.warning("lease %s/%s: %s", self.namespace, self.name, error)
                    acquired = False
                    failed = True
            if acquired:
                self._renewed_at = started
                self._set_leading(True)
            elif self._leading and time.monotonic() - self._renewed_at > self.renew_deadline:
                self._set_leading(False)
            await asyncio.sleep(self._next_attempt_in(acquired, failed=failed))

    def _next_attempt_in(self, acquired: bool, *, failed: bool = False) -> float:
        """Seconds to the next attempt: the retry period; a standby watching another's lease
        every STANDBY_READ, or at its expiry when that comes sooner, so it takes over at
        expiry rather than up to one retry period after it; FAILED_RETRY when the API
        server did not answer."""
        period = min(self.retry_period, FAILED_RETRY) if failed else self.retry_period
        if acquired or self._expires_at is None:
            return period
        period = min(period, STANDBY_READ)
        until_expiry = self._expires_at - time.monotonic() + EXPIRY_MARGIN
        return max(EXPIRY_MARGIN, min(period, until_expiry))

    async def release(self, *, give_up: bool = True) -> None:
        """Stop campaigning and give the lease up if we hold it (on shutdown). Without
        `give_up` (a write of ours may still land), stop leading but leave the lease to
        expire, so that no successor leads before the write has landed or failed."""
        self._stopped = True
        async with self._attempt:
            if give_up:
                await self._give_up()
            elif self._leading:
                self._set_leading(False)
                log.warning(
                    "lease %s/%s left to expire: writes of this leader were not answered",
                    self.namespace,
                    self.name,
                )

    async def _give_up(self) -> None:
        if not self._leading:
            return
        self._set_leading(False)
        try:
            lease = await self.client.get_json(self.path)
            spec = lease.setdefault("spec", {})
            if spec.get("holderIdentity") != self.identity:
                return
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = now_micro()
            await self.client.request("PUT", self.path, body=lease, retry=False)
        except (StatusError, TransportError) as error:
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, error)

    async def _try_acquire_or_renew(self) -> bool:
        now = now_micro()
        try:
            lease: dict[str, Any] = await self.client.get_json(self.path)
        except NotFound:
            return await self._create(now)
        spec = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity") or ""
        record = (holder, str(spec.get("renewTime", "")))
        if record != self._observed:
            self._observed = record
            self._observed_at = time.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        held_by_other = holder and holder != self.identity
        self._expires_at = self._observed_at + duration if held_by_other else None
        if held_by_other and time.monotonic() - self._observed_at < duration:
            return False
        if holder != self.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = int(self.lease_duration)
        spec["renewTime"] = now
        try:
            await self.client.request("PUT", self.path, body=lease, retry=False)
        except Conflict:
            return False
        return True

    async def _create(self, now: str) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            await self.client.create(
                f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases", body
            )
        except Conflict:
            return False
        return True

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            self._leading = leading
            if leading:
                self.taken.set()
            log.info(
                "leadership %s",
                "acquired" if leading else "lost",
                extra={"lease": f"{self.namespace}/{self.name}", "identity": self.identity},
            )
            self.on_change(leading)
