"""Devices are queue resources, per DeviceClass, as Volcano 1.15's DRA queue quota keys them
(`deviceclass/<class>`): a pod's request counts its claims' devices, a claim once; queues'
capability and deserved divide them; no node is asked for them."""

from __future__ import annotations

from scheduler.api import wire
from scheduler.api.pod_templates import PodShape, template_spec
from scheduler.api.resources import Resource
from scheduler.cache.kinds import podgroups, pods, resourceclaims
from scheduler.engine import load_config, schedule
from scheduler.framework.config import DEFAULT_CONFIG_YAML
from tests.unit.dra.devices import claim, exactly
from tests.unit.dra.world import gang, pod, queue, world_with_gpus

GPU = "deviceclass/gpu"
CAPACITY = load_config(DEFAULT_CONFIG_YAML.replace("proportion", "capacity"))


def test_a_pods_request_counts_the_devices_of_the_claim_made_for_it() -> None:
    world = world_with_gpus(["n1"])
    queue(world, "default")
    gang(world, "g", 2)
    assert world.tasks["g-0-uid"].request.get(GPU) == 1
    assert world.live.jobs["ns/g"].request().get(GPU) == 2


def test_a_claim_several_pods_share_counts_once_and_moves_when_its_pod_goes() -> None:
    world = world_with_gpus(["n1"])
    queue(world, "default")
    resourceclaims.upsert(world, claim("shared", exactly("gpu", count=2)))
    pods.upsert(world, pod("a", "shared", templated=False))
    pods.upsert(world, pod("b", "shared", templated=False))
    counted = {uid: task.request.get(GPU) for uid, task in world.tasks.items()}
    assert counted == {"a-uid": 2, "b-uid": 0}
    pods.delete(world, "a-uid")
    assert world.tasks["b-uid"].request.get(GPU) == 2


def test_a_claim_made_after_its_pod_adds_to_the_pods_request() -> None:
    world = world_with_gpus(["n1"])
    queue(world, "default")
    pods.upsert(world, pod("a", "a-gpu"))
    assert world.tasks["a-uid"].request.get(GPU) == 0
    resourceclaims.upsert(world, claim("a-gpu", exactly("gpu", count=2), owner_pod="a"))
    assert world.tasks["a-uid"].request.get(GPU) == 2


def test_the_cluster_counts_the_devices_each_class_selects() -> None:
    world = world_with_gpus(["n1", "n2"], gpus=4)
    assert world.devices().totals == Resource(scalars={GPU: 8})


def test_a_queue_capability_in_devices_holds_a_gang_that_asks_more() -> None:
    world = world_with_gpus(["n1", "n2"])
    queue(world, "default")
    queue(world, "small", capability={GPU: "2"})
    gang(world, "big", 3, "small")
    gang(world, "fits", 2, "small")
    result = schedule(world.snapshot(), CAPACITY)
    assert sorted(bind.name for bind in result.binds) == ["fits-0", "fits-1"]
    big = next(update for update in result.podgroups if update.name == "big")
    (condition,) = [c for c in big.conditions if c.type == "Unschedulable"]
    assert "deviceclass/gpu" in condition.message


def test_proportion_divides_devices_between_queues_by_weight() -> None:
    world = world_with_gpus(["n1", "n2"])
    queue(world, "a", weight=1)
    queue(world, "b", weight=1)
    for index in range(2):
        gang(world, f"a{index}", 2, "a")
        gang(world, f"b{index}", 2, "b")
    result = schedule(world.snapshot())
    per_queue = {"a": 0, "b": 0}
    for bind in result.binds:
        per_queue[bind.job.split("/")[1][0]] += 1
    assert per_queue == {"a": 2, "b": 2}
    queue_updates = {update.name: update for update in result.queues}
    assert queue_updates["a"].allocated.get(GPU) == 2


def test_no_node_is_asked_for_devices_as_a_resource() -> None:
    world = world_with_gpus(["n1"], gpus=1)
    queue(world, "default")
    gang(world, "g", 2)
    result = schedule(world.snapshot())
    (update,) = result.podgroups
    (condition,) = [c for c in update.conditions if c.type == "Unschedulable"]
    assert "Insufficient deviceclass" not in condition.message
    assert "cannot allocate all claims" in condition.message


def test_a_scale_up_template_carries_the_pods_claims_and_asks_no_device_count() -> None:
    world = world_with_gpus(["n1"])
    queue(world, "default")
    gang(world, "g", 1)
    task = world.tasks["g-0-uid"]
    assert task.request.get(GPU) == 1
    template = template_spec(PodShape.of(task))
    spec = template["spec"]
    assert spec["resourceClaims"] == [{"name": "c0", "resourceClaimTemplateName": "t"}]
    (container,) = spec["containers"]
    assert container["resources"] == {"requests": {"cpu": "1"}, "claims": [{"name": "c0"}]}


def test_a_queue_alone_in_asking_for_devices_deserves_all_it_asks_beside_queues_short_of_cpu() -> (
    None
):
    # Queue "busy" asks far more cpu than there is, and no GPU; "gpus" asks all 4 GPUs.
    # Shared rounds would leave "gpus" a share of the GPUs rounded down; it deserves all 4.
    world = world_with_gpus(["n1", "n2"])
    queue(world, "gpus", weight=1)
    queue(world, "busy", weight=3)
    gang(world, "train", 4, "gpus")
    for index in range(8):
        podgroups.upsert(
            world,
            wire.from_dict(
                {
                    "metadata": {"name": f"cpu{index}", "namespace": "ns", "uid": f"pg-cpu{index}"},
                    "spec": {"minMember": 1, "queue": "busy"},
                    "status": {"phase": "Inqueue"},
                },
                wire.PodGroup,
            ),
        )
        pods.upsert(world, pod(f"cpu{index}-0", group=f"cpu{index}", cpu="4"))
    result = schedule(world.snapshot())
    assert sorted(b.name for b in result.binds if b.job == "ns/train") == [
        f"train-{i}" for i in range(4)
    ]
