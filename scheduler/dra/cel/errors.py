"""What a selector's author reads when muster does not answer true or false: SelectorError,
and the constructs of Kubernetes' CEL environment muster does not implement, refused by
name at compile so that a selector is never read as something it does not say."""

from __future__ import annotations


class SelectorError(Exception):
    """A selector that cannot be compiled, or an evaluation that failed: the message is
    what follows kube-scheduler's "CEL compile error: " or "CEL runtime error: "."""


# What Kubernetes' CEL environment offers a selector and muster does not implement: refused
# at compile with these words, so a selector is never read as something it does not say.
NOT_IMPLEMENTED = "muster does not implement"
_OPTIONAL_FUNCTIONS = frozenset({"hasValue", "orValue", "optMap", "optFlatMap"})
_TWO_VARIABLE_MACROS = frozenset(
    {"existsOne", "transformList", "transformMap", "transformMapEntry"}
)
_LIBRARY_NOT_IMPLEMENTED = frozenset(
    {
        # strings extension
        "format",
        # URLs, IP addresses and CIDRs
        "url",
        "isURL",
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
        "getQuery",
        "ip",
        "isIP",
        "cidr",
        "isCIDR",
        "containsIP",
        "containsCIDR",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
        "masked",
        "prefixLength",
        "isCanonical",
        # lists extension
        "sortBy",
        # list-type attributes (DRAListTypeAttributes, alpha)
        "includes",
    }
)


def refuse_unimplemented(function: str) -> None:
    """Refuse, by name, a function of Kubernetes' environment that muster lacks."""
    if function in _TWO_VARIABLE_MACROS:
        raise SelectorError(
            f"compilation failed: {NOT_IMPLEMENTED} two-variable comprehensions ({function}())"
        )
    if function in _OPTIONAL_FUNCTIONS:
        raise SelectorError(f"compilation failed: {NOT_IMPLEMENTED} optional values ({function}())")
    if function in _LIBRARY_NOT_IMPLEMENTED:
        raise SelectorError(
            f"compilation failed: {NOT_IMPLEMENTED} {function}() of Kubernetes' CEL library"
        )
