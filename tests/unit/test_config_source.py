"""The scheduler config file: reloaded on change; an invalid file keeps the previous config."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from scheduler.api.errors import ConfigError
from scheduler.config_source import ConfigSource
from scheduler.endpoints import split_address
from scheduler.scheduler_cli import parse_duration

FIRST = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
SECOND = 'actions: "allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n'


def rewrite(path: Path, text: str) -> None:
    path.write_text(text)
    # Make the change visible even within the file system's timestamp resolution.
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + 1))


def test_changed_file_takes_effect(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(FIRST)
    source = ConfigSource(path)
    assert source.config.actions == ["enqueue", "allocate"]
    assert source.reload_if_changed() is None
    rewrite(path, SECOND)
    assert source.reload_if_changed() is None
    assert source.config.actions == ["allocate", "backfill"]


def test_invalid_file_keeps_the_previous_config_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(FIRST)
    source = ConfigSource(path)
    rewrite(path, 'actions: "allocate, teleport"\ntiers: []\n')
    error = source.reload_if_changed()
    assert error is not None and "unknown action 'teleport'" in error
    assert "previous config kept" in error
    assert source.config.actions == ["enqueue", "allocate"]


def test_invalid_file_at_start_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text("tiers: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        ConfigSource(path)


def test_without_a_file_the_default_config_is_used() -> None:
    assert ConfigSource(None).config.actions == ["enqueue", "allocate", "backfill"]


@pytest.mark.parametrize(
    ("text", "seconds"), [("1s", 1.0), ("200ms", 0.2), ("0.5", 0.5), ("2m", 120.0)]
)
def test_schedule_period_accepts_go_style_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "fast", "0s", "-1s"])
def test_schedule_period_refuses_nonsense(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)


def test_metrics_address_forms() -> None:
    assert split_address(":8080") == ("", 8080)
    assert split_address("127.0.0.1:9090") == ("127.0.0.1", 9090)
    assert split_address("[::1]:9090") == ("::1", 9090)


def test_argument_typo_in_a_reloaded_file_keeps_the_previous_config_and_names_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(FIRST)
    source = ConfigSource(path)
    rewrite(
        path,
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: nodeorder\n'
        "    arguments: {leastrequested.weight: heavy}\n",
    )
    error = source.reload_if_changed()
    assert error is not None
    assert "plugin nodeorder: argument leastrequested.weight='heavy'" in error
    assert source.config.actions == ["enqueue", "allocate"]
