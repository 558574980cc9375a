"""A subscription's topic pattern matched in bounded time (Pulsar's ``TopicsPattern``).

GET_TOPICS_OF_NAMESPACE may carry ``topics_pattern``, the regex of a pattern (multi-topic)
subscription; the broker answers with the namespace's topics it matches. Pulsar 4.1+
evaluates it with RE2J (``topicsPatternRegexImplementation``, RE2J first) so that no
pattern can make matching backtrack; here Google's RE2 does the same: matching is linear in
the topic name, whatever the pattern, so ``(a+)+b`` against a long name costs microseconds
on the broker thread instead of minutes.

As in Pulsar's ``TopicList.removeTopicDomainScheme``, the ``persistent://`` (or
``non-persistent://``) prefix is cut from the pattern and from each name before matching,
and a name must match the whole pattern. A pattern longer than
``subscription_pattern_max_length`` (Pulsar's ``subscriptionPatternMaxLength``, 50) is not
evaluated by the broker: the whole list goes back unfiltered and the client filters it, as
Pulsar does. A pattern RE2 cannot run (back-references, look-around, a program over
:data:`MAX_PROGRAM_MEMORY`) is refused with a one-line :class:`InvalidArgument` instead of
falling back to a backtracking engine on the broker thread.
"""

from __future__ import annotations

from collections.abc import Iterable

import re2

from .errors import InvalidArgument

__all__ = ["MAX_PROGRAM_MEMORY", "TopicsPattern", "remove_domain"]

# RE2's budget for one compiled pattern (its max_mem option; RE2's own default is 8 MiB).
MAX_PROGRAM_MEMORY = 8 << 20


def remove_domain(name: str) -> str:
    """``persistent://t/ns/x`` → ``t/ns/x``; a text without a scheme is returned as is."""
    return name.split("://", 1)[1] if "://" in name else name


class TopicsPattern:
    """A compiled topic pattern; :meth:`matches` takes a name without its domain."""

    def __init__(self, regex: str) -> None:
        self.regex = regex
        options = re2.Options()
        options.max_mem = MAX_PROGRAM_MEMORY
        options.log_errors = False  # a bad pattern is the client's error, not a log line
        try:
            self._compiled = re2.compile(remove_domain(regex), options)
        except re2.error as exc:
            raise InvalidArgument(
                f"topics_pattern {_shorten(regex)!r} cannot be used: {_reason(exc)} "
                "(patterns are matched with RE2: no back-references or look-around)"
            ) from None

    def matches(self, name_without_domain: str) -> bool:
        return self._compiled.fullmatch(name_without_domain) is not None

    def filter(self, names: Iterable[str]) -> list[str]:
        """The ``names`` (full topic names) whose domain-less form matches."""
        return [name for name in names if self.matches(remove_domain(name))]


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
