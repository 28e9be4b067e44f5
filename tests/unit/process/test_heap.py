"""The scheduler gives freed heap memory back about once a minute (glibc's malloc_trim)."""

from __future__ import annotations

import asyncio.sslproto
import logging
import sys
from pathlib import Path

import pytest

from scheduler import server
from scheduler.heap import (
    M_MMAP_THRESHOLD,
    MMAP_THRESHOLD,
    TRIM_EVERY,
    HeapTrimmer,
    glibc,
    pin_mmap_threshold,
)
from tests.unit.offline_process import offline_process


class FakeLibc:
    def __init__(self) -> None:
        self.pads: list[int] = []

    def malloc_trim(self, pad: int) -> int:
        self.pads.append(pad)
        return 1


def test_a_trim_at_most_every_interval_of_the_clock() -> None:
    now = [100.0]
    libc = FakeLibc()
    trimmer = HeapTrimmer(libc, every=60.0, clock=lambda: now[0])
    done = []
    for moment in (100.0, 159.9, 160.0, 200.0, 220.0, 400.0):
        now[0] = moment
        done.append(trimmer.trim_if_due())
    assert done == [False, False, True, False, True, True]
    assert libc.pads == [0, 0, 0]  # malloc_trim(0): every free page, not only the top


def test_without_glibc_nothing_is_trimmed() -> None:
    trimmer = HeapTrimmer(None, every=0.0, clock=lambda: 1e9)
    assert trimmer.trim_if_due() is False
    assert trimmer.trims == 0


def test_this_machine_s_glibc_is_found_and_trims() -> None:
    libc = glibc()
    assert libc is not None  # Debian's glibc, as in the image
    assert libc.malloc_trim(0) in (0, 1)


class RecordingLibc(FakeLibc):
    def __init__(self, answer: int) -> None:
        super().__init__()
        self.answer = answer
        self.options: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.options.append((param, value))
        return self.answer


def test_the_mmap_threshold_is_pinned_above_a_tls_read() -> None:
    libc = RecordingLibc(answer=1)
    assert pin_mmap_threshold(libc) is True
    assert libc.options == [(M_MMAP_THRESHOLD, MMAP_THRESHOLD)]
    # asyncio asks a TLS connection for up to max_size bytes at each read, into a new bytes
    # object: that block must come from the heap, not from pages of its own.
    assert asyncio.sslproto.SSLProtocol.max_size + sys.getsizeof(b"") < MMAP_THRESHOLD


def test_a_threshold_glibc_refuses_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler.heap"):
        assert pin_mmap_threshold(RecordingLibc(answer=0)) is False
    assert f"refused an mmap threshold of {MMAP_THRESHOLD} bytes" in caplog.text
    assert pin_mmap_threshold(None) is False


def test_the_scheduler_process_pins_the_threshold_and_trims_with_the_same_libc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libc = RecordingLibc(answer=1)
    monkeypatch.setattr(server, "glibc", lambda: libc)
    process = offline_process(tmp_path)
    assert libc.options == [(M_MMAP_THRESHOLD, MMAP_THRESHOLD)]
    process.heap._last -= TRIM_EVERY
    assert process.heap.trim_if_due() is True
    assert libc.pads == [0]


def test_this_machine_s_glibc_takes_the_threshold() -> None:
    assert pin_mmap_threshold(glibc()) is True
