"""DRA's allocation core alone (scheduler/dra/): what a session's device questions cost.

    python bench/dra_bench.py [--nodes 1000] [--gpus 8] [--gang 8] [--repeat 200]

Prints which core ran (run from build/compiled with PYTHONPATH=. after `make compiled` to
time the compiled one), then, over nodes of `--gpus` GPUs each published in one node-local
ResourceSlice and one DeviceClass selecting them by CEL:

- the allocator's build for a session, with a cold selector memo and a warm one;
- the first `fits` on every node (each GPU's class selector evaluated once, into the memo);
- a quick `fits`: one claim of one GPU on a node whose candidates are known;
- a gang of `--gang` members, one GPU each, placed on one node (fits, take, commit);
- the joint re-solve: the gang's last member asks for the one GPU its first member took;
- a member too many on a full node (the quick no, then the joint search's no).

Times are medians of `--repeat` runs, in microseconds unless said; the collector is off
while timing, as the scheduler keeps it off during a session.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from scheduler.api import dra, wire
from scheduler.build import core
from scheduler.dra import DeviceAllocator, PodClaims, SelectorMemo

DRIVER = "gpu.example.com"
INDEX = f'device.attributes["{DRIVER}"].index'


def node_slice(node: str, gpus: int) -> dra.ResourceSlice:
    devices = [
        dra.Device(
            name=f"gpu-{i}",
            attributes={
                "index": dra.DeviceAttribute(int_value=i),
                "model": dra.DeviceAttribute(string_value="h100" if i % 2 else "a100"),
            },
            capacity={"memory": dra.DeviceCapacity(value="80Gi")},
        )
        for i in range(gpus)
    ]
    return dra.ResourceSlice(
        metadata=wire.ObjectMeta(name=f"{node}-gpus", uid=f"{node}-uid", resource_version="1"),
        spec=dra.ResourceSliceSpec(
            driver=DRIVER,
            pool=dra.ResourcePool(name=node, generation=1, resource_slice_count=1),
            node_name=node,
            devices=devices,
        ),
    )


def gpu_class() -> dra.DeviceClass:
    selector = dra.DeviceSelector(cel=dra.CELDeviceSelector(f'device.driver == "{DRIVER}"'))
    return dra.DeviceClass(
        metadata=wire.ObjectMeta(name="gpu"), spec=dra.DeviceClassSpec(selectors=[selector])
    )


def one_gpu(name: str, *selectors: str) -> dra.ResourceClaim:
    request = dra.ExactDeviceRequest(
        device_class_name="gpu",
        selectors=[dra.DeviceSelector(cel=dra.CELDeviceSelector(text)) for text in selectors],
    )
    return dra.ResourceClaim(
        metadata=dra.ClaimMeta(name=name, namespace="bench", uid=f"{name}-uid"),
        spec=dra.ResourceClaimSpec(
            devices=dra.DeviceClaim(requests=[dra.DeviceRequest(name="gpu", exactly=request)])
        ),
    )


def member(name: str) -> PodClaims:
    return PodClaims("bench", name, f"{name}-uid", (f"bench/{name}",))


def median_us(run: Callable[[], float], repeat: int) -> float:
    return statistics.median(run() for _ in range(repeat)) * 1e6


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--gang", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    gc.disable()
    print(f"core: {core()}")
    nodes = {f"n{i}": {} for i in range(args.nodes)}
    slices = [node_slice(node, args.gpus) for node in nodes]
    classes = [gpu_class()]
    claims = [one_gpu(f"c{i}") for i in range(args.nodes)]
    memo = SelectorMemo()

    def build() -> DeviceAllocator:
        return DeviceAllocator(classes, slices, claims, nodes, memo=memo)

    cold = timed(build)
    devices = build()
    first = timed(lambda: [devices.fits(member(f"c{i}"), f"n{i}", "g") for i in range(args.nodes)])
    warm = statistics.median(timed(build) for _ in range(5))
    print(
        f"{args.nodes} nodes x {args.gpus} GPUs: build {cold * 1e3:.1f} ms cold memo, "
        f"{warm * 1e3:.1f} ms warm; first fits on every node {first * 1e3:.1f} ms"
    )

    fresh = iter(range(10**9))
    quick = median_us(
        lambda: timed(lambda: devices.fits(member("c0"), "n0", f"g{next(fresh)}")), args.repeat
    )
    print(f"quick fits (one claim, one GPU): {quick:.1f} us")

    gang = [one_gpu(f"m{i}") for i in range(args.gang - 1)]
    last = one_gpu(f"m{args.gang - 1}", f"{INDEX} == 0")
    spare = one_gpu("spare")
    one_node = {"n0": {}}

    def place_gang() -> float:
        allocator = DeviceAllocator(classes, slices[:1], [*gang, last], one_node, memo=memo)
        start = time.perf_counter()
        for index in range(args.gang - 1):
            allocator.fits(member(f"m{index}"), "n0", "g")
            allocator.take(member(f"m{index}"), "n0", "g")
        allocator.fits(member(last.metadata.name), "n0", "g")
        allocator.take(member(last.metadata.name), "n0", "g")
        allocator.commit("g")
        return time.perf_counter() - start

    def resolve() -> float:
        allocator = DeviceAllocator(classes, slices[:1], [*gang, last], one_node, memo=memo)
        for index in range(args.gang - 1):
            allocator.take(member(f"m{index}"), "n0", "g")
        return timed(lambda: allocator.fits(member(last.metadata.name), "n0", "g"))

    def one_too_many() -> float:
        allocator = DeviceAllocator(
            classes, slices[:1], [*gang, one_gpu(last.metadata.name), spare], one_node, memo=memo
        )
        for index in range(args.gang):
            allocator.take(member(f"m{index}"), "n0", "g")
        return timed(lambda: allocator.fits(member("spare"), "n0", "g"))

    print(
        f"gang of {args.gang}, one GPU each, on one node (fits, take, commit): "
        f"{median_us(place_gang, args.repeat):.0f} us"
    )
    print(f"joint re-solve for its last member: {median_us(resolve, args.repeat):.0f} us")
    if args.gang >= args.gpus:
        print(f"a member too many on the full node: {median_us(one_too_many, args.repeat):.0f} us")


if __name__ == "__main__":
    main()
