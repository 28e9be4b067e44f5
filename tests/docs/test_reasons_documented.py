"""docs/troubleshooting.md names every reason muster writes on a PodGroup's conditions
(scheduler/api/reasons.py), so a user who reads one finds what it means."""

from __future__ import annotations

from pathlib import Path

from scheduler.api import reasons

TROUBLESHOOTING = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def test_every_condition_reason_is_explained_in_troubleshooting() -> None:
    text = TROUBLESHOOTING.read_text()
    written = {
        value
        for name, value in vars(reasons).items()
        if name.isupper() and isinstance(value, str) and value.isalpha()
    }
    assert sorted(r for r in written if f"`{r}`" not in text) == []
