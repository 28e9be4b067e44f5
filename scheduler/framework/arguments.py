"""Typed arguments of plugins and actions: pydantic models parsed once, when the config loads.

A plugin or action class declares its model as its type parameter, next to its name
(`class BinpackPlugin(Plugin[BinpackArguments])`, like kube-scheduler's typed plugin
args); `Configurable` reads it from there into `arguments_model`. `parse_arguments` turns
the YAML mapping into that model or raises a ConfigError naming the plugin (or action),
the argument, the value and the fix; a session only ever sees parsed values, so no
argument can fail a scheduling cycle.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from scheduler.api.durations import InvalidDuration, parse_duration
from scheduler.api.errors import ConfigError


class Arguments(BaseModel):
    """Base of every argument model: unknown keys are refused, values are immutable.

    `removed` names arguments Volcano used to read (a key, or a prefix ending in ".")
    with what to do instead: refused by name when the config loads. `load_notes` says
    what an accepted argument changes nothing about, for the log when the config loads."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    removed: ClassVar[dict[str, str]] = {}

    def load_notes(self) -> list[str]:
        """What the config's values of these arguments change nothing about ([] when all
        do something)."""
        return []


class NoArguments(Arguments):
    """For plugins and actions that take no arguments."""


def _number(value: Any) -> Any:
    # YAML gives numbers as numbers or strings ("2"); a bool is a mistake, not 1 or 0.
    if isinstance(value, bool):
        raise ValueError("is a boolean, not a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError("is not a number") from None
    if isinstance(value, int | float):
        if not math.isfinite(float(value)):
            raise ValueError("is not a finite number")
        return value
    raise ValueError("is not a number")


def _integer(value: Any) -> Any:
    number = _number(value)
    if float(number) != int(number):
        raise ValueError("is not a whole number")
    return int(number)


def _duration(value: Any) -> Any:
    # Volcano writes durations as Go's ("90s", "1m30s"); a plain number is seconds.
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except InvalidDuration as error:
            raise ValueError(f"is not a duration: {error}") from None
    return _number(value)


def _names(value: Any) -> Any:
    # Volcano writes lists of resources as one comma-separated string.
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item.strip() for item in value if item.strip()]
    raise ValueError('is not a list of names; use e.g. "nvidia.com/gpu, example.com/foo"')


def gather_prefixed(values: Any, prefix: str, field: str) -> Any:
    """Volcano names some arguments by a key's suffix (`binpack.resources.nvidia.com/gpu`):
    the keys under `prefix` gathered into one mapping under `field`, the others kept."""
    if not isinstance(values, dict):
        return values
    gathered = {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}
    rest = {k: v for k, v in values.items() if not k.startswith(prefix)}
    if gathered:
        rest[field] = gathered
    return rest


# A weight: a finite number of 0 or more (as a number or a numeric string).
Weight = Annotated[float, BeforeValidator(_number), Field(ge=0, allow_inf_nan=False)]
# A factor of 1 or more (Volcano's overcommit-factor).
Factor = Annotated[float, BeforeValidator(_number), Field(ge=1.0, allow_inf_nan=False)]
# Seconds: a finite number of 0 or more.
Seconds = Annotated[float, BeforeValidator(_number), Field(ge=0, allow_inf_nan=False)]
# A duration in seconds: a Go duration ("90s", "10m") or a number of seconds, 0 or more.
Duration = Annotated[float, BeforeValidator(_duration), Field(ge=0, allow_inf_nan=False)]
# A whole number (as a number or a numeric string).
Count = Annotated[int, BeforeValidator(_integer)]
# Names (resource names) as a comma-separated string or a list of strings.
Names = Annotated[list[str], BeforeValidator(_names)]

A = TypeVar("A", bound=Arguments)


class Configurable(Generic[A]):
    """Base of plugins and actions: the class names its arguments model as its type
    parameter, and each instance holds its arguments parsed into that model."""

    # "plugin" or "action": how messages name the class's kind.
    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    # Read from the type parameter when the class is defined; the config parses into it.
    arguments_model: ClassVar[type[Arguments]] = NoArguments

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        model = _declared_model(cls)
        if model is not None:
            cls.arguments_model = model

    def __init__(self, arguments: A | Mapping[str, Any] | None = None) -> None:
        # The session passes the model parsed when the config loaded; a mapping (tests,
        # tools) is parsed here, with the same errors.
        if isinstance(arguments, Arguments):
            if not isinstance(arguments, self.arguments_model):
                raise TypeError(
                    f"{self.kind} {self.name} takes {self.arguments_model.__name__}, "
                    f"not {type(arguments).__name__}; pass its own arguments model"
                )
            self.arguments: A = arguments
        else:
            parsed = parse_arguments(self.kind, self.name, self.arguments_model, arguments)
            self.arguments = cast(A, parsed)


def _declared_model(cls: type) -> type[Arguments] | None:
    """The arguments model a class names as the type parameter of its base, if any."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = typing.get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, Configurable)):
            continue
        for parameter in typing.get_args(base):
            if isinstance(parameter, type) and issubclass(parameter, Arguments):
                return parameter
    return None


def parse_arguments(kind: str, name: str, model: type[A], raw: Mapping[str, Any] | None) -> A:
    """The model from a YAML mapping; ConfigError naming kind, name, argument and value."""
    values = dict(raw or {})
    gone = [
        f"argument {key}={value!r} {why}"
        for key, value in values.items()
        for old, why in model.removed.items()
        if key == old or (old.endswith(".") and key.startswith(old))
    ]
    if gone:
        raise ConfigError(f"scheduler config: {kind} {name}: {'; '.join(gone)}")
    try:
        return model.model_validate(values)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            # A field that gathers keys by prefix ("binpack.resources.*") reports the key.
            key = ".".join(str(part) for part in item["loc"]).replace(".*.", ".") or "arguments"
            if item["type"] == "extra_forbidden":
                known = ", ".join(_known_keys(model)) or "none"
                problems.append(
                    f"argument {key}={item['input']!r} is not an argument of {kind} {name}; "
                    f"known arguments: {known}"
                )
                continue
            value = values.get(key, item.get("input"))
            problems.append(f"argument {key}={value!r} {_describe(item['msg'])}")
        raise ConfigError(f"scheduler config: {kind} {name}: {'; '.join(problems)}") from None


def _known_keys(model: type[Arguments]) -> list[str]:
    return sorted(info.alias or field for field, info in model.model_fields.items())


def _describe(message: str) -> str:
    # pydantic says "Value error, is not a number"; users read "is not a number".
    message = message.removeprefix("Value error, ")
    if message.startswith("is "):
        return message
    return ": " + message[:1].lower() + message[1:]
