"""Device selectors on cel-python: the `device` variable kube-scheduler builds, Kubernetes'
CEL library, CEL's equality where Python's differs, what is refused at compile (and the
static cost bound), and the memo of answers across sessions."""

from __future__ import annotations

from typing import Any

import celpy
import msgspec
import pytest
from celpy.celparser import CELParser

import scheduler
from scheduler.api import dra
from scheduler.dra.cel import (
    Selector,
    SelectorError,
    SelectorMemo,
    device_value,
    library,
    slice_key,
)
from tests.unit.dra.devices import gpu, node_slice, version

DRIVER = "gpu.example.com"
A = f'device.attributes["{DRIVER}"]'


def a_device(**extra: Any) -> Any:
    spec = gpu(
        "gpu-0",
        capacity={"memory": "40Gi", "other.example.com/cores": "8"},
        qualified={"other.example.com/family": "ampere"},
        model="a100",
        index=3,
        nvlink=True,
        driverVersion=version("1.10.0-rc.1+build.7"),
        **extra,
    )
    return msgspec.json.decode(msgspec.json.encode(spec), type=dra.Device)


def evaluate(expression: str, **extra: Any) -> bool:
    return Selector(expression).matches(device_value(DRIVER, a_device(**extra)))


def error(expression: str) -> str:
    with pytest.raises(SelectorError) as caught:
        evaluate(expression)
    return str(caught.value)


@pytest.mark.parametrize(
    "expression",
    [
        f'device.driver == "{DRIVER}"',
        f'{A}.model == "a100"',
        'device.attributes["other.example.com"].family == "ampere"',
        f'"model" in {A}',
        f"{A}.nvlink",
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0',
        'device.capacity["other.example.com"].cores.isGreaterThan(quantity("7"))',
        "device.allowMultipleAllocations == false",
        'device.attributes["unknown.example.com"].size() == 0',
        '!("unknown.example.com" in device.attributes)',
        '!has(device.attributes["unknown.example.com"].model)',
        f"has({A}.model) && has({A}.index)",
    ],
)
def test_the_device_variable_is_built_as_kube_scheduler_builds_it(expression: str) -> None:
    assert evaluate(expression)


@pytest.mark.parametrize(
    "expression",
    [
        # CEL's equality: values of different types are unequal, numbers compare across
        # int and double, a list by its elements.
        f"{A}.model != 1",
        f"{A}.index == 3.0",
        f"{A}.index < 3.5 && {A}.index > 2u",
        f"[1, {A}.index] == [1, 3.0]",
        '"x" + "y" == "xy"',
        f'{A}.model in ["h100", 1, "a100"]',
        "true != 1",
        # Quantities compare by value; add and sub take a quantity or an int.
        'quantity("1") == quantity("1000m")',
        'quantity("1").add(1) == quantity("2")',
        'quantity("1Gi").sub(quantity("512Mi")).compareTo(quantity("512Mi")) == 0',
        'quantity("1.5").isInteger() == false && quantity("2k").asInteger() == 2000',
        'sign(quantity("-1")) == -1 && isQuantity("1e3") && !isQuantity("1 Gi")',
        'quantity("1.5").asApproximateFloat() == 1.5',
        # Semantic versions: a pre-release sorts first, build metadata is ignored.
        f'{A}.driverVersion.isLessThan(semver("1.10.0"))',
        f'{A}.driverVersion.isGreaterThan(semver("1.9.9"))',
        f'{A}.driverVersion == semver("1.10.0-rc.1")',
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))',
        'semver("1.0.0-alpha.beta").isGreaterThan(semver("1.0.0-alpha.1"))',
        'semver("1.0.0-2").isLessThan(semver("1.0.0-10"))',
        f"{A}.driverVersion.major() == 1 && {A}.driverVersion.minor() == 10",
        'isSemver("1.2.3") && !isSemver("v1.2.3") && isSemver("v1.2", true)',
        'semver("01.02.3", true) == semver("1.2.3")',
        # Strings (cel-go's extension, version 2) and regular expressions.
        f'{A}.model.charAt(1) == "1" && {A}.model.charAt(4) == ""',
        f'{A}.model.indexOf("0") == 2 && {A}.model.lastIndexOf("0") == 3',
        '"hello mellow".indexOf("ello", 2) == 7 && "hello mellow".lastIndexOf("ello", 6) == 1',
        '"TacoCat".lowerAscii() == "tacocat" && "TacoCat".upperAscii() == "TACOCAT"',
        '"hello hello".replace("he", "we", 1) == "wello hello"',
        '"a,b,c".split(",") == ["a", "b", "c"] && "a,b,c".split(",", 2) == ["a", "b,c"]',
        '"a,b".split(",", 0) == [] && "tacocat".substring(4) == "cat"',
        '"  x\\t".trim() == "x" && ["a", "b"].join("-") == "a-b" && [].join() == ""',
        'strings.quote("a\\"b") == "\\"a\\\\\\"b\\""',
        '"abc123def".find("[0-9]+") == "123" && "a1b22".findAll("[0-9]+") == ["1", "22"]',
        f'{A}.model.matches("^a[0-9]+$")',
        # Lists: Kubernetes' library and cel-go's extension (version 3), sets.
        "[1, 2, 3].isSorted() && ![2, 1].isSorted() && [1, 3].sum() == 4",
        "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
        "[1, 2, 2].indexOf(2) == 1 && [1, 2, 2].lastIndexOf(2) == 2",
        "lists.range(3) == [0, 1, 2] && [1, 2, 3].slice(1, 3) == [2, 3]",
        "[[1], [2, [3]]].flatten() == [1, 2, [3]] && [1, 2, 1].distinct() == [1, 2]",
        "[1, 2].reverse() == [2, 1] && [3, 1, 2].sort() == [1, 2, 3]",
        "sets.contains([1, 2, 3], [1, 3]) && sets.equivalent([1, 2], [2, 1, 1])",
        "sets.intersects([1, 2], [2, 3]) && !sets.intersects([1], [2])",
        # cel.bind, rewritten for cel-python.
        f'cel.bind(d, {A}, d.model == "a100" && d.index == 3)',
        "cel.bind(x, 1, cel.bind(y, x + 1, y == 2))",
        f'{A}.all(name, name.size() > 0) && {A}.exists_one(name, name == "model")',
        f'{A}.filter(name, name.startsWith("n")).size() == 1',
        # map with a filter, rewritten for cel-python (which would drop the transform).
        "[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]",
    ],
)
def test_kubernetes_cel_library_and_equality(expression: str) -> None:
    assert evaluate(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (f'{A}.missing == "x"', "no such key: missing"),
        ('device.attributes["unknown.example.com"].missing', "no such key: missing"),
        (f"{A}.model < 5", "no such overload"),
        (f"{A}.model", "CEL result of type string could not be converted to bool"),
        ('quantity("x") == quantity("1")', "quantities must match the regular expression"),
        ('quantity("1.5").asInteger() == 1', "cannot convert value to integer"),
        ('semver("v1.0.0") == semver("1.0.0")', "Invalid character(s) found in major number"),
        ('quantity("1") == semver("1.0.0")', "no such overload"),
        ('"abc".charAt(5) == ""', "index out of range: 5"),
        ("[].min() == 1", "min(list) argument must not be empty"),
        (f"{A}.index / 0 == 1", "division by zero"),
        (f"{A}.index % 0 == 1", "modulus by zero"),
    ],
)
def test_a_runtime_error_is_an_error_not_a_mismatch(expression: str, message: str) -> None:
    assert message in error(expression)


