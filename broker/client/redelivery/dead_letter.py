"""Dead-letter and retry-letter topics: names, the DLQ trigger and message properties.

Pulsar's client: a message received with ``redelivery_count >= max_redeliver_count`` is,
at its next redelivery, published to the dead-letter topic (key and properties kept, plus
``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID``) and acknowledged on the original topic; only
Shared and Key_Shared subscriptions do this. ``reconsume_later`` publishes to the retry
topic with ``RECONSUMETIMES`` (1, 2, …) and ``DELAY_TIME``, delivered after the delay; past
``max_redeliver_count`` it goes to the dead-letter topic instead.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRY_SUFFIX = "-RETRY"
DLQ_SUFFIX = "-DLQ"
MAX_RECONSUMETIMES = 16
REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
# Pulsar still writes this misspelt duplicate of ORIGIN_MESSAGE_ID, for old consumers.
ORIGIN_MESSAGE_ID_LEGACY = "ORIGIN_MESSAGE_IDY_TIME"
RECONSUMETIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """Where and when messages are given up on (resolved for one topic + subscription)."""

    max_redeliver_count: int
    dead_letter_topic: str
    retry_letter_topic: str
    initial_subscription_name: str | None = None

    @classmethod
    def resolve(
        cls,
        topic: str,
        subscription: str,
        max_redeliver_count: int,
        dead_letter_topic: str | None = None,
        retry_letter_topic: str | None = None,
        initial_subscription_name: str | None = None,
    ) -> DeadLetterPolicy:
        if not isinstance(max_redeliver_count, int) or max_redeliver_count < 1:
            raise ValueError("max_redeliver_count must be an int >= 1")
        return cls(
            max_redeliver_count,
            dead_letter_topic or f"{topic}-{subscription}{DLQ_SUFFIX}",
            retry_letter_topic or f"{topic}-{subscription}{RETRY_SUFFIX}",
            initial_subscription_name,
        )

    def dlq_producer_name(self, topic: str, subscription: str, consumer_name: str) -> str:
        return f"{topic}-{subscription}-{consumer_name}{DLQ_SUFFIX}"

    def should_dead_letter(self, redelivery_count: int) -> bool:
        """A message received with this count goes to the DLQ at its next redelivery."""
        return redelivery_count >= self.max_redeliver_count


def dead_letter_properties(
    properties: dict[str, str], real_topic: str, origin_message_id: str
) -> dict[str, str]:
    """The properties a message carries to the dead-letter topic."""
    out = dict(properties)
    out.setdefault(REAL_TOPIC, real_topic)
    out.setdefault(ORIGIN_MESSAGE_ID, origin_message_id)
    out.setdefault(ORIGIN_MESSAGE_ID_LEGACY, origin_message_id)
    return out


def retry_properties(
    properties: dict[str, str],
    real_topic: str,
    origin_message_id: str,
    delay_ms: int,
    custom: dict[str, str] | None = None,
) -> tuple[dict[str, str], int]:
    """The properties of a retried message and its reconsume count (1 the first time)."""
    out = dict(properties)
    if custom:
        out.update(custom)  # before the system properties, which custom ones cannot replace
    out.setdefault(REAL_TOPIC, real_topic)
    out.setdefault(ORIGIN_MESSAGE_ID, origin_message_id)
    out.setdefault(ORIGIN_MESSAGE_ID_LEGACY, origin_message_id)
    times = int(properties.get(RECONSUMETIMES, "0")) + 1
    out[RECONSUMETIMES] = str(times)
    out[DELAY_TIME] = str(max(0, delay_ms))
    return out, times
