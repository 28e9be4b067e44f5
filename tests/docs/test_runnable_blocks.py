"""The shell blocks of README.md and docs/*.md marked runnable do what they say.

A fenced ```sh block right after `<!-- runnable: sim -->` runs, as written, with bash
(`set -euo pipefail`) against a `muster sim` and a `muster scheduler` started for this
module, in the order the pages give them (README first), sharing one working directory:
a later block may use what an earlier one made. A block after `<!-- runnable: help -->`
needs a real cluster, so each of its `muster` and `kubectl` commands is checked instead:
the (sub)command answers `--help`, every flag it uses is in that help, and every repository
path it reads with `-f` or `-k` exists."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.harness import MUSTER, Process, Sim, free_port, http_get, wait_for

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- runnable: (sim|help) -->\n```sh\n(.*?)^```$", re.M | re.S)
# kubectl's global options that take a value: not part of a subcommand's own help.
KUBECTL_GLOBAL = {"-n", "--namespace", "--kubeconfig", "--context"}


@dataclass(frozen=True)
class Block:
    """One marked shell block: where it is, how it is checked, its text."""

    page: str
    line: int
    mode: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def marked_blocks(mode: str) -> list[Block]:
    blocks = []
    for page in PAGES:
        text = page.read_text()
        for match in MARKER.finditer(text):
            if match.group(1) == mode:
                line = text.count("\n", 0, match.start()) + 1
                blocks.append(Block(str(page.relative_to(ROOT)), line, mode, match.group(2)))
    return blocks


def commands(text: str) -> Iterator[list[str]]:
    """The block's commands as words, continuation lines joined, comments and a trailing
    `&` dropped."""
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[-1] == "&":
            words.pop()
        if words:
            yield words


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def subcommands(help_text: str) -> set[str]:
    """The commands a help lists: argparse's `{a,b}` and its indented list, cobra's
    indented lists under headings ("Basic Commands (Beginner):")."""
    names = set(re.findall(r"^ {2,4}([a-z][a-z-]*) {2,}\S", help_text, re.M))
    for group in re.findall(r"\{([a-z,-]+)\}", help_text):
        names |= set(group.split(","))
    return names


def check_with_help(words: list[str]) -> list[str]:
    """What is wrong with one command of a help block: an unknown (sub)command, a flag its
    help does not list, a path that does not exist."""
    program, rest = words[0], words[1:]
    if program == "muster":
        program = MUSTER
    elif program == "kubectl":
        kept: list[str] = []
        skip = False
        for word in rest:
            if skip:
                skip = False
            elif word in KUBECTL_GLOBAL:
                skip = True
            elif word.split("=")[0] not in KUBECTL_GLOBAL:
                kept.append(word)
        rest = kept
    command = [program]
    help_text = run([program, "--help"]).stdout
    for word in rest:
        if word not in subcommands(help_text):
            break
        command.append(word)
        answer = run([*command, "--help"])
        if answer.returncode != 0:
            return [f"{' '.join(words)}: `{' '.join(command)} --help` failed: {answer.stderr}"]
        help_text = answer.stdout
    problems = []
    for index, word in enumerate(rest):
        if word.startswith("--"):
            flag = word.split("=")[0]
            if not re.search(rf"{re.escape(flag)}\b", help_text):
                problems.append(f"{' '.join(words)}: {flag} is not in `{command[-1]} --help`")
        elif re.fullmatch(r"-[a-zA-Z]", word):
            if not re.search(rf"(^|\s){word}[,\s]", help_text, re.M):
                problems.append(f"{' '.join(words)}: {word} is not in `{command[-1]} --help`")
            path = rest[index + 1] if index + 1 < len(rest) else ""
            in_repo = word in ("-f", "-k") and path not in ("", "-") and "~" not in path
            if in_repo and not (ROOT / path).exists():
                problems.append(f"{' '.join(words)}: {path} does not exist")
    return problems


@pytest.mark.parametrize("block", marked_blocks("help"), ids=lambda b: b.id)
def test_help_block_commands_and_flags_exist(block: Block) -> None:
    problems = [
        problem
        for words in commands(block.text)
        if words[0] in ("muster", "kubectl")
        for problem in check_with_help(words)
    ]
    assert problems == []


@pytest.fixture(scope="module")
def sim_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A sim of 4 nodes of 8 cpu and a scheduler against it; the environment blocks run in."""
    work = tmp_path_factory.mktemp("runnable")
    sim = Sim.start(work, 4, "8", "32Gi")
    port = free_port()
    scheduler = Process(
        "muster scheduler",
        [
            MUSTER,
            "scheduler",
            "--kubeconfig",
            str(sim.kubeconfig),
            "--no-leader-elect",
            "--schedule-period",
            "0.2s",
            "--metrics-address",
            f"127.0.0.1:{port}",
        ],
        work / "scheduler.log",
    )
    try:
        wait_for(
            lambda: http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200,
            30,
            message=lambda: f"scheduler ready\n{scheduler.tail()}",
        )
        yield {
            **os.environ,
            "KUBECONFIG": str(sim.kubeconfig),
            "PATH": f"{Path(MUSTER).parent}{os.pathsep}{os.environ['PATH']}",
            "WORK": str(work),
        }
    finally:
        scheduler.stop()
        sim.process.stop()


@pytest.mark.parametrize("block", marked_blocks("sim"), ids=lambda b: b.id)
def test_sim_block_runs(block: Block, sim_cluster: dict[str, str]) -> None:
    answer = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + block.text],
        cwd=sim_cluster["WORK"],
        env=sim_cluster,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 0, f"{block.id}:\n{answer.stdout}\n{answer.stderr}"
