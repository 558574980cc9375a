"""Why is my consumer not getting messages? Plain answers read off a subscription's stats.

:func:`diagnose` is a pure function over the admin API's JSON: a topic's ``stats``
(``TopicStatsImpl`` with its ``SubscriptionStatsImpl`` and ``ConsumerStatsImpl``), and
optionally its ``internalStats`` (the cursor's mark-delete position, the ledger's state) and
its namespace ``policies``. It reads the field names of Pulsar 3.3 and 4.0 alike, so it works
on a pulsarlab broker and on stats recorded from a real cluster. On a pulsarlab broker it may
also be given the core's exact state (:func:`exact_state`: which consumer holds which
message unacked), and then names the holders of the oldest messages exactly.

Each :class:`Finding` is a few sentences with the numbers and the tutorial that explains the
rule; :class:`Diagnosis` says which source it used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["TUTORIALS", "Diagnosis", "Finding", "diagnose", "exact_state"]

# Which tutorial explains the rule behind each finding.
TUTORIALS = {
    "no-subscription": "notebooks/07-acks-and-cursors.ipynb",
    "no-consumer": "notebooks/02-subscription-types.ipynb",
    "terminated": "notebooks/13-operations-stats.ipynb",
    "receiver-queue-full": "notebooks/08-redelivery.ipynb",
    "consumer-unacked-limit": "notebooks/15-unacked-limits.ipynb",
    "subscription-unacked-limit": "notebooks/15-unacked-limits.ipynb",
    "recently-joined": "notebooks/05-key-shared-ordering.ipynb",
    "draining-hashes": "notebooks/16-key-shared-3.3-vs-4.0.ipynb",
    "failover-standby": "notebooks/06-failover.ipynb",
    "no-consumer-for-range": "notebooks/03-key-shared-hash-ranges.ipynb",
    "ttl-expiry": "notebooks/10-delayed-ttl-retention-dedup.ipynb",
    "backlog-quota": "notebooks/13-operations-stats.ipynb",
    "delayed-delivery": "notebooks/10-delayed-ttl-retention-dedup.ipynb",
    "nothing-blocking": "notebooks/13-operations-stats.ipynb",
}

HASH_RANGE_SIZE = 65536  # Key_Shared sticky key hashes are 0..65535
_RANGE = re.compile(r"\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]")


@dataclass(frozen=True)
class Finding:
    """One reason messages do not flow, in plain words with the numbers."""

    code: str
    text: str
    consumer: str | None = None

    @property
    def tutorial(self) -> str:
        return TUTORIALS[self.code]


@dataclass
class Diagnosis:
    """What :func:`diagnose` found for one subscription, and from which source."""

    topic: str
    subscription: str
    source: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def lines(self) -> list[str]:
        head = f"why {self.subscription} on {self.topic} (from {self.source}):"
        body = [f"- {f.text} (see {f.tutorial})" for f in self.findings]
        return [head, *body]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_markdown_(self) -> str:
        head = (f"**why `{self.subscription}` on `{self.topic}`** "
                f"<small>(from {self.source})</small>")
        body = [f"- {f.text} — [{f.tutorial.rsplit('/', 1)[-1]}]({f.tutorial})"
                for f in self.findings]
        return "\n".join([head, "", *body])


# -- helpers --------------------------------------------------------------------------------

def _position(text: Any) -> tuple[int, int] | None:
    """``"12:41"`` (Pulsar's ``ledgerId:entryId``) as a tuple, or None."""
    if not isinstance(text, str):
        return None
    ledger, sep, entry = text.partition(":")
    try:
        return (int(ledger), int(entry)) if sep else None
    except ValueError:
        return None


def _ranges(consumer: Mapping[str, Any]) -> list[tuple[int, int]]:
    """A consumer's hash ranges: 4.0 ``keyHashRangeArrays`` or 3.3 ``keyHashRanges``."""
    arrays = consumer.get("keyHashRangeArrays")
    if arrays:
        return [(int(s), int(e)) for s, e in arrays]
    out = []
    for text in consumer.get("keyHashRanges") or ():
        match = _RANGE.search(str(text))
        if match:
            out.append((int(match.group(1)), int(match.group(2))))
    return out


def _gaps(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The hashes in 0..65535 that no range covers, as inclusive ranges."""
    gaps, start = [], 0
    for lo, hi in sorted(ranges):
        if lo > start:
            gaps.append((start, lo - 1))
        start = max(start, hi + 1)
    if start < HASH_RANGE_SIZE:
        gaps.append((start, HASH_RANGE_SIZE - 1))
    return gaps


def _owner(consumers: list[Mapping[str, Any]], sticky_key_hash: int) -> str | None:
    for c in consumers:
        if any(lo <= sticky_key_hash <= hi for lo, hi in _ranges(c)):
            return c.get("consumerName")
    return None


def _when(ms: Any) -> str:
    if not isinstance(ms, int | float) or ms <= 0:
        return "never"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}" + ("es" if word.endswith(("h", "s")) else "s")


def _names(names: Iterable[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# -- the core's exact state (pulsarlab only) -------------------------------------------------

def exact_state(service: Any, topic: str, subscription: str) -> dict[str, Any]:
    """Which consumer holds which message unacked, read from a pulsarlab ``BrokerService``
    (run it on the broker thread: ``broker.call(lambda s: exact_state(s, topic, sub))``)."""
    sub = service.get_topic(topic, create=False).subscriptions.get(subscription)
    if sub is None:
        return {"pendingAcks": {}}
    return {
        "pendingAcks": {
            c.consumer_name: [f"{p[0]}:{p[1]}" for p in sorted(c.pending_acks)]
            for c in sub.consumers
        }
    }


# -- the checks ----------------------------------------------------------------------------

def diagnose(
    stats: Mapping[str, Any],
    subscription: str,
    *,
    consumer: str | None = None,
    internal_stats: Mapping[str, Any] | None = None,
    policies: Mapping[str, Any] | None = None,
    core: Mapping[str, Any] | None = None,
    topic: str = "the topic",
) -> Diagnosis:
    """Explain why ``subscription`` (or one ``consumer`` of it) gets no messages.

    ``stats``/``internal_stats`` are the admin API's JSON for one topic (or partition);
    ``policies`` its namespace policies; ``core`` what :func:`exact_state` returns."""
    sources = ["stats"] + (["internal stats"] if internal_stats else []) + (
        ["namespace policies"] if policies is not None else [])
    if core is not None:
        sources.append("the pulsarlab core's exact state")
    diag = Diagnosis(topic, subscription, " + ".join(sources))
    found = diag.findings
    subs = stats.get("subscriptions") or {}
    if subscription not in subs:
        known = ", ".join(sorted(subs)) or "none"
        found.append(Finding("no-subscription", (
            f"{topic} has no subscription {subscription!r} (it has: {known}); a consumer "
            "that subscribes creates it, at the latest message unless told earliest")))
        return diag
    sub = subs[subscription]
    consumers = list(sub.get("consumers") or [])
    if consumer is not None and not any(c.get("consumerName") == consumer for c in consumers):
        names = ", ".join(c.get("consumerName") or "?" for c in consumers) or "none"
        raise ValueError(f"subscription {subscription!r} has no consumer {consumer!r} "
                         f"(connected: {names})")
    backlog = int(sub.get("msgBacklog") or 0)
    cursor = ((internal_stats or {}).get("cursors") or {}).get(subscription) or {}

    _terminated(found, internal_stats, backlog, topic)
    if not consumers:
        found.append(Finding("no-consumer", (
            f"no consumer is connected to {subscription}: {_plural(backlog, 'message')} "
            "wait in its backlog until one subscribes")))
    for c in consumers:
        if consumer is None or c.get("consumerName") == consumer:
            _consumer_checks(found, sub, c, backlog)
    _recently_joined(found, sub, consumers, cursor, core, consumer)
    _draining(found, consumers, consumer)
    _subscription_checks(found, sub, consumers, backlog)
    _policy_checks(found, stats, sub, policies)
    if not found:
        rate = float(sub.get("msgRateOut") or 0.0)
        permits = sum(int(c.get("availablePermits") or 0) for c in consumers)
        found.append(Finding("nothing-blocking", (
            f"nothing blocks {subscription}: backlog {backlog}, "
            f"{_plural(permits, 'permit')} available, {rate:.1f} msg/s out; if the "
            "application still sees nothing, check that it calls receive() on this "
            "subscription and topic")))
    return diag


def _terminated(found: list[Finding], internal: Mapping[str, Any] | None, backlog: int,
                topic: str) -> None:
    if not internal or internal.get("state") != "Terminated":
        return
    last = internal.get("lastConfirmedEntry", "?")
    rest = (f"the {_plural(backlog, 'message')} still in the backlog can be consumed, then "
            "consumers are told they reached the end of the topic") if backlog else (
        "every message was consumed: consumers have reached the end of the topic")
    found.append(Finding("terminated", (
        f"{topic} was terminated at {last}: producers can no longer publish to it, so no new "
        f"message will arrive; {rest}")))


def _consumer_checks(found: list[Finding], sub: Mapping[str, Any], c: Mapping[str, Any],
                     backlog: int) -> None:
    name = c.get("consumerName")
    unacked = int(c.get("unackedMessages") or 0)
    permits = int(c.get("availablePermits") or 0)
    kind = sub.get("type")
    active = sub.get("activeConsumerName")
    if kind in ("Failover", "Exclusive") and active and name != active:
        found.append(Finding("failover-standby", (
            f"{name} is a standby of this Failover subscription: the active consumer is "
            f"{active}, which gets every message; {name} gets messages only once {active} "
            "leaves (on a partitioned topic it may be active on other partitions)"), name))
        return
    if c.get("blockedConsumerOnUnackedMsgs"):
        found.append(Finding("consumer-unacked-limit", (
            f"{name} holds {_plural(unacked, 'unacked message')} and reached the broker's "
            "maxUnackedMessagesPerConsumer limit: it is sent nothing more until it acks; "
            f"dispatch resumes once its unacked count falls to half the limit ({permits} "
            "permits are waiting)"), name))
        return
    if permits <= 0 and backlog > unacked:
        found.append(Finding("receiver-queue-full", (
            f"{name} has 0 available permits: its receiver queue is full, so the "
            "application is not calling receive() (or is slow to); the broker sends it "
            f"nothing until it does ({_plural(unacked, 'message')} delivered and unacked, "
            f"backlog {backlog})"), name))


def _recently_joined(found: list[Finding], sub: Mapping[str, Any],
                     consumers: list[Mapping[str, Any]], cursor: Mapping[str, Any],
                     core: Mapping[str, Any] | None, only: str | None) -> None:
    """Pulsar 3.3 Key_Shared: a consumer that joined is sent only messages before its join
    position until the mark-delete position reaches it."""
    joined = sub.get("consumersAfterMarkDeletePosition") or {}
    if not joined:
        return
    mark = _position(cursor.get("markDeletePosition"))
    pending = (core or {}).get("pendingAcks") or {}
    for name, where in joined.items():
        join = _position(where)
        if join is None or (mark is not None and mark >= join):
            continue
        if pending:
            # The consumer that holds the oldest unacked message (after the mark-delete).
            first = min(((_position(p), holder) for holder, ps in pending.items() for p in ps
                         if _position(p) is not None), default=None)
            holders = {h for h, ps in pending.items()
                       if any(join > _position(p) for p in ps)} - {name}
            blame = ""
            if first is not None:
                blame = (f"; the oldest unacked message, {first[0][0]}:{first[0][1]}, "
                         f"is held by {first[1]}")
            others = holders - {first[1]} if first is not None else holders
            if others:
                blame += f"; {_names(sorted(others))} also hold messages before {where}"
        else:
            unacked = {c.get("consumerName"): int(c.get("unackedMessages") or 0)
                       for c in consumers}
            holders = {n for n, u in unacked.items() if u > 0 and n not in joined}
            held = _names([f"{h} ({unacked[h]} unacked)" for h in sorted(holders)])
            blame = (f"; it moves when {held} acknowledge the older messages they hold"
                     if holders else "; it moves when the older messages are acknowledged")
        if only is not None and only != name and only not in holders:
            continue
        at = f"{mark[0]}:{mark[1]}" if mark else "unknown (give the internal stats)"
        found.append(Finding("recently-joined", (
            f"{name} joined this Key_Shared subscription when the read position was "
            f"{where}: Pulsar 3.3 sends it only messages before {where} until the "
            f"subscription's mark-delete position (now {at}) reaches it{blame}"), name))


def _draining(found: list[Finding], consumers: list[Mapping[str, Any]],
              only: str | None) -> None:
    """Pulsar 4.0 Key_Shared: a hash that moved stays with its old owner until it acks."""
    for c in consumers:
        hashes = c.get("drainingHashes") or []
        name = c.get("consumerName")
        if not hashes:
            continue
        owners = {_owner(consumers, int(h["hash"])) for h in hashes} - {None, name}
        if only is not None and only != name and only not in owners:
            continue
        parts = [f"hash {h['hash']}: {_plural(int(h.get('unackMsgs', 0)), 'unacked message')}, "
                 f"{_plural(int(h.get('blockedAttempts', 0)), 'blocked dispatch')}"
                 for h in hashes]
        unacked = int(c.get("drainingHashesUnackedMessages") or 0)
        waiting = (f"new messages of these keys wait for {name}'s acks before going to "
                   f"{_names(sorted(owners))}, their owner now") if owners else (
            f"new messages of these keys wait until {name} acks them")
        found.append(Finding("draining-hashes", (
            f"{name} still holds {_plural(unacked, 'unacked message')} of "
            f"{_plural(len(hashes), 'draining hash')} that moved to another consumer "
            f"({'; '.join(parts)}): {waiting}"), name))


def _subscription_checks(found: list[Finding], sub: Mapping[str, Any],
                         consumers: list[Mapping[str, Any]], backlog: int) -> None:
    if sub.get("blockedSubscriptionOnUnackedMsgs"):
        unacked = int(sub.get("unackedMessages") or 0)
        found.append(Finding("subscription-unacked-limit", (
            f"the subscription holds {_plural(unacked, 'unacked message')} and reached the "
            "broker's maxUnackedMessagesPerSubscription limit: it reads nothing new for any "
            "consumer "
            "until fewer than half the limit are unacked")))
    if sub.get("type") == "Key_Shared" and sub.get("keySharedMode") == "STICKY" and consumers:
        gaps = _gaps(r for c in consumers for r in _ranges(c))
        if gaps:
            shown = ", ".join(f"[{lo}, {hi}]" for lo, hi in gaps[:5])
            found.append(Finding("no-consumer-for-range", (
                f"no consumer of this STICKY Key_Shared subscription covers the hash "
                f"range(s) {shown}: messages whose key hashes there stay in the backlog "
                f"({backlog}) until a consumer claims those hashes")))
    delayed = int(sub.get("msgDelayed") or 0)
    if delayed:
        found.append(Finding("delayed-delivery", (
            f"{delayed} of the {_plural(backlog, 'backlog message')} are delayed-delivery "
            "messages (deliverAt/deliverAfter) not yet due: they are dispatched at their "
            "time, not before")))


def _policy_checks(found: list[Finding], stats: Mapping[str, Any], sub: Mapping[str, Any],
                   policies: Mapping[str, Any] | None) -> None:
    policies = policies or {}
    expired = int(sub.get("totalMsgExpired") or 0)
    rate = float(sub.get("msgRateExpired") or 0.0)
    if expired or rate:
        ttl = policies.get("message_ttl_in_seconds")
        why = f"the namespace's message TTL ({ttl} s)" if ttl else "message TTL"
        found.append(Finding("ttl-expiry", (
            f"{why} expired {_plural(expired, 'message')} of this subscription before "
            f"they were consumed ({rate:.1f}/s now; last at "
            f"{_when(sub.get('lastExpireTimestamp'))})")))
    quota = ((policies.get("backlog_quota_map") or {}).get("destination_storage")
             or policies.get("backlog_quota") or {})  # REST's shape, or pulsarlab's stored
    limit = quota.get("limitSize", stats.get("backlogQuotaLimitSize", -1))
    size = int(stats.get("backlogSize") or 0)
    if isinstance(limit, int) and limit >= 0 and size >= limit:
        policy = quota.get("policy")
        effect = {
            "producer_request_hold": "producers are held (their sends wait)",
            "producer_exception": "producers' sends fail",
            "consumer_backlog_eviction": "the oldest messages of the slowest subscription "
                                         "are skipped (lost to it)",
        }.get(policy or "", "the backlog quota policy applies")
        found.append(Finding("backlog-quota", (
            f"the topic's backlog is {size} bytes, at its backlog quota of {limit} bytes: "
            f"{effect}")))
