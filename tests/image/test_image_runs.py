"""The image's processes run as deploy/ runs them: UID 65532, read-only root, only /tmp writable."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.image.engine import Engine

REPO = Path(__file__).resolve().parents[2]
USER = "65532:65532"
TMP = "--tmpfs=/tmp:rw,size=64m,mode=1777"
# Mounts that may be writable: the kernel's and the engine's pseudo filesystems (the kubelet
# makes the same ones), and /tmp, the emptyDir of deploy/.
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
# Inside the container: every mount with its options, and which directories accept a new file.
PROBE = """
import json, os
mounts = []
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    mounts.append([fields[4], fields[5].split(",")])
writable = []
for directory in %r:
    try:
        with open(os.path.join(directory, ".muster-write-probe"), "w") as probe:
            probe.write("x")
        writable.append(directory)
    except OSError:
        pass
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "mounts": mounts, "writable": writable}))
"""
PROBED_DIRECTORIES = [
    "/",
    "/tmp",
    "/var/tmp",
    "/run",
    "/etc",
    "/opt/muster",
    "/opt/muster/bin",
    "/opt/muster/lib/python3.11/site-packages",
    "/opt/muster/lib/python3.11/site-packages/scheduler",
    "/usr/local/bin",
    "/usr/lib/python3.11",
    "/var/lib",
    "/home",
    "/root",
]


def run_read_only(engine: Engine, image: str, *args: str, entrypoint: str | None = None) -> str:
    """Run the image as deploy/ does (UID 65532, read-only root, tmpfs /tmp); its output."""
    flags = [*engine.read_only_flags(), TMP, f"--user={USER}", "--cap-drop=ALL", "--network=host"]
    if entrypoint:
        flags.append(f"--entrypoint={entrypoint}")
    result = engine.run("run", "--rm", *flags, image, *args, timeout=180)
    assert result.returncode == 0, (
        f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    )
    return result.stdout


def test_version_is_the_project_version(engine: Engine, image: str) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert run_read_only(engine, image, "--version").strip() == f"muster {version}"


@pytest.mark.parametrize("command", ["demo", "sim"])
def test_the_test_bench_is_not_in_the_image_and_says_how_to_get_it(
    engine: Engine, image: str, command: str
) -> None:
    # the image carries what runs in a cluster; sim and the demo run from a checkout (the
    # scheduler and the controller of the image run against such a sim: test_in_cluster.py)
    flags = [*engine.read_only_flags(), TMP, f"--user={USER}", "--cap-drop=ALL"]
    result = engine.run("run", "--rm", *flags, image, command, timeout=60)
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr}"
    assert f"muster {command} is not in this installation" in result.stderr, result.stderr
    assert "pip install 'muster[sim]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_image_holds_neither_the_test_bench_nor_its_dependencies(
    engine: Engine, image: str
) -> None:
    # muster_sim and what only the sim extra installs (jsonschema, rich)
    script = (
        "import importlib.util\n"
        "for name in ('muster_sim', 'jsonschema', 'rich'):\n"
        "    print(name, importlib.util.find_spec(name) is not None)\n"
    )
    output = run_read_only(engine, image, "-c", script, entrypoint="python")
    assert output.split() == ["muster_sim", "False", "jsonschema", "False", "rich", "False"]


def test_only_tmp_is_writable_in_the_container(engine: Engine, image: str) -> None:
    output = run_read_only(engine, image, "-c", PROBE % PROBED_DIRECTORIES, entrypoint="python")
    seen = json.loads(output)
    assert (seen["uid"], seen["gid"]) == (65532, 65532)
    writable_mounts = [
        point
        for point, options in seen["mounts"]
        if "rw" in options and not point.startswith(PSEUDO_ROOTS)
    ]
    assert writable_mounts == ["/tmp"]
    assert seen["writable"] == ["/tmp"]


def test_the_image_runs_the_core_compiled(engine: Engine, image: str) -> None:
    # the Dockerfile builds with MUSTER_COMPILE=1: every module scheduler/build.py lists is a
    # C extension module in the image, and none was trimmed away or left as plain Python
    script = "from scheduler.build import core; print(core())"
    assert run_read_only(engine, image, "-c", script, entrypoint="python").strip() == "compiled"


def test_every_muster_module_imports_in_the_trimmed_image(engine: Engine, image: str) -> None:
    # the venv is trimmed to what the processes load (tests/image/trim_venv.py): a module of
    # muster that imports something trimmed away fails here, whichever process it belongs to
    script = (
        "import importlib, pkgutil, sys, scheduler\n"
        "names = [m.name for m in pkgutil.walk_packages(scheduler.__path__, 'scheduler.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(len(names))\n"
    )
    count = run_read_only(engine, image, "-c", script, entrypoint="python")
    assert int(count) > 50
