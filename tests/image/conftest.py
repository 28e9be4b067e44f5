"""Fixtures for the image tests (`make image-test`): the built image and the engine that runs it.

These tests need a built image, named by MUSTER_IMAGE (`make image-test` builds it and sets it),
and a container engine. `make test` collects tests/ whole: there, without MUSTER_IMAGE, this
directory is left out; run explicitly without it, the tests fail and say how to run them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.image.engine import Engine

IMAGE_ENV = "MUSTER_IMAGE"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave tests/image out of a broad run (`make test`) that has no image to test."""
    here = Path(__file__).parent
    if IMAGE_ENV in os.environ or here not in collection_path.parents:
        return None
    named_here = any(
        Path(arg.split("::")[0]).resolve() == here
        or here in Path(arg.split("::")[0]).resolve().parents
        for arg in config.args
    )
    return None if named_here else True


@pytest.fixture(scope="session")
def image() -> str:
    """The image under test."""
    name = os.environ.get(IMAGE_ENV)
    if not name:
        pytest.fail(f"{IMAGE_ENV} is not set: run `make image-test` (it builds the image first)")
    return name


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory, image: str) -> Engine:
    """The engine, checked once: it can run the image at all (else every test fails, loudly)."""
    found = Engine.find(tmp_path_factory.mktemp("engine"))
    probe = found.run("run", "--rm", "--network=host", image, "--version")
    if probe.returncode != 0:
        pytest.fail(
            f"{found.binary} cannot run {image}: {probe.stderr.strip() or probe.stdout.strip()}",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="session")
def image_config(engine: Engine, image: str) -> dict[str, object]:
    """The image's config (User, Entrypoint, Cmd, Labels, Env, ExposedPorts)."""
    config: dict[str, object] = engine.inspect_image(image)["Config"]
    return config
