"""The inspect subcommands are registered, under `muster` and as the kubectl plugin."""

from __future__ import annotations

import sys

import pytest

from scheduler import cli


@pytest.mark.parametrize("command", ["status", "explain", "whatif"])
def test_kubectl_muster_dispatches_the_same_subcommands_as_muster(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for program, prog in (
        ("/usr/bin/muster", "muster"),
        ("/usr/bin/kubectl-muster", "kubectl muster"),
    ):
        monkeypatch.setattr(sys, "argv", [program, command, "--help"])
        with pytest.raises(SystemExit) as exited:
            cli.main()
        assert exited.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: {prog} {command}")
