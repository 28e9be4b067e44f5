"""A client-side token bucket (client-go's QPS and burst)."""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """Allows `qps` requests a second on average and `burst` at once."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        """Wait until a request may go."""
        if self.qps <= 0:
            return
        async with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.qps)
                self._stamp = time.monotonic()
                self._tokens = 0
            else:
                self._tokens -= 1