def test_an_attribute_muster_cannot_represent_fails_every_selector_on_the_device() -> None:
    with pytest.raises(SelectorError, match="attribute numbers: unsupported attribute value"):
        evaluate("true", numbers={"ints": [1, 2]})


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('device.nope == "x"', "undefined field 'nope'"),
        ("foo == 1", "undeclared reference to 'foo'"),
        (f"{A}.model.format([1]) == 1", "muster does not implement format()"),
        ('ip("10.0.0.1") == ip("10.0.0.1")', "muster does not implement ip()"),
        (f"{A}.all(k, v, true)", "muster does not implement two-variable comprehensions"),
        (f"{A}.existsOne(k, v, true)", "muster does not implement two-variable comprehensions"),
        (f'{A}.?model.orValue("") == ""', "muster does not implement optional field selection"),
        ('device.attributes[?"x.example.com"].size() == 0', "optional field selection"),
        ("optional.none().hasValue()", "muster does not implement optional values"),
        ("device.driver ==", "compilation failed"),
        (
            f"{A}.all(a, {A}.all(b, {A}.all(c, {A}.all(d, a == b))))",
            "too complex: muster's bound of its cost is",
        ),
        (
            f"lists.range({A}.index).all(i, true)",
            "iterates over a list whose size muster cannot bound",
        ),
    ],
)
def test_what_kube_scheduler_would_not_compile_or_muster_lacks_is_refused_at_compile(
    expression: str, message: str
) -> None:
    compiled = Selector(expression)
    assert compiled.compile_error is not None and message in compiled.compile_error


def test_selectors_compile_whatever_parser_cel_python_made_first() -> None:
    # cel-python keeps one parser per process, made with the tree class of the first
    # Environment (sim's interpreter uses plain lark trees).
    kept = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    try:
        celpy.Environment()
        assert Selector(f'{A}.model == "a100"').compile_error is None
    finally:
        CELParser.CEL_PARSER = kept


def test_the_cost_bound_grows_with_what_a_comprehension_iterates() -> None:
    flat = Selector(f'{A}.model == "a100"').cost
    once = Selector(f'{A}.exists(k, k == "model")').cost
    twice = Selector(f"{A}.exists(k, {A}.exists(j, k == j))").cost
    literal = Selector("lists.range(1000).exists(i, i == 1)").cost
    assert flat < once < twice < 1_000_000
    assert literal > 1000


