"""Which Pulsar release the broker behaves like: the ``pulsar_version`` setting and its rules.

Every rule that changed between releases is a predicate of :class:`PulsarVersion`, and the
parts of the broker that differ (selectors today, a 4.0 dispatcher tomorrow) ask it instead of
comparing version strings. ``"3.3"`` means the latest 3.3.x patch; ``"3.3.N"`` pins a patch.
A new release line is one more entry in :data:`SUPPORTED_LINES` plus the predicates that
tell it apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidArgument

__all__ = ["DEFAULT_PULSAR_VERSION", "SUPPORTED_LINES", "PulsarVersion"]

DEFAULT_PULSAR_VERSION = "3.3"
"""The broker setting's default: Pulsar 3.3 at its latest patch."""

SUPPORTED_LINES = ((3, 3), (4, 0))
"""The ``major.minor`` release lines whose behaviour the broker reproduces."""

_LATEST = 1 << 30  # the patch number "3.3" stands for: newer than any real patch

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class PulsarVersion:
    """A Pulsar release: ``major.minor`` and a patch, or the latest patch of that line."""

    major: int
    minor: int
    patch: int = _LATEST

    @classmethod
    def parse(cls, text: str) -> PulsarVersion:
        """``"3.3"`` (latest 3.3.x) or ``"3.3.1"``; anything else is a one-line error."""
        match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
        lines = ", ".join(f"{major}.{minor}" for major, minor in SUPPORTED_LINES)
        if match is None:
            raise InvalidArgument(
                f"pulsar_version must look like '3.3' or '3.3.1', not {text!r}"
            )
        major, minor = int(match[1]), int(match[2])
        if (major, minor) not in SUPPORTED_LINES:
            raise InvalidArgument(
                f"pulsar_version {text!r} is not supported; supported release lines: {lines}"
            )
        return cls(major, minor, int(match[3]) if match[3] is not None else _LATEST)

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        """Whether this release is ``major.minor.patch`` or newer."""
        return (self.major, self.minor, self.patch) >= (major, minor, patch)

    def __str__(self) -> str:
        if self.patch == _LATEST:
            return f"{self.major}.{self.minor}"
        return f"{self.major}.{self.minor}.{self.patch}"

    # -- the rules that changed -----------------------------------------------------------

    @property
    def consistent_hashing_replaces_on_collision(self) -> bool:
        """Key_Shared consistent hashing as rewritten by PR #23327 (3.3.2+, 3.0.7+).

        Ring points are ``name\\0nameIndex\\0i``, a point holds one consumer (a later one
        replaces it), and ``getConsumerKeyHashRanges`` reports one range per point plus the
        wrap-around range. Before: ``name\\0i`` points shared by a list of consumers.
        """
        return self.at_least(3, 3, 2)

    @property
    def sticky_ranges_select_by_containment(self) -> bool:
        """Key_Shared STICKY (and key-hash-range readers) as fixed by PR #24730 (3.3.9+).

        A hash goes to the consumer whose range contains its slot, and a consumer's own
        overlapping ranges are rejected. Before: floor/ceiling entries of one map of range
        starts and ends, so a consumer also caught the gaps between its own ranges.
        """
        return self.at_least(3, 3, 9)

    @property
    def key_shared_draining_hashes(self) -> bool:
        """Key_Shared as PIP-379 rewrote it for 4.0 (PR #23352 and the PRs around it).

        The dispatcher hands a key to a new owner only once the old owner has no pending
        message of it (draining hashes, bounded look-ahead), sticky key hashes are 16-bit
        slots with a first-come consistent-hashing ring on ``[1, 65535]``, and a key-less
        message is keyed ``producerName-sequenceId``. Before: the 3.x "recently joined
        consumers" rule (kept in 4.0 as ``...Classic``).
        """
        return self.at_least(4, 0)
