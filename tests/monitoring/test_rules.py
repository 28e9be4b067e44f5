"""muster's alerts (deploy/overlays/servicemonitor/prometheusrule.yaml) pass `promtool check
rules` and their cases in rules_test.yaml (`promtool test rules`), and each has its section in
docs/operations.md; they and the dashboard read only series muster exports. promtool comes
with Debian's `prometheus` package (`make test` and .ci/run install it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from scheduler.metrics import Metrics

REPO = Path(__file__).resolve().parents[2]
RULE = REPO / "deploy" / "overlays" / "servicemonitor" / "prometheusrule.yaml"
CASES = Path(__file__).with_name("rules_test.yaml")
DASHBOARD = RULE.with_name("dashboards") / "muster.json"
OPERATIONS = REPO / "docs" / "operations.md"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed: apt-get install prometheus (make test does)")
    return found


def alerts() -> list[str]:
    spec = yaml.safe_load(RULE.read_text())["spec"]
    return [rule["alert"] for group in spec["groups"] for rule in group["rules"]]


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """The PrometheusRule's spec as a plain rules file, beside the cases."""
    spec = yaml.safe_load(RULE.read_text())["spec"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    shutil.copy(CASES, tmp_path / CASES.name)
    return tmp_path


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_rules_are_valid_prometheus_rules(rules_dir: Path) -> None:
    result = run([promtool(), "check", "rules", "rules.yaml"], rules_dir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_alerts_fire_when_their_cases_say_and_not_before(rules_dir: Path) -> None:
    result = run([promtool(), "test", "rules", CASES.name], rules_dir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_cases_and_a_section_in_the_operations_guide() -> None:
    cases = yaml.safe_load(CASES.read_text())["tests"]
    tested = {t["alertname"] for case in cases for t in case.get("alert_rule_test", [])}
    guide = OPERATIONS.read_text()
    for alert in alerts():
        assert alert in tested, f"{alert} has no case in {CASES.name}"
        assert f"### {alert}" in guide, f"{alert} has no section in docs/operations.md"


def exported() -> set[str]:
    """Every series name `muster scheduler` exports (families with no sample yet too)."""
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def test_every_series_the_alerts_and_the_dashboard_read_is_one_muster_exports() -> None:
    rules = RULE.read_text()
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    read = set(re.findall(r"\bmuster_[a-z_]+", rules + " ".join(queries)))
    assert read, "no series read"
    assert read <= exported(), f"not exported by muster: {sorted(read - exported())}"
