"""Which scheduler config the inspect commands use: a file, the scheduler's ConfigMap, or
the built-in default with the reason said."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.api.errors import ConfigError
from scheduler.inspect.config import (
    BUILT_IN,
    CONFIG_MAP_KEY,
    DEFAULT_CONFIG_MAP,
    built_in,
    fallback_notice,
    from_config_map,
    from_file,
    read_config_map,
    split_reference,
)
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import NotFound, StatusError
from tests.unit.inspect.objects import PREEMPTING

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "base" / "scheduler"


class FakeClient:
    """Answers the ConfigMap GET with a body or an error; records the path asked."""

    def __init__(self, answer: bytes | Exception) -> None:
        self.answer = answer
        self.paths: list[str] = []

    async def request(self, method: str, path: str, **_: Any) -> bytes:
        assert method == "GET"
        self.paths.append(path)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def read(answer: bytes | Exception, reference: str = DEFAULT_CONFIG_MAP) -> tuple[Any, FakeClient]:
    client = FakeClient(answer)
    fake: Any = client
    typed: KubeClient = fake
    return asyncio.run(read_config_map(typed, reference)), client


def configmap(text: str, key: str = CONFIG_MAP_KEY) -> bytes:
    return json.dumps({"kind": "ConfigMap", "data": {key: text}}).encode()


def test_default_config_map_is_the_one_the_deployment_mounts_under_the_file_it_reads() -> None:
    (configmap_doc,) = yaml.safe_load_all((DEPLOY / "configmap.yaml").read_text())
    (deployment,) = yaml.safe_load_all((DEPLOY / "deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    conf = next(a for a in container["args"] if a.startswith("--scheduler-conf="))

    meta = configmap_doc["metadata"]
    assert f"{meta['namespace']}/{meta['name']}" == DEFAULT_CONFIG_MAP
    assert volume["configMap"]["name"] == meta["name"]
    assert conf == f"--scheduler-conf={mount['mountPath']}/{CONFIG_MAP_KEY}"
    assert CONFIG_MAP_KEY in configmap_doc["data"]


def test_config_of_the_config_map_is_loaded_and_named_as_its_source() -> None:
    found, client = read(configmap(PREEMPTING), "team/sched")

    assert client.paths == ["/api/v1/namespaces/team/configmaps/sched"]
    assert found.actions == ["enqueue", "allocate", "preempt", "backfill"]
    assert found.source == f"ConfigMap team/sched key {CONFIG_MAP_KEY}"
    assert fallback_notice(found) is None
    assert "actions: enqueue, allocate, preempt, backfill" in found.describe()


@pytest.mark.parametrize(
    ("error", "why"),
    [
        (NotFound(404, "NotFound", "not found", "GET", "/x"), "not found"),
        (
            StatusError(403, "Forbidden", "cannot get", "GET", "/x"),
            "cannot be read (403 Forbidden)",
        ),
    ],
)
def test_an_absent_or_unreadable_config_map_gives_the_built_in_config_and_says_so(
    error: Exception, why: str
) -> None:
    found, _ = read(error)

    assert found.actions == built_in().actions
    assert found.source.startswith(BUILT_IN)
    notice = fallback_notice(found)
    assert notice is not None and "\n" not in notice
    assert notice.startswith(f"ConfigMap {DEFAULT_CONFIG_MAP} {why}; using the {BUILT_IN}")
    assert why in found.describe()


def test_a_server_error_on_the_config_map_is_not_taken_for_an_absent_one() -> None:
    with pytest.raises(StatusError):
        read(StatusError(500, "InternalError", "boom", "GET", "/x"))


def test_a_config_map_without_the_key_is_refused_naming_the_keys_it_has() -> None:
    with pytest.raises(ConfigError, match=r"no data key 'scheduler.yaml' \(its keys: other.yaml\)"):
        from_config_map("ns/c", yaml.safe_load(configmap(PREEMPTING, key="other.yaml")))


def test_a_config_that_does_not_load_is_refused_with_the_loaders_message_and_its_source(
    tmp_path: Path,
) -> None:
    bad = 'actions: "enqueue, allocate, teleport"\ntiers: []\n'
    with pytest.raises(ConfigError, match=r"^ConfigMap ns/c key scheduler.yaml: .*teleport"):
        read(configmap(bad), "ns/c")
    (tmp_path / "s.yaml").write_text(bad)
    with pytest.raises(ConfigError, match=r"s\.yaml: .*teleport"):
        from_file(tmp_path / "s.yaml")


@pytest.mark.parametrize("reference", ["name-only", "/name", "ns/", "a/b/c"])
def test_a_config_map_reference_that_is_not_namespace_slash_name_is_refused(
    reference: str,
) -> None:
    with pytest.raises(ConfigError, match="is not NAMESPACE/NAME"):
        split_reference(reference)


def test_preempt_and_reclaim_are_added_after_allocate_only_when_missing() -> None:
    default = built_in()
    added = default.with_actions(("preempt", "reclaim"))

    assert added is not None
    assert added.actions == ["enqueue", "allocate", "preempt", "reclaim", "backfill"]
    assert added.source == f"{BUILT_IN} with preempt, reclaim added"
    assert added.config.tiers == default.config.tiers
    assert added.with_actions(("preempt", "reclaim")) is None
