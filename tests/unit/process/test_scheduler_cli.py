"""`muster scheduler`'s flags become SchedulerOptions; the subcommand runs run_scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.api.partition import NodePartition
from scheduler.cli import build_parser
from scheduler.scheduler_cli import options_from_args, run_scheduler
from scheduler.server import SchedulerOptions


def options(*flags: str) -> SchedulerOptions:
    args = build_parser("scheduler").parse_args(["scheduler", *flags])
    assert args.func is run_scheduler
    return options_from_args(args)


def test_without_flags_the_options_are_the_defaults() -> None:
    parsed, default = options(), SchedulerOptions()
    parsed.identity = default.identity  # random per process
    assert parsed == default


@pytest.mark.parametrize(
    ("flags", "field", "expected"),
    [
        pytest.param(["--kubeconfig", "/k"], "kubeconfig", "/k", id="kubeconfig"),
        pytest.param(
            ["--scheduler-name", "muster", "--scheduler-name", "volcano"],
            "scheduler_names",
            ("muster", "volcano"),
            id="scheduler-name-repeats",
        ),
        pytest.param(
            ["--scheduler-conf", "/etc/c.yaml"], "scheduler_conf", Path("/etc/c.yaml"), id="conf"
        ),
        pytest.param(["--schedule-period", "200ms"], "schedule_period", 0.2, id="period"),
        pytest.param(["--default-queue", "batch"], "default_queue", "batch", id="default-queue"),
        pytest.param(["--metrics-address", ":9090"], "metrics_address", ":9090", id="metrics"),
        pytest.param(["--no-leader-elect"], "leader_elect", False, id="no-leader-elect"),
        pytest.param(["--lock-namespace", "ops"], "lock_namespace", "ops", id="lock-namespace"),
        pytest.param(["--lock-name", "m"], "lock_name", "m", id="lock-name"),
        pytest.param(["--kube-api-qps", "50"], "qps", 50.0, id="qps"),
        pytest.param(["--kube-api-burst", "7"], "burst", 7, id="burst"),
        pytest.param(["--list-page-size", "250"], "list_page_size", 250, id="list-page-size"),
        pytest.param(["--bind-pipeline-depth", "1"], "bind_depth", 1, id="bind-pipeline-depth"),
        pytest.param(
            ["--first-session-pods", "0"], "first_session_pods", 0, id="first-session-pods"
        ),
        pytest.param(
            ["--node-selector", "muster.dev/pool=gpu-a"],
            "partition",
            NodePartition("muster.dev/pool", "gpu-a"),
            id="node-selector",
        ),
        pytest.param(
            ["--no-claim-podgroups-without-pods"],
            "claim_podgroups_without_pods",
            False,
            id="no-claim-podgroups-without-pods",
        ),
    ],
)
def test_each_flag_sets_its_option(flags: list[str], field: str, expected: object) -> None:
    assert getattr(options(*flags), field) == expected


def test_a_nonsense_schedule_period_is_refused_naming_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        options("--schedule-period", "fast")
    assert "'fast' is not a duration like 1s or 200ms" in capsys.readouterr().err


def test_a_list_page_size_of_zero_is_refused_naming_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        options("--list-page-size", "0")
    assert "'0' is not a whole number above 0" in capsys.readouterr().err


def test_a_bind_pipeline_depth_of_zero_is_refused_naming_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        options("--bind-pipeline-depth", "0")
    assert "'0' is not a whole number above 0" in capsys.readouterr().err


def test_a_negative_first_session_bound_is_refused_naming_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        options("--first-session-pods", "-1")
    assert "'-1' is not a whole number of 0 or more" in capsys.readouterr().err


@pytest.mark.parametrize(
    "selector",
    ["pool", "pool=", "=gpu", "pool=gpu,zone=a", "pool==gpu", "pool!=gpu", "_pool=gpu", "a/b/c=x"],
)
def test_a_malformed_node_selector_is_refused_naming_the_value_and_the_form(
    selector: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        options("--node-selector", selector)
    err = capsys.readouterr().err
    assert f"--node-selector {selector!r} is not a label selector muster takes" in err
    assert "KEY=VALUE" in err
