"""A real Prometheus (Debian's `prometheus` package) scrapes muster on sim with muster's own
alert rules, and sees the stall alert's expression turn true when sim refuses every bind,
and stay false while the cluster is only full."""

from __future__ import annotations

import json
import shutil
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    REPO,
    Cluster,
    Process,
    Sim,
    free_port,
    http_get,
    make_gang,
    wait_for,
)

RULE = REPO / "deploy" / "overlays" / "servicemonitor" / "prometheusrule.yaml"
STALLED = "MusterSchedulingStalled"


def alert_rules() -> dict[str, Any]:
    """The PrometheusRule's spec: a plain Prometheus rules file."""
    spec: dict[str, Any] = yaml.safe_load(RULE.read_text())["spec"]
    return spec


def expression(alert: str) -> str:
    rules = [r for g in alert_rules()["groups"] for r in g["rules"] if r.get("alert") == alert]
    return str(rules[0]["expr"])


class Prometheus:
    """A prometheus process scraping one target every second, with muster's rules."""

    def __init__(self, work_dir: Path, target: str, processes: list[Process]) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.skip("prometheus is not installed: apt-get install prometheus (make test does)")
        (work_dir / "rules.yaml").write_text(yaml.safe_dump(alert_rules()))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(work_dir / "rules.yaml")],
            "scrape_configs": [
                {
                    "job_name": "muster-scheduler",
                    "static_configs": [{"targets": [target]}],
                }
            ],
        }
        (work_dir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.process = Process(
            "prometheus",
            [
                binary,
                f"--config.file={work_dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={work_dir / 'tsdb'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
            ],
            work_dir / "prometheus.log",
        )
        processes.append(self.process)
        wait_for(self.ready, 20, interval=0.2, message=lambda: f"prometheus ready\n{self.tail()}")

    def ready(self) -> bool:
        if not self.process.alive:
            raise AssertionError(f"prometheus exited:\n{self.tail()}")
        return http_get(self.url + "/-/ready")[0] == 200

    def tail(self) -> str:
        return self.process.tail(20)

    def query(self, promql: str) -> list[Any]:
        """The instant vector `promql` evaluates to now (empty: false, for an alert's expr)."""
        code, body = http_get(f"{self.url}/api/v1/query?query={urllib.parse.quote(promql)}")
        assert code == 200, body
        result: list[Any] = json.loads(body)["data"]["result"]
        return result

    def scraped(self, metric: str) -> bool:
        return bool(self.query(metric))


@pytest.mark.timeout(60)
@pytest.mark.nodes(1, "4")
def test_prometheus_sees_the_stall_alert_turn_true_when_binds_are_refused_not_when_full(
    cluster: Cluster,
    namespace: str,
    needs_sim: Sim,
    start_scheduler: StartScheduler,
    processes: list[Process],
    tmp_path: Path,
) -> None:
    scheduler = start_scheduler()
    prometheus = Prometheus(tmp_path, f"127.0.0.1:{scheduler.metrics_port}", processes)
    stalled = expression(STALLED)
    wait_for(
        lambda: prometheus.scraped("muster_placeable_gangs"),
        15,
        interval=0.2,
        message=lambda: f"muster scraped\n{prometheus.tail()}",
    )

    # full: a gang bigger than the cluster waits, nothing is placeable, nothing bound
    cluster.submit(namespace, *make_gang("too-big", 2, cpu="3"))
    wait_for(
        lambda: scheduler.metrics().value("muster_pending_pods") >= 2,
        10,
        message="the big gang seen pending",
    )
    wait_for(
        lambda: prometheus.query("muster_pending_pods > 0"),
        10,
        interval=0.2,
        message="prometheus scraped the pending pods",
    )
    assert prometheus.query(stalled) == [], "a full cluster read as a stall"

    # binds refused: a gang that fits is placed and never bound
    needs_sim.set_faults(
        {"errors": [{"rate": 1.0, "code": 500, "verbs": ["create"], "resources": ["pods/binding"]}]}
    )
    cluster.submit(namespace, *make_gang("fits", 1, cpu="1"))
    (series,) = wait_for(
        lambda: prometheus.query(stalled),
        20,
        interval=0.2,
        message=lambda: f"{STALLED}'s expression true\n{prometheus.tail()}",
    )
    assert float(series["value"][1]) == 1.0, "one gang placeable"
    assert series["metric"]["job"] == "muster-scheduler"
