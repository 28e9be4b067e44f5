"""What kube-apiserver's CEL environment declares to a device selector, as cel-go's checker
reads it: the type names cel-go prints, the one variable (`device`) and its fields, every
function of the environment (cel-go's standard library and extensions, and Kubernetes'
libraries) by what it returns, the macros that bind a variable, and the library namespaces.

cel_selectors.py infers a selector's types from these declarations.
"""

from __future__ import annotations

# The type names cel-go prints.
BOOL, INT, UINT, DOUBLE, STRING, BYTES, NULL = (
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "null_type",
)
QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
DEVICE = "kubernetes.DRADevice"
# A type the checker cannot pin down (dyn, google.protobuf.Any): every use of it passes.
DYN = "dyn"
ANY = "google.protobuf.Any"
# The kinds of scalar `==` and `!=` compare: across two of them cel-go finds no overload.
SCALAR_FAMILIES = {
    BOOL: "bool",
    INT: "number",
    UINT: "number",
    DOUBLE: "number",
    STRING: "string",
    BYTES: "bytes",
}
# The one variable of the environment, and its fields with their types.
ROOT = "device"
DEVICE_FIELDS = {
    "driver": STRING,
    "attributes": f"map(string, map(string, {ANY}))",
    "capacity": f"map(string, map(string, {QUANTITY}))",
    "allowMultipleAllocations": BOOL,
}

# Every function the environment declares (cel-go's standard library and extensions, and
# Kubernetes' libraries), by what it returns when that is one type whatever the receiver.
RETURNS: dict[str, str] = {
    **dict.fromkeys(
        (
            "contains",
            "startsWith",
            "endsWith",
            "matches",
            "isGreaterThan",
            "isLessThan",
            "isQuantity",
            "isInteger",
            "isSemver",
            "isSorted",
            "isURL",
            "isIP",
            "isCIDR",
            "containsIP",
            "containsCIDR",
            "isLoopback",
            "isGlobalUnicast",
            "isLinkLocalMulticast",
            "isLinkLocalUnicast",
            "isUnspecified",
            "hasValue",
            "sets.contains",
            "sets.equivalent",
            "sets.intersects",
            "ip.isCanonical",
            "allowed",
            "errored",
        ),
        BOOL,
    ),
    **dict.fromkeys(
        (
            "size",
            "compareTo",
            "sign",
            "asInteger",
            "major",
            "minor",
            "patch",
            "indexOf",
            "lastIndexOf",
            "prefixLength",
            "family",
            "int",
            "getDate",
            "getDayOfMonth",
            "getDayOfWeek",
            "getDayOfYear",
            "getFullYear",
            "getHours",
            "getMilliseconds",
            "getMinutes",
            "getMonth",
            "getSeconds",
        ),
        INT,
    ),
    **dict.fromkeys(
        (
            "lowerAscii",
            "upperAscii",
            "replace",
            "substring",
            "trim",
            "join",
            "format",
            "charAt",
            "strings.quote",
            "find",
            "getScheme",
            "getHost",
            "getHostname",
            "getPort",
            "getEscapedPath",
            "string",
            "jsonpatch.escapeKey",
        ),
        STRING,
    ),
    "asApproximateFloat": DOUBLE,
    "double": DOUBLE,
    "uint": UINT,
    "bytes": BYTES,
    "bool": BOOL,
    "quantity": QUANTITY,
    "add": QUANTITY,
    "sub": QUANTITY,
    "semver": SEMVER,
    **dict.fromkeys(
        (
            "split",
            "findAll",
            "lists.range",
            "slice",
            "flatten",
            "distinct",
            "reverse",
            "sort",
            "sortBy",
            "first",
            "last",
            "sum",
            "min",
            "max",
            "getQuery",
            "type",
            "dyn",
            "duration",
            "timestamp",
            "url",
            "ip",
            "cidr",
            "masked",
            "optional.of",
            "optional.none",
            "optional.ofNonZeroValue",
            "value",
            "or",
            "orValue",
            "optMap",
            "optFlatMap",
            "format.named",
            "transformList",
            "transformMap",
            "transformMapEntry",
            "cel.bind",
            "map",
            "filter",
            "validate",
            "check",
            "path",
            "group",
            "name",
            "namespace",
            "resource",
            "subresource",
            "serviceAccount",
            "reason",
            "error",
            "labelSelector",
            "fieldSelector",
        ),
        DYN,
    ),
}
# Macros whose first argument names a variable the rest of the call may use, by what they
# return; a two-variable comprehension names two.
COMPREHENSIONS = {
    "all": BOOL,
    "exists": BOOL,
    "exists_one": BOOL,
    "existsOne": BOOL,
    "map": DYN,
    "filter": DYN,
    "transformList": DYN,
    "transformMap": DYN,
    "transformMapEntry": DYN,
    "sortBy": DYN,
}
# The named formats of Kubernetes' format library (`format.dns1123Label()`, ...).
FORMATS = (
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
)
# The library namespaces a call may be qualified with (`sets.contains`), unless a variable
# of that name hides one.
NAMESPACES = ("cel", "sets", "lists", "strings", "optional", "ip", "format", "jsonpatch")
