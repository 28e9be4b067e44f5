"""Device selectors answered as a real Kubernetes 1.36.2 control plane answers them.

How the expected answers were obtained: a kube-apiserver 1.36.2 with
kube-controller-manager and kube-scheduler 1.36.2 (default feature gates, so DRA's
"incubating" allocator), one Node, the ResourceSlice and DeviceClass built below. For
each selector, a ResourceClaim with one request for one device of the class and that
selector was created, then a pod using it (for a scheduler profile of its own, no
nodeName); the answer is the device in the claim's `status.allocation`, or the pod's
PodScheduled message: "cannot allocate all claims" (None below), or "CEL runtime error:
..." (an "error: " string), or the API server refused the claim at create ("refused").
Each claim was deleted before the next, so every answer starts from four free devices.
"""

from __future__ import annotations

import pytest

from scheduler.api import dra
from scheduler.dra import CANNOT_ALLOCATE, DeviceAllocator, Verdict
from tests.unit.dra.devices import claim, device_class, exactly, gpu, node_slice, pod, version

DRIVER = "gpu.dracore.example"
A = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'
V = 'device.attributes["vendor.example.com"]'
REFUSED = "refused"

# (expression, the server's answer): a device, None (no device), "error: ...", REFUSED.
SERVER = [
    (f'{A}.model == "h100"', "gpu-1"),
    (f"{A}.model == 1", None),
    (f'{C}.memory.compareTo(quantity("64Gi")) > 0', "gpu-1"),
    (f'{C}.memory.isLessThan(quantity("30Gi"))', "gpu-3"),
    (f'{C}.memory.isGreaterThan(quantity("40Gi")) && {A}.model == "a100"', "gpu-2"),
    (f'{A}.driverVersion.isGreaterThan(semver("1.9.0"))', "gpu-1"),
    (f'{A}.driverVersion == semver("1.2.3") && {A}.index > 0', "gpu-3"),
    (f"{A}.driverVersion.major() >= 2", "gpu-1"),
    (f'{A}.driverVersion.isLessThan(semver("1.3.0")) && {A}.index > 0', "gpu-3"),
    (
        f'{A}.driverVersion.isLessThan(semver("2.0.0")) && '
        f'{A}.driverVersion.isGreaterThan(semver("1.10.0"))',
        "gpu-1",
    ),
    (f'{V}.family == "hopper"', "gpu-1"),
    (f'{A}.family == "hopper"', "error: no such key: family"),
    (f'"family" in {V} && {A}.index > 0', "gpu-1"),
    ('device.attributes["unknown.example.com"].size() == 0', "gpu-0"),
    ('"unknown.example.com" in device.attributes', None),
    (f"!has({V}.family)", "gpu-2"),
    (f'{A}.nonexistent == "x"', "error: no such key: nonexistent"),
    (f'{A}.model.upperAscii() == "L4"', "gpu-3"),
    (f'{A}.model.startsWith("h")', "gpu-1"),
    (f'{A}.model.matches("^a[0-9]+$") && {A}.index > 0', "gpu-2"),
    (f'{A}.model.find("[0-9]+") == "4"', "gpu-3"),
    (f'{A}.model.substring(1) == "100" && {A}.model.charAt(0) == "h"', "gpu-1"),
    (f'cel.bind(g, {A}, g.model == "a100" && g.index == 2)', "gpu-2"),
    (f"[3, 1, 2].min() == {A}.index", "gpu-1"),
    (f'sets.contains(["l4", "h100"], [{A}.model])', "gpu-1"),
    (f"{A}.index > 1.5", "gpu-2"),
    (f"{A}.nvlink", "gpu-0"),
    (
        f"{A}.model",
        "error: CEL result of type string could not be converted to bool: unsupported "
        "native conversion from string to 'bool'",
    ),
    (f"{A}.model < 5", "error: no such overload"),
    (f"device.allowMultipleAllocations == false && {A}.index == 3", "gpu-3"),
    (
        'device.capacity["vendor.example.com"].cores.compareTo(quantity("100")) == 0 && '
        f"{A}.index == 2",
        "gpu-2",
    ),
    (f'quantity("1").add(1) == quantity("2") && {A}.index == 1', "gpu-1"),
    (f"lists.range(4).exists(i, i == {A}.index + 2)", "gpu-0"),
    (f'{A}.model.split("0").size() == 3 && {A}.index == 2', "gpu-2"),
    (f'isSemver("v1.2", true) && {A}.index == 3', "gpu-3"),
    (f'{A}.model.indexOf("1") == 1 && {A}.index > 0', "gpu-1"),
    (f'{A}.model.replace("100", "-x") == "h-x"', "gpu-1"),
    (f'{A}.driverVersion.compareTo(semver("1.2.3")) == 0 && {A}.index == 3', "gpu-3"),
    (f"{A}.index == 1.0", "gpu-1"),
    (f"[2, 3].indexOf({A}.index) == 0", "gpu-2"),
    (f'{C}.memory == quantity("80Gi")', "gpu-1"),
    (f'{A}.driverVersion == "2.0.0-rc.1"', "error: no such overload"),
    (f'has(device.attributes["unknown.example.com"].x) || {A}.index == 3', "gpu-3"),
    (f"!has({V}.family) && {A}.index == 3", "gpu-3"),
    (f'{A}.model.contains("4")', "gpu-3"),
    (f"{A}.index / 0 == 1", "error: division by zero"),
    (f"{C}.memory.asInteger() > 50000000000", "gpu-1"),
    (f'{A}.model + "x" == "l4x"', "gpu-3"),
    (f"int({A}.driverVersion.minor()) == 10", "gpu-2"),
    (f'{A}.model.lowerAscii().matches("^L")', None),
    # Three comprehensions deep over a domain's names: under the server's cost estimate.
    (f'{A}.all(k, {A}.all(l, {A}.all(m, k + l + m != "")))', "gpu-0"),
]

