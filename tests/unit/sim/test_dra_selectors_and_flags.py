"""sim's DRA pieces with no server: device selectors compiled as kube-apiserver 1.36 compiles
them (each answer below checked against it), and the flags and pool fields of simulated GPUs
and the resourceclaim controller."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from muster_sim.cli import add_parser, config_from_args
from muster_sim.cluster.devices import DRIVER, resource_slice
from muster_sim.cluster.nodes import (
    DRA_GPUS_LABEL,
    DRA_MODEL_LABEL,
    NodePool,
    PoolError,
    load_pools,
    node_objects,
)
from muster_sim.validation.dra.cel_selectors import selector_errors

EXPECTING = (
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
    "STRING, BYTES, IDENTIFIER}"
)


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes["a"].b',
        'device.capacity["a"].b.isGreaterThan(quantity("1"))',
        'device.driver.startsWith("a")',
        "size(device.driver) > 1",
        "device.allowMultipleAllocations",
        '"a" in device.attributes',
        'device.attributes.exists(d, d == "a")',
        "has(device.attributes.a)",
        'semver("1.0.0").isGreaterThan(semver("0.1.0"))',
        'device.attributes["a"].v.isGreaterThan(semver("1.0.0"))',
        "cel.bind(x, 1, x == 1)",
        'int("3") == 3',
        'device.attributes["gpu.sim.muster.dev"].model == "h100" && '
        'device.capacity["gpu.sim.muster.dev"].memory.compareTo(quantity("40Gi")) >= 0',
    ],
)
def test_a_selector_kube_apiserver_compiles_compiles(expression: str) -> None:
    assert selector_errors(expression, "p") == []


@pytest.mark.parametrize(
    ("expression", "detail"),
    [
        ("1", "must evaluate to bool or the unknown type, not int"),
        ("1u", "must evaluate to bool or the unknown type, not uint"),
        ("1.5", "must evaluate to bool or the unknown type, not double"),
        ("null", "must evaluate to bool or the unknown type, not null_type"),
        ('b"x"', "must evaluate to bool or the unknown type, not bytes"),
        ("[1]", "must evaluate to bool or the unknown type, not list(int)"),
        ('{"a":1}', "must evaluate to bool or the unknown type, not map(string, int)"),
        ("device.driver.size()", "must evaluate to bool or the unknown type, not int"),
        ('device.driver + "x"', "must evaluate to bool or the unknown type, not string"),
        ('device.driver == "a" ? 1 : 2', "must evaluate to bool or the unknown type, not int"),
        (
            "foo == 1",
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container "
            "'')\n | foo == 1\n | ^",
        ),
        (
            '"x".foo()',
            "compilation failed: ERROR: <input>:1:8: undeclared reference to 'foo' (in container "
            "'')\n | \"x\".foo()\n | .......^",
        ),
        (
            "true && 1",
            "compilation failed: ERROR: <input>:1:9: expected type 'bool' but found 'int'\n"
            " | true && 1\n | ........^",
        ),
        (
            "device.nonexist",
            "compilation failed: ERROR: <input>:1:7: undefined field 'nonexist'\n"
            " | device.nonexist\n | ......^",
        ),
        (
            'device.driver == "a" && ',
            "compilation failed: ERROR: <input>:1:25: Syntax error: mismatched input '<EOF>' "
            f'expecting {EXPECTING}\n | device.driver == "a" && \n | {"." * 24}^',
        ),
        (
            "))",
            "compilation failed: ERROR: <input>:1:1: Syntax error: mismatched input ')' "
            f"expecting {EXPECTING}\n | ))\n | ^",
        ),
        (
            "",
            "compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' "
            f"expecting {EXPECTING}",
        ),
    ],
)
def test_a_selector_kube_apiserver_refuses_is_refused_in_its_words(
    expression: str, detail: str
) -> None:
    (error,) = selector_errors(expression, "p")
    assert error.field == "p"
    quoted = '"' + expression.replace('"', '\\"') + '"'
    assert error.message == f"Invalid value: {quoted}: {detail}"


def test_an_expression_over_10_kib_is_too_long_and_not_compiled() -> None:
    (error,) = selector_errors("x" * 10241, "p")
    assert error.message == "Too long: may not be more than 10240 bytes"


# -- flags and pools -------------------------------------------------------------------------


def sim_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["sim", *argv])


def test_simulated_gpus_are_off_and_the_claim_controller_on_by_default() -> None:
    config = config_from_args(sim_args())
    assert (config.dra_gpus, config.resource_claim_controller) == (0, True)
    assert (
        config_from_args(sim_args("--no-resource-claim-controller")).resource_claim_controller
        is False
    )


def test_gpu_flags_make_the_nodes_pool_publish_models_in_turn() -> None:
    config = config_from_args(
        sim_args("--nodes", "3", "--dra-gpus", "8", "--dra-gpu-models", "a100,h100")
    )
    nodes = node_objects(config.pools())
    labels = [n["metadata"]["labels"] for n in nodes]
    assert [(each[DRA_GPUS_LABEL], each[DRA_MODEL_LABEL]) for each in labels] == [
        ("8", "a100"),
        ("8", "h100"),
        ("8", "a100"),
    ]


@pytest.mark.parametrize(
    "argv",
    [["--dra-gpus", "-1"], ["--dra-gpus", "many"], ["--dra-gpu-models", ","]],
    ids=["negative", "not a number", "no model"],
)
def test_bad_gpu_flags_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        sim_args(*argv)


def test_a_pool_file_gives_a_pool_its_gpus(tmp_path: Path) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(
        "- {name: big, count: 1, draGpus: 4, draModels: [h200]}\n- {name: cpu, count: 1}\n"
    )
    big, cpu = load_pools(path)
    assert (big.dra_gpus, big.dra_models) == (4, ("h200",))
    assert cpu.dra_gpus == 0
    assert DRA_GPUS_LABEL not in node_objects([cpu])[0]["metadata"]["labels"]


def test_a_pool_with_no_model_is_refused() -> None:
    with pytest.raises(PoolError, match="draModels"):
        NodePool("p", 1, dra_gpus=1, dra_models=())


def test_a_node_s_slice_names_its_node_pool_and_devices() -> None:
    (node,) = node_objects([NodePool("p", 1, dra_gpus=2, dra_models=("l4",))])
    node["metadata"]["uid"] = "u"
    published = resource_slice(node)
    assert published["metadata"]["name"] == f"p-0000-{DRIVER}"
    assert published["spec"]["pool"]["name"] == "p-0000"
    assert [d["attributes"]["index"]["int"] for d in published["spec"]["devices"]] == [0, 1]
    # the same node and index always give the same uuid
    assert resource_slice(node) == published
