"""The Kubernetes CEL library a device selector may call, on cel-python's values: every
function by the name cel-python's transpiler looks up (`FUNCTIONS`), one module per family.

kube-scheduler evaluates selectors in Kubernetes' CEL environment: standard CEL with
heterogeneous equality and cross-type numeric comparisons, the Quantity and Semver types
(`quantity()`, `semver()` and their methods), the strings extension (version 2), the
regex, lists and sets libraries. cel-python implements standard CEL only, and compares as
Python does where CEL differs: `FUNCTIONS` supplies the rest, and overrides the equality,
ordering and `in` operators with CEL's rules (`1 == 1.0`, `"a" == 1` is false, `1 < 1.5`).

- values.py: runtime errors as values, the receivers of namespaced functions, kind tests
- equality.py: `==`, `!=`, the orderings, `in`; compareTo and its kin of Quantity and Semver
- operators.py: `!`, `/`, `%` and `size()` as cel-go answers them
- quantity.py, semver.py: Kubernetes' two types and their functions
- strings.py: the strings extension and the regex library; lists.py, sets.py: theirs

cel-python's transpiled code calls each function by its module and qualified name, read
attribute by attribute from `scheduler` (`scheduler.dra.cel.library.strings.split`): so a
function of `FUNCTIONS` is a module-level name of the module it was defined in, this
package binds its modules and never their functions (the function `quantity` would hide
the module `quantity` it is reached through), and these modules stay plain Python (not
compiled by mypyc; scheduler/build.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.dra.cel.library import (
    equality,
    lists,
    operators,
    quantity,
    semver,
    sets,
    strings,
)

# The operator overrides and library functions, by the name cel-python's transpiler looks
# up. `_k8s_min` is `min` renamed (dra/cel/syntax.py renames `.min()`), because cel-python
# takes a method named min for a macro.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_==_": equality.equal,
    "_!=_": equality.not_equal,
    "_<_": equality.less,
    "_<=_": equality.less_equal,
    "_>_": equality.greater,
    "_>=_": equality.greater_equal,
    "_in_": equality.member_of,
    "_/_": operators.divide,
    "_%_": operators.modulus,
    "!_": operators.logical_not,
    "size": operators.size,
    "quantity": quantity.quantity,
    "isQuantity": quantity.is_quantity,
    "sign": quantity.sign,
    "asApproximateFloat": quantity.as_approximate_float,
    "isInteger": quantity.is_integer,
    "asInteger": quantity.as_integer,
    "add": quantity.add,
    "sub": quantity.sub,
    "semver": semver.semver,
    "isSemver": semver.is_semver,
    "major": semver.major,
    "minor": semver.minor,
    "patch": semver.patch,
    "compareTo": equality.compare_to,
    "isLessThan": equality.is_less_than,
    "isGreaterThan": equality.is_greater_than,
    "charAt": strings.char_at,
    "indexOf": strings.index_of,
    "lastIndexOf": strings.last_index_of,
    "lowerAscii": strings.lower_ascii,
    "upperAscii": strings.upper_ascii,
    "replace": strings.replace,
    "split": strings.split,
    "substring": strings.substring,
    "trim": strings.trim,
    "join": strings.join,
    "quote": strings.quote,
    "find": strings.find,
    "findAll": strings.find_all,
    "contains": strings.contains,
    "isSorted": lists.is_sorted,
    "sum": lists.sum_of,
    "_k8s_min": lists.list_min,
    "max": lists.list_max,
    "range": lists.list_range,
    "slice": lists.list_slice,
    "flatten": lists.flatten,
    "distinct": lists.distinct,
    "reverse": lists.reverse,
    "sort": lists.sort,
    "equivalent": sets.equivalent,
    "intersects": sets.intersects,
}

# cel-python's own functions a selector may call, besides FUNCTIONS and the macros.
STANDARD_FUNCTIONS = frozenset(
    {
        "startsWith",
        "endsWith",
        "matches",
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "bytes",
        "type",
        "dyn",
        "has",
        "duration",
        "timestamp",
    }
)