# Refused by the API server at create, so a scheduler never sees them; muster refuses
# them too (a field `device` does not have; a cost over the limit).
SERVER_REFUSES = [
    ('device.nope == "x"', "undefined field 'nope'"),
    (f"{A}.all(a, {A}.all(b, {A}.all(c, {A}.all(d, a == b))))", "too complex"),
]

# Refused by the API server at create, so no claim or class carries them, but evaluated
# by muster, which has no type checker and does not copy cel-go's cost estimate: a
# comparison of values whose types the checker knows differ, a Semver method given a
# string, a list-of-strings function whose element size cel-go cannot bound. muster's
# answer is pinned here so that a change of it is seen.
SERVER_REFUSES_MUSTER_EVALUATES = [
    ("device.driver == 1", None),
    ('1 == 1.0 && device.driver != ""', "gpu-0"),
    ('device.allowMultipleAllocations == "x"', None),
    ("device.driver < 1", "error: no such overload"),
    (f'{A}.driverVersion.isLessThan("1.0.0")', "error: no such overload"),
    (f'["a100", "l4"].indexOf({A}.model) == 1', "gpu-3"),
    (f'{A}.model.split("1").indexOf("h") == 0', "gpu-1"),
]

# Evaluated by the server, refused by muster by name: cel-python has neither
# two-variable comprehensions nor optional types, and muster lacks `format`.
MUSTER_LACKS = [
    (f'{A}.all(k, v, k != "x") && {A}.index == 1', "gpu-1"),
    (f'{A}.exists(k, v, k == "model" && v == "l4")', "gpu-3"),
    (f'{A}.?model.orValue("") == "l4"', "gpu-3"),
    ('device.attributes[?"vendor.example.com"].?family.orValue("none") == "none"', "gpu-2"),
    (f'{A}.model.format([]) == "h100"', "gpu-1"),
]


def probe_slice() -> dra.ResourceSlice:
    def device(
        name: str,
        model: str,
        memory: str,
        driver_version: str,
        index: int,
        family: str | None = None,
        nvlink: bool = False,
    ) -> dict[str, object]:
        qualified = {"vendor.example.com/family": family} if family else {}
        made = gpu(
            name,
            capacity={"memory": memory, "vendor.example.com/cores": "100"},
            qualified=qualified,
            model=model,
            driverVersion=version(driver_version),
            index=index,
            nvlink=nvlink,
        )
        return made

    return node_slice(
        "probe-node",
        device("gpu-0", "a100", "40Gi", "1.2.3", 0, "ampere", True),
        device("gpu-1", "h100", "80Gi", "2.0.0-rc.1", 1, "hopper"),
        device("gpu-2", "a100", "80Gi", "1.10.0", 2),
        device("gpu-3", "l4", "24Gi", "1.2.3+build.5", 3),
        driver=DRIVER,
        pool="probe-pool",
    )


def answer(expression: str) -> str | None:
    """muster's answer in the table's terms."""
    devices = DeviceAllocator(
        [device_class("probe-gpu", f'device.driver == "{DRIVER}"')],
        [probe_slice()],
        [claim("sel", exactly("probe-gpu", expression))],
        {"probe-node": {}},
    )
    fit = devices.fits(pod("sel", "sel"), "probe-node", "g")
    if fit.fits:
        devices.take(pod("sel", "sel"), "probe-node", "g")
        result = devices.commit("g")["ns/sel"]
        return result.devices.results[0].device
    if fit.verdict is Verdict.NODE and fit.reason == CANNOT_ALLOCATE:
        return None
    assert fit.verdict is Verdict.POD, fit
    _, _, runtime = fit.reason.partition("CEL runtime error: ")
    return f"error: {runtime}" if runtime else f"compile: {fit.reason}"


@pytest.mark.parametrize(("expression", "server"), SERVER, ids=[e for e, _ in SERVER])
def test_muster_answers_as_the_server_did(expression: str, server: str | None) -> None:
    assert answer(expression) == server


@pytest.mark.parametrize(("expression", "why"), SERVER_REFUSES)
def test_what_the_server_refuses_muster_refuses_at_compile(expression: str, why: str) -> None:
    found = answer(expression)
    assert found is not None and found.startswith("compile: ")
    assert why in found


@pytest.mark.parametrize(
    ("expression", "muster"),
    SERVER_REFUSES_MUSTER_EVALUATES,
    ids=[e for e, _ in SERVER_REFUSES_MUSTER_EVALUATES],
)
def test_what_only_the_servers_checker_refuses_muster_evaluates(
    expression: str, muster: str | None
) -> None:
    assert answer(expression) == muster


@pytest.mark.parametrize(("expression", "server"), MUSTER_LACKS)
def test_what_muster_lacks_is_refused_by_name_not_misread(expression: str, server: str) -> None:
    found = answer(expression)
    assert found is not None and found.startswith("compile: ") and "CEL compile error" in found
    assert "muster does not implement" in found
