"""Consumer policies with the official names: key-shared, dead-letter and batch-receive.

``ConsumerKeySharedPolicy`` validates sticky ranges as the Java client's
``KeySharedPolicySticky.validate`` does (inclusive ``(start, end)`` pairs within
``[0, 65535]``, start <= end, no overlap — shared endpoints overlap). The dead-letter policy
is stored and validated here (plus the extension ``retry_letter_topic``, which the official
Python class lacks); the client's redelivery glue in :mod:`.topic_consumer` uses it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .checks import check_type, check_type_or_none
from .enums import KeySharedMode

__all__ = ["ConsumerBatchReceivePolicy", "ConsumerDeadLetterPolicy", "ConsumerKeySharedPolicy"]

HASH_RANGE_MAX = 65535


def validate_sticky_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Check sticky hash ranges; returns them as a list of int pairs or raises ValueError."""
    if not ranges:
        raise ValueError("Ranges for KeyShared policy must not be empty.")
    out: list[tuple[int, int]] = []
    for item in ranges:
        if (
            not isinstance(item, tuple | list)
            or len(item) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)
        ):
            raise ValueError(f"a sticky range is a (start, end) pair of ints, not {item!r}")
        start, end = int(item[0]), int(item[1])
        if end < start:
            raise ValueError(f"Range end must >= range start: [{start}, {end}]")
        if start < 0 or end > HASH_RANGE_MAX:
            raise ValueError(
                f"Ranges must be [0, {HASH_RANGE_MAX}] but provided range is [{start}, {end}]"
            )
        out.append((start, end))
    for i, (s1, e1) in enumerate(out):
        for s2, e2 in out[i + 1 :]:
            if s1 <= e2 and s2 <= e1:
                raise ValueError(
                    f"Ranges for KeyShared policy with overlap between [{s1}, {e1}] "
                    f"and [{s2}, {e2}]"
                )
    return out


class ConsumerKeySharedPolicy:
    """Key_Shared options: auto-split (default) or sticky ranges, and out-of-order delivery."""

    def __init__(
        self,
        key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit,
        allow_out_of_order_delivery: bool = False,
        sticky_ranges: list[tuple[int, int]] | None = None,
    ) -> None:
        check_type(KeySharedMode, key_shared_mode, "key_shared_mode")
        check_type(bool, allow_out_of_order_delivery, "allow_out_of_order_delivery")
        if key_shared_mode == KeySharedMode.Sticky and sticky_ranges is None:
            raise ValueError(
                "When using key_shared_mode = KeySharedMode.Sticky you must also provide "
                "sticky_ranges"
            )
        self._mode = key_shared_mode
        self._allow_out_of_order = allow_out_of_order_delivery
        self._ranges = validate_sticky_ranges(sticky_ranges) if sticky_ranges is not None else []

    @property
    def key_shared_mode(self) -> KeySharedMode:
        return self._mode

    @property
    def allow_out_of_order_delivery(self) -> bool:
        return self._allow_out_of_order

    @property
    def sticky_ranges(self) -> list[tuple[int, int]]:
        return list(self._ranges)

    def policy(self) -> ConsumerKeySharedPolicy:
        return self

    def __repr__(self) -> str:
        return (
            f"ConsumerKeySharedPolicy(key_shared_mode={self._mode}, "
            f"allow_out_of_order_delivery={self._allow_out_of_order}, "
            f"sticky_ranges={self._ranges})"
        )


class ConsumerDeadLetterPolicy:
    """Dead-letter queue settings (``max_redeliver_count`` must be > 0).

    The positional arguments are the official ones. Extension (keyword-only):
    ``retry_letter_topic``, the topic ``Consumer.reconsume_later`` publishes to when the
    consumer subscribes with ``retry_enable=True`` (default ``<topic>-<subscription>-RETRY``).
    """

    def __init__(
        self,
        max_redeliver_count: int,
        dead_letter_topic: str | None = None,
        initial_subscription_name: str | None = None,
        *,
        retry_letter_topic: str | None = None,
    ) -> None:
        if (
            max_redeliver_count is None
            or not isinstance(max_redeliver_count, int)
            or max_redeliver_count < 1
        ):
            raise ValueError("max_redeliver_count must be greater than 0")
        check_type_or_none(str, dead_letter_topic, "dead_letter_topic")
        check_type_or_none(str, initial_subscription_name, "initial_subscription_name")
        check_type_or_none(str, retry_letter_topic, "retry_letter_topic")
        self._max = max_redeliver_count
        self._topic = dead_letter_topic or None
        self._initial = initial_subscription_name or None
        self._retry_topic = retry_letter_topic or None

    @property
    def dead_letter_topic(self) -> str | None:
        return self._topic

    @property
    def max_redeliver_count(self) -> int:
        return self._max

    @property
    def initial_subscription_name(self) -> str | None:
        return self._initial

    @property
    def retry_letter_topic(self) -> str | None:
        """Extension: the retry-letter topic (``None`` = the default name)."""
        return self._retry_topic

    def policy(self) -> ConsumerDeadLetterPolicy:
        return self

    def __repr__(self) -> str:
        return (
            f"ConsumerDeadLetterPolicy(max_redeliver_count={self._max}, "
            f"dead_letter_topic={self._topic!r}, "
            f"initial_subscription_name={self._initial!r}, "
            f"retry_letter_topic={self._retry_topic!r})"
        )


class ConsumerBatchReceivePolicy:
    """Limits of one ``batch_receive()``: messages, bytes, wait (<= 0 means no limit)."""

    def __init__(self, max_num_message: int = -1, max_num_bytes: int = 10 * 1024 * 1024,
                 timeout_ms: int = 100) -> None:
        for name, value in (("max_num_message", max_num_message),
                            ("max_num_bytes", max_num_bytes), ("timeout_ms", timeout_ms)):
            check_type(int, value, name)
        if max_num_message <= 0 and max_num_bytes <= 0 and timeout_ms <= 0:
            raise ValueError(
                "At least one of maxNumMessages, maxNumBytes and timeoutMs must be specified."
            )
        self.max_num_message = max_num_message
        self.max_num_bytes = max_num_bytes
        self.timeout_ms = timeout_ms

    def policy(self) -> ConsumerBatchReceivePolicy:
        return self