def test_every_library_function_is_reachable_by_its_module_and_name() -> None:
    # cel-python's transpiled code calls a function as <module>.<qualified name>, read
    # attribute by attribute from the `scheduler` package (a function named as its module
    # and bound in the package would hide the module).
    for name, function in library.FUNCTIONS.items():
        owner: Any = __import__(function.__module__, fromlist=["_"])
        assert getattr(owner, function.__qualname__) is function, name
        reached: Any = scheduler
        for part in [*function.__module__.split(".")[1:], function.__qualname__]:
            reached = getattr(reached, part)
        assert reached is function, name


def test_the_memo_evaluates_each_selector_once_per_device_and_forgets_changed_slices() -> None:
    item = node_slice("n1", gpu("gpu-0", model="a100"), gpu("gpu-1", model="h100"))
    key = slice_key(item)
    memo = SelectorMemo()
    text = f'{A}.model == "h100"'
    answers = [
        memo.matches(text, key, index, DRIVER, device)
        for index, device in enumerate(item.spec.devices)
    ]
    again = [
        memo.matches(text, key, index, DRIVER, device)
        for index, device in enumerate(item.spec.devices)
    ]
    assert answers == again == [False, True]
    assert memo.evaluations == 2
    memo.keep_only([])
    memo.matches(text, key, 0, DRIVER, item.spec.devices[0])
    assert memo.evaluations == 3


def test_the_memo_keeps_a_runtime_error_as_an_answer() -> None:
    item = node_slice("n1", gpu("gpu-0"))
    memo = SelectorMemo()
    for _ in range(2):
        with pytest.raises(SelectorError, match="no such key: model"):
            memo.matches(f'{A}.model == "x"', slice_key(item), 0, DRIVER, item.spec.devices[0])
    assert memo.evaluations == 1


@pytest.mark.parametrize(
    ("expression", "reads_maps"),
    [
        (f'device.driver == "{DRIVER}"', False),
        ("device . driver.startsWith('gpu') && !device.allowMultipleAllocations", False),
        (f'{A}.model == "a100"', True),
        ('device.capacity["x"].memory.isGreaterThan(quantity("1Gi"))', True),
        ('device["driver"] == "x"', True),
        ("size(device) == 2", True),
        ("device.driverx == 1", True),
        ('"device" == "device"', True),
    ],
)
def test_a_selector_reads_the_maps_unless_it_reads_only_plain_fields(
    expression: str, reads_maps: bool
) -> None:
    # What reads `device` but through .driver or .allowMultipleAllocations counts, so that
    # nothing a selector could see is left out of the variable it is given.
    assert Selector(expression).reads_maps is reads_maps


def test_a_plain_field_selector_runs_once_per_driver_and_answers_as_on_the_whole_device() -> None:
    ours = node_slice("n1", gpu("gpu-0", model="a100"), gpu("gpu-1", model="h100"))
    theirs = node_slice("n2", gpu("nic-0"), driver="nic.example.com")
    memo = SelectorMemo()
    for text in (f'device.driver == "{DRIVER}"', "!device.allowMultipleAllocations"):
        for item in (ours, theirs):
            for index, device in enumerate(item.spec.devices):
                whole = Selector(text).matches(device_value(item.spec.driver, device))
                found = memo.matches(text, slice_key(item), index, item.spec.driver, device)
                assert found is whole, (text, item.spec.driver, index)
    # Two selectors, two drivers: four evaluations for six answers.
    assert memo.evaluations == 4


def test_an_unrepresentable_attribute_fails_a_plain_field_selector_on_that_device_only() -> None:
    item = node_slice(
        "n1", gpu("gpu-0", numbers={"ints": [1, 2]}), gpu("gpu-1", model="a100"), gpu("gpu-2")
    )
    memo = SelectorMemo()
    text = f'device.driver == "{DRIVER}"'
    key = slice_key(item)
    with pytest.raises(SelectorError, match="attribute numbers: unsupported attribute value"):
        memo.matches(text, key, 0, DRIVER, item.spec.devices[0])
    assert memo.matches(text, key, 1, DRIVER, item.spec.devices[1])
    assert memo.matches(text, key, 2, DRIVER, item.spec.devices[2])


def test_a_bad_version_attribute_fails_a_plain_field_selector_as_it_fails_any() -> None:
    item = node_slice("n1", gpu("gpu-0", firmware=version("not-a-version")))
    device = item.spec.devices[0]
    text = f'device.driver == "{DRIVER}"'
    with pytest.raises(SelectorError) as whole:
        Selector(text).matches(device_value(DRIVER, device))
    with pytest.raises(SelectorError) as found:
        SelectorMemo().matches(text, slice_key(item), 0, DRIVER, device)
    assert str(found.value) == str(whole.value)
    assert str(found.value).startswith("attribute firmware: parse semantic version")
