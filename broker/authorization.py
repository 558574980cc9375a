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
A topic's own grants (``pulsar-admin topics grant-permission``) live beside them under
``auth_policies.destination_auth[topic]`` and add to the namespace's, as in Pulsar (a
partition is covered by its partitioned topic's grants).
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


def _actions(role: Any, actions: Any) -> list[str]:
    """The granted actions, checked: a non-empty role, known actions."""
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
    return sorted(set(wanted))


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
        wanted = _actions(role, actions)
        self._update(_namespace(namespace), lambda auth: auth.__setitem__(role, wanted))

    def revoke_permission(self, namespace: str, role: str) -> None:
        """Take every action on ``namespace`` away from ``role``."""
        self._update(_namespace(namespace), lambda auth: auth.pop(role, None))

    # topic grants: Pulsar's PersistentTopicsBase.internalGrantPermissionsOnTopic & co.

    def get_topic_permissions(self, topic: str) -> dict[str, list[str]]:
        """``{role: [actions]}`` on ``topic``: the namespace's grants plus the topic's own."""
        name = TopicName.get(topic)
        merged = {role: set(actions) for role, actions in
                  self._granted(name.namespace).items()}
        for role, actions in self._topic_grants(name).items():
            merged.setdefault(role, set()).update(actions)
        return {role: sorted(actions) for role, actions in merged.items()}

    def grant_topic_permission(self, topic: str, role: str, actions: Iterable[str]) -> None:
        """Give ``role`` the ``actions`` on ``topic`` itself (replacing what it had there)."""
        wanted = _actions(role, actions)
        name = TopicName.get(topic)
        key = str(name.partitioned_topic_name)
        self._update(name.namespace, lambda auth: auth.setdefault(key, {})
                     .__setitem__(role, wanted), section="destination_auth")

    def revoke_topic_permission(self, topic: str, role: str) -> None:
        """Take ``role``'s grant on ``topic`` itself away (the namespace's stay)."""
        name = TopicName.get(topic)
        key = str(name.partitioned_topic_name)

        def revoke(auth: dict[str, Any]) -> None:
            grants = auth.get(key, {})
            grants.pop(role, None)
            if not grants:
                auth.pop(key, None)

        self._update(name.namespace, revoke, section="destination_auth")

    def _topic_grants(self, name: TopicName) -> dict[str, list[str]]:
        stored = self._metadata.get_policies(name.namespace) or {}
        auth = (stored.get("auth_policies") or {}).get("destination_auth") or {}
        return auth.get(str(name.partitioned_topic_name)) or {}

    def forget_namespace(self, namespace: str) -> None:
        """Drop what is cached for a deleted namespace (its policies went with it)."""
        self._cache.pop(namespace, None)

    def _update(self, namespace: str, change: Any, section: str = "namespace_auth") -> None:
        stored = self._metadata.get_policies(namespace) or {}
        auth_policies = stored.setdefault("auth_policies", {})
        for key in ("namespace_auth", "destination_auth", "subscription_auth_roles"):
            auth_policies.setdefault(key, {})
        change(auth_policies[section])
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
        """:meth:`check` for the namespace of ``topic``, or the topic's own grants."""
        if self.enabled and not self.is_superuser(role):
            name = TopicName.get(topic)
            own = set(self._topic_grants(name).get(role or "", ()))
            if own & ({"produce", "consume"} if action == "lookup" else {action}):
                return
            self.check(role, name.namespace, action)

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
