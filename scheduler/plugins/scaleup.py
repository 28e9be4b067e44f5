"""scaleup: ask a cluster autoscaler for the nodes of a gang that fits nowhere, all at once.

Listing the plugin turns scale-up on (framework/scaleup.py says what muster then does):
for every queue, or for those `queues` names. Its arguments say which ProvisioningRequest
class to ask (`provisioningClassName`, cluster-autoscaler's best-effort-atomic by
default), the class's `parameters`, and how often and after how long a request that
ended is made again (`retryStrategy`, Kueue's names and defaults). A PodGroup annotated
`muster.dev/scale-up: "false"` is never asked for.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from scheduler.api.provisioning import BEST_EFFORT_ATOMIC
from scheduler.framework.arguments import Arguments
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugin import Plugin
from scheduler.framework.scaleup import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_MAX,
    DEFAULT_RETRY_LIMIT,
    RetryPolicy,
    ScaleUpPolicy,
)
from scheduler.framework.session import Session

# The upstream schema's rules for spec.provisioningClassName and spec.parameters.
_CLASS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MAX_CLASS_NAME = 253
_MAX_PARAMETERS = 100
_MAX_PARAMETER = 255


class RetryStrategy(Arguments):
    """Kueue's ProvisioningRequestConfig retryStrategy: `backoffLimitCount` retries after
    the first request, the first `backoffBaseSeconds` after it ended, each next twice as
    long, at most `backoffMaxSeconds`."""

    backoff_limit_count: int = Field(
        DEFAULT_RETRY_LIMIT, alias="backoffLimitCount", ge=0, strict=True
    )
    backoff_base_seconds: int = Field(
        int(DEFAULT_BACKOFF_BASE), alias="backoffBaseSeconds", ge=1, strict=True
    )
    backoff_max_seconds: int = Field(
        int(DEFAULT_BACKOFF_MAX), alias="backoffMaxSeconds", ge=1, strict=True
    )

    @model_validator(mode="after")
    def _max_not_below_base(self) -> RetryStrategy:
        if self.backoff_max_seconds < self.backoff_base_seconds:
            raise ValueError(
                f"backoffMaxSeconds ({self.backoff_max_seconds}) is below backoffBaseSeconds "
                f"({self.backoff_base_seconds}); make it at least as long"
            )
        return self


class ScaleUpArguments(Arguments):
    """scaleup's arguments."""

    provisioning_class_name: str = Field(BEST_EFFORT_ATOMIC, alias="provisioningClassName")
    parameters: dict[str, str] = Field(default_factory=dict)
    # The queues whose gangs are asked for; absent: every queue.
    queues: list[str] | None = None
    retry_strategy: RetryStrategy = Field(
        default_factory=lambda: RetryStrategy.model_validate({}), alias="retryStrategy"
    )

    @field_validator("provisioning_class_name")
    @classmethod
    def _class_name(cls, value: str) -> str:
        if len(value) > _MAX_CLASS_NAME or not _CLASS_NAME.match(value):
            raise ValueError(
                f"is not a class name (a DNS subdomain of at most {_MAX_CLASS_NAME} "
                f"characters), e.g. {BEST_EFFORT_ATOMIC}"
            )
        return value

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > _MAX_PARAMETERS:
            raise ValueError(f"has {len(value)} entries; a ProvisioningRequest takes at most 100")
        for key, text in value.items():
            if len(text) > _MAX_PARAMETER:
                raise ValueError(
                    f"{key} is {len(text)} characters long; a ProvisioningRequest parameter is "
                    f"at most {_MAX_PARAMETER}"
                )
        return value

    @field_validator("queues")
    @classmethod
    def _queues(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or any(not name for name in value)):
            raise ValueError("names no queue; leave it out for every queue")
        return value

    def policy(self) -> ScaleUpPolicy:
        """The policy sessions apply."""
        retry = self.retry_strategy
        return ScaleUpPolicy(
            class_name=self.provisioning_class_name,
            parameters=tuple(sorted(self.parameters.items())),
            retry=RetryPolicy(
                retry.backoff_limit_count,
                float(retry.backoff_base_seconds),
                float(retry.backoff_max_seconds),
            ),
            queues=frozenset(self.queues) if self.queues is not None else None,
        )


class ScaleUpPlugin(Plugin[ScaleUpArguments]):
    """Turns scale-up on for the session, with its arguments' policy."""

    name = "scaleup"

    def on_session_open(self, session: Session, state: CycleState) -> None:
        state.scale_up.policy = self.arguments.policy()
