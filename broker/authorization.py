"""Role permissions per namespace, like Pulsar's ``PulsarAuthorizationProvider``.

With ``authorization_enabled`` every connection has a role (its token's subject) and:

* ``produce`` on a topic needs the ``produce`` action on its namespace, ``subscribe`` (and
  readers) need ``consume``; looking a topic up (partition metadata, topic stats) needs
  either; listing a namespace's topics needs ``consume`` — Pulsar's rules for the
  PRODUCE/CONSUME/LOOKUP/GET_STATS topic operations and GET_TOPICS;
* every other admin operation (creating/deleting topics, cursors, policies, permissions)
  needs a superuser role (``super_user_roles``); pulsarlab has no tenant admins;
* superusers may do everything.

Permissions are granted with ``admin.namespaces.grant_permission(namespace, role,
actions)`` and live in the namespace's policies under ``auth_policies.namespace_auth``
(Pulsar's field names), persisted with the other namespace policies in the metadata store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import AuthorizationError, InvalidArgument
from .settings import BrokerSettings
from .storage.base import MetadataStore
from .topic_name import TopicName

__all__ = ["ACTIONS", "Authorizer"]

ACTIONS = ("produce", "consume")

# Admin operations a role may run with namespace permissions (the rest need a superuser).
_LOOKUP_OPS = frozenset({
    "topics.get_partitioned_topic_metadata", "topics.get_stats",
    "topics.get_partitioned_stats",
})
_CONSUME_NAMESPACE_OPS = frozenset({
    "topics.get_list", "topics.get_partitioned_topic_list", "namespaces.get_topics",
})


def _namespace(namespace: Any) -> str:
    parts = namespace.split("/") if isinstance(namespace, str) else []
    if len(parts) != 2 or "" in parts:
        raise InvalidArgument(f"namespace must be 'tenant/namespace', not {namespace!r}")
    return namespace


class Authorizer:
    """Grants, revokes and checks namespace permissions (runs on the broker thread)."""

    def __init__(self, settings: BrokerSettings, metadata: MetadataStore) -> None:
        self.enabled = settings.authorization_enabled
        self.superusers = frozenset(
            r.strip() for r in settings.super_user_roles.split(",") if r.strip()
        )
        self._metadata = metadata
        self._cache: dict[str, dict[str, frozenset[str]]] = {}

    # -- permissions (admin) --------------------------------------------------------------

    def get_permissions(self, namespace: str) -> dict[str, list[str]]:
        """``{role: [actions]}`` granted on ``namespace``."""
        return {role: sorted(actions) for role, actions in self._granted(namespace).items()}

    def grant_permission(self, namespace: str, role: str, actions: Iterable[str]) -> None:
        """Give ``role`` the ``actions`` on ``namespace`` (replacing what it had)."""
        ns = _namespace(namespace)
        if not isinstance(role, str) or not role:
            raise InvalidArgument("role must be a non-empty string")
        if isinstance(actions, str) or not isinstance(actions, Iterable):
            raise InvalidArgument("actions must be a list such as ['produce', 'consume']")
        wanted = list(actions)
        bad = [a for a in wanted if a not in ACTIONS]
        if bad:
            raise InvalidArgument(
                f"unknown action(s) {bad!r}: pulsarlab enforces {', '.join(ACTIONS)}"
            )
        self._update(ns, lambda auth: auth.__setitem__(role, sorted(set(wanted))))

    def revoke_permission(self, namespace: str, role: str) -> None:
        """Take every action on ``namespace`` away from ``role``."""
        self._update(_namespace(namespace), lambda auth: auth.pop(role, None))

    def forget_namespace(self, namespace: str) -> None:
        """Drop what is cached for a deleted namespace (its policies went with it)."""
        self._cache.pop(namespace, None)

    def _update(self, namespace: str, change: Any) -> None:
        stored = self._metadata.get_policies(namespace) or {}
        auth_policies = stored.setdefault("auth_policies", {})
        namespace_auth = auth_policies.setdefault("namespace_auth", {})
        auth_policies.setdefault("destination_auth", {})
        auth_policies.setdefault("subscription_auth_roles", {})
        change(namespace_auth)
        self._metadata.put_policies(namespace, stored)
        self._cache.pop(namespace, None)

    def _granted(self, namespace: str) -> dict[str, frozenset[str]]:
        ns = _namespace(namespace)
        granted = self._cache.get(ns)
        if granted is None:
            stored = self._metadata.get_policies(ns) or {}
            raw = (stored.get("auth_policies") or {}).get("namespace_auth") or {}
            granted = {role: frozenset(actions) for role, actions in raw.items()}
            self._cache[ns] = granted
        return granted

    # -- checks ---------------------------------------------------------------------------

    def is_superuser(self, role: str | None) -> bool:
        return role is not None and role in self.superusers

    def allowed(self, role: str | None, namespace: str, action: str) -> bool:
        """Whether ``role`` may ``action`` (produce, consume or lookup) in ``namespace``."""
        if not self.enabled or self.is_superuser(role):
            return True
        if role is None:
            return False
        actions = self._granted(namespace).get(role, frozenset())
        if action == "lookup":
            return bool(actions & {"produce", "consume"})
        return action in actions

    def check(self, role: str | None, namespace: str, action: str) -> None:
        """:class:`AuthorizationError` unless ``role`` may ``action`` in ``namespace``."""
        if not self.allowed(role, namespace, action):
            what = "look up topics" if action == "lookup" else action
            raise AuthorizationError(
                f"role {role!r} is not authorized to {what} in namespace {namespace}"
            )

    def check_topic(self, role: str | None, topic: str, action: str) -> None:
        """:meth:`check` for the namespace of ``topic``."""
        if self.enabled and not self.is_superuser(role):
            self.check(role, TopicName.get(topic).namespace, action)

    def check_admin(self, role: str | None, op: str, args: dict[str, Any]) -> None:
        """Admin operations: lookups by namespace permission, the rest superusers only."""
        if not self.enabled or self.is_superuser(role):
            return
        if op in _LOOKUP_OPS and isinstance(args.get("topic"), str):
            self.check_topic(role, args["topic"], "lookup")
            return
        if op in _CONSUME_NAMESPACE_OPS:
            self.check(role, _namespace(args.get("namespace", "public/default")), "consume")
            return
        raise AuthorizationError(f"role {role!r} is not a superuser: {op} needs one")
