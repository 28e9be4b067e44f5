"""Device selectors: Kubernetes' CEL on cel-python, each compiled once, bounded, memoised.

1. **Compile** (`SelectorMemo.selector`, once per text; selector.py): cel-python parses
   the expression, after syntax.py rewrites the three constructs it reads otherwise than
   cel-go (`cel.bind`, a method `.min()`, a three-argument `map`). The cost walk then
   refuses what kube-scheduler's environment would not compile or what muster does not
   implement, with a compile error naming it (errors.py): a function outside Kubernetes'
   library as library/ implements it, an undeclared variable, a field of `device` that
   does not exist. cel-python transpiles the tree into Python, with the library's
   functions and its overrides of `==`, `<` and `in`.
2. **Bound** (cost.py): cel-python has no runtime cost accounting, so the cost is bounded
   statically, as cel-go estimates it; a selector whose bound exceeds Kubernetes' limit of
   1,000,000 per evaluation, or iterates over a list whose size cannot be bounded, is
   refused at compile.
3. **Evaluate** (`Selector.matches`): with `device` as kube-scheduler builds it
   (device.py), true or false; a runtime error raises `SelectorError` with cel-go's words.
4. **Memoise** (`SelectorMemo`, memo.py): the answer of one selector for one device is
   kept per (slice, device) across sessions, a changed slice a new key.

These modules stay plain Python (scheduler/build.py does not compile them): their time is
cel-python's, and cel-python's transpiled code calls the library's functions by their
module and qualified names (`scheduler.dra.cel.library.strings.split`).
"""

from scheduler.dra.cel.device import device_value
from scheduler.dra.cel.errors import SelectorError
from scheduler.dra.cel.memo import SelectorMemo, SliceKey, slice_key
from scheduler.dra.cel.selector import Selector

__all__ = [
    "Selector",
    "SelectorError",
    "SelectorMemo",
    "SliceKey",
    "device_value",
    "slice_key",
]
