"""docs/metrics.md names every metric the scheduler and the controller register, with its
type, and names no metric that neither registers."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.controller.metrics import ControllerMetrics
from scheduler.metrics import Metrics

METRICS_MD = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
# A counter's series carry `_total` on /metrics beyond its family's name.
SUFFIX = {"counter": "_total"}


def documented() -> dict[str, str]:
    """metric name -> type, from the tables' rows (`| `name` | type | labels | meaning |`)."""
    rows = re.findall(r"^\| `(muster_[a-z_]+)` \| ([a-z]+) \|", METRICS_MD.read_text(), re.M)
    return dict(rows)


def served(registry: CollectorRegistry) -> dict[str, str]:
    """metric name -> type, as a scrape of /metrics (the registry's text) shows them."""
    families = list(text_string_to_metric_families(generate_latest(registry).decode()))
    names = {family.name for family in families}
    # prometheus_client writes each counter's and histogram's creation time as a series
    # `<name>_created`, which the parser reads as a family of its own.
    return {
        family.name + SUFFIX.get(family.type, ""): family.type
        for family in families
        if not (family.name.endswith("_created") and family.name.removesuffix("_created") in names)
    }


def test_every_metric_on_metrics_is_documented_with_its_type_and_no_other() -> None:
    live = served(Metrics().registry) | served(ControllerMetrics().registry)
    docs = documented()
    assert sorted(set(live) - set(docs)) == [], "on /metrics but not in docs/metrics.md"
    assert sorted(set(docs) - set(live)) == [], "in docs/metrics.md but not on /metrics"
    wrong = {name: (docs[name], kind) for name, kind in live.items() if docs[name] != kind}
    assert wrong == {}, "type in docs/metrics.md differs from /metrics (docs, live)"
