"""``/admin/v2/{persistent|non-persistent}/{tenant}/{namespace}/...``: topics and cursors.

Each handler maps one of Pulsar's ``PersistentTopics`` / ``NonPersistentTopics`` resources
onto the admin operation of the same meaning; ``position/{n}`` and ``examinemessage`` answer
with the raw message, its metadata in ``X-Pulsar-*`` headers (:mod:`.messages`).
"""

from __future__ import annotations

from typing import Any

from .. import errors
from .base import AdminResource, ApiError, guarded, integer
from .messages import MessageHandler, write_message

# Pulsar's MessageId.latest / earliest as the JSON body of create-subscription.
_LATEST = (2**63 - 1, 2**63 - 1)
_EARLIEST = (-1, -1)

# read-only topic resource -> admin operation
_INFO_OPS = {
    "stats": "topics.get_stats",
    "internalStats": "topics.get_internal_stats",
    "partitioned-stats": "topics.get_partitioned_stats",
    "lastMessageId": "topics.get_last_message_id",
    "subscriptions": "topics.get_subscriptions",
}
INFO_RESOURCES = tuple(_INFO_OPS)


def _topic(domain: str, tenant: str, namespace: str, topic: str) -> str:
    return f"{domain}://{tenant}/{namespace}/{topic}"


def _message_id(body: Any, default: str = "latest") -> Any:
    """A ``MessageIdImpl`` / ``ResetCursorData`` body as the admin operations take it."""
    if body is None:
        return default
    if not isinstance(body, dict):
        raise ApiError(400, "the message id must be a JSON object with ledgerId and entryId")
    ledger, entry = body.get("ledgerId"), body.get("entryId")
    for name, value in (("ledgerId", ledger), ("entryId", entry)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ApiError(400, f"message id {name} must be an integer, not {value!r}")
    if (ledger, entry) == _LATEST:
        return "latest"
    if (ledger, entry) == _EARLIEST:
        return "earliest"
    return [ledger, entry]


class NamespaceTopicsListHandler(AdminResource):
    """GET the namespace's topics of this domain (partitions by their own names)."""

    @guarded
    async def get(self, domain: str, tenant: str, namespace: str) -> None:
        names = await self.run("namespaces.get_topics", namespace=f"{tenant}/{namespace}",
                               include_system=self.flag("includeSystemTopic"))
        self.reply([n for n in names if n.startswith(f"{domain}://")])


class PartitionedTopicsListHandler(AdminResource):
    @guarded
    async def get(self, domain: str, tenant: str, namespace: str) -> None:
        ns = f"{tenant}/{namespace}"
        await self.run("namespaces.get_topics", namespace=ns)  # 404 for an unknown namespace
        names = await self.run("topics.get_partitioned_topic_list", namespace=ns)
        self.reply([n for n in names if n.startswith(f"{domain}://")])


class TopicHandler(AdminResource):
    """PUT creates a non-partitioned topic, DELETE (``?force=true``) deletes a topic."""

    @guarded
    async def put(self, *path: str) -> None:
        self.reply(await self.run("topics.create_non_partitioned_topic", topic=_topic(*path)))

    @guarded
    async def delete(self, *path: str) -> None:
        topic = _topic(*path)
        if await _partition_count(self, topic):
            raise ApiError(409, f"{topic} is a partitioned topic, instead of calling delete "
                                "topic, please call delete-partitioned-topic.")
        self.reply(await self.run("topics.delete", topic=topic, force=self.flag("force")))


class PartitionsHandler(AdminResource):
    """GET the partition count, PUT creates, POST grows, DELETE deletes a partitioned topic."""

    def _partitions(self) -> int:
        body = self.body()
        count = body.get("partitions") if isinstance(body, dict) else body
        if not isinstance(count, int) or isinstance(count, bool):
            raise ApiError(400, f"the body must be the number of partitions, not {body!r}")
        if count <= 0:
            raise ApiError(406, "number of partitions should be more than 0")
        return count

    @guarded
    async def get(self, *path: str) -> None:
        meta = await self.run("topics.get_partitioned_topic_metadata", topic=_topic(*path))
        # PartitionedTopicMetadata as Pulsar serializes it (its "deleted" flag is set only
        # while a deletion is under way, which pulsarlab does at once)
        self.reply({**meta, "deleted": False})

    @guarded
    async def put(self, *path: str) -> None:
        self.reply(await self.run("topics.create_partitioned_topic", topic=_topic(*path),
                                  partitions=self._partitions()))

    @guarded
    async def post(self, *path: str) -> None:
        self.reply(await self.run("topics.update_partitioned_topic", topic=_topic(*path),
                                  partitions=self._partitions()))

    @guarded
    async def delete(self, *path: str) -> None:
        topic = _topic(*path)
        if not await _partition_count(self, topic):
            await self.run("topics.get_subscriptions", topic=topic)  # 404 if there is none
            # Pulsar: a non-partitioned topic of that name is a conflict, not a missing one
            raise ApiError(409, f"{topic} is a non-partitioned topic: use delete topic")
        self.reply(await self.run("topics.delete", topic=topic, force=self.flag("force")))


class TopicInfoHandler(AdminResource):
    """The read-only topic resources: stats, internalStats, partitioned-stats,
    lastMessageId, subscriptions."""

    @guarded
    async def get(self, domain: str, tenant: str, namespace: str, topic: str,
                  resource: str) -> None:
        name = _topic(domain, tenant, namespace, topic)
        args: dict[str, Any] = {"topic": name}
        if resource == "partitioned-stats":
            args["per_partition"] = self.flag_default("perPartition", True)
        op = _INFO_OPS[resource]

        def answer(call: Any) -> Any:  # one trip to the broker: the live views poll these
            if resource in ("stats", "internalStats") and call(
                "topics.get_partitioned_topic_metadata", topic=name
            )["partitions"]:  # Pulsar has no such topic: the partitions are the topics
                raise ApiError(404, f"topic {name} not found: it is a partitioned topic, see "
                                    "partitioned-stats or one of its partitions")
            return call(op, **args)

        try:
            self.reply(await self.run_with(answer))
        except errors.TopicNotFound:
            # the reason as Pulsar words it (PersistentTopicsBase.getTopicNotFoundErrorMessage)
            raise ApiError(404, f"Topic {name} not found") from None

    def flag_default(self, name: str, default: bool) -> bool:
        return self.flag(name) if self.get_query_argument(name, None) is not None else default


class UnloadHandler(AdminResource):
    """PUT unload: closes the topic (clients disconnected, they reconnect); reloads on use."""

    @guarded
    async def put(self, *path: str) -> None:
        self.reply(await self.run("topics.unload", topic=_topic(*path)))


class TerminateHandler(AdminResource):
    """POST terminate: the topic's last message id; terminate/partitions: each partition's."""

    @guarded
    async def post(self, domain: str, tenant: str, namespace: str, topic: str,
                   partitions: str | None = None) -> None:
        name = _topic(domain, tenant, namespace, topic)
        if domain != "persistent":
            raise ApiError(405, "Termination of a non-persistent topic is not allowed")
        count = await _partition_count(self, name)
        if partitions is None:
            if count:
                raise ApiError(405, "Termination of a partitioned topic is not allowed")
            self.reply(await self.run("topics.terminate_topic", topic=name))
            return
        if not count:
            raise ApiError(405, "Termination of a non-partitioned topic is not allowed using "
                                "partitioned-terminate, please use terminate commands.")
        self.reply(await self.run("topics.terminate_partitioned_topic", topic=name))


class CompactionHandler(AdminResource):
    """PUT compaction compacts the topic now (204); GET its ``LongRunningProcessStatus``."""

    @guarded
    async def put(self, *path: str) -> None:
        if path[0] != "persistent":
            raise ApiError(405, "Compaction of a non-persistent topic is not allowed")
        self.reply(await self.run("topics.compact", topic=_topic(*path)))

    @guarded
    async def get(self, *path: str) -> None:
        if path[0] != "persistent":
            raise ApiError(405, "Compaction of a non-persistent topic is not allowed")
        self.reply(await self.run("topics.compaction_status", topic=_topic(*path)))


class SchemaHandler(AdminResource):
    """``/admin/v2/schemas/{t}/{ns}/{topic}/schema[/{version}]``: GET the latest or one
    version, POST a ``PostSchemaPayload``, DELETE the schema; ``.../schemas``: every
    version."""

    @guarded
    async def get(self, tenant: str, namespace: str, topic: str, resource: str,
                  version: str | None = None) -> None:
        name = _topic("persistent", tenant, namespace, topic)
        if resource == "compatibility":
            raise ApiError(405, "POST a schema to .../compatibility to test it")
        if resource == "schemas":
            self.reply(await self.run("schemas.get_all_versions", topic=name))
            return
        number = None
        if version is not None:
            number = integer(version, "schema version")
        self.reply(await self.run("schemas.get_schema", topic=name, version=number))

    async def _write(self, op: str, path: tuple[str, str, str, str, str | None],
                     **args: Any) -> None:
        tenant, namespace, topic, resource, version = path
        if resource not in ("schema", "compatibility") or version is not None:
            raise ApiError(405, f"{self.request.method} applies to .../schema only")
        self.reply(await self.run(op, topic=_topic("persistent", tenant, namespace, topic),
                                  **args))

    @guarded
    async def post(self, *path: str) -> None:
        parts = _schema_path(path)
        op = "schemas.test_compatibility" if parts[3] == "compatibility" else (
            "schemas.post_schema"
        )
        await self._write(op, parts, payload=self.body())

    @guarded
    async def delete(self, *path: str) -> None:
        parts = _schema_path(path)
        if parts[3] != "schema":
            raise ApiError(405, "DELETE applies to .../schema only")
        await self._write("schemas.delete_schema", parts)


def _schema_path(path: tuple[str, ...]) -> tuple[str, str, str, str, str | None]:
    tenant, namespace, topic, resource, *rest = path
    return tenant, namespace, topic, resource, rest[0] if rest else None


class SubscriptionHandler(AdminResource):
    """PUT creates a subscription at the message id in the body (default latest), DELETE
    (``?force=true``) deletes it."""

    @guarded
    async def put(self, domain: str, tenant: str, namespace: str, topic: str,
                  subscription: str) -> None:
        self.reply(await self.run(
            "topics.create_subscription", topic=_topic(domain, tenant, namespace, topic),
            subscription=subscription, message_id=_message_id(self.body()),
        ))

    @guarded
    async def delete(self, domain: str, tenant: str, namespace: str, topic: str,
                     subscription: str) -> None:
        self.reply(await self.run(
            "topics.delete_subscription", topic=_topic(domain, tenant, namespace, topic),
            subscription=subscription, force=self.flag("force"),
        ))


class CursorActionHandler(AdminResource):
    """POST skip/{n}, skip_all, expireMessages/{seconds}, resetcursor/{timestamp} and
    resetcursor (a ``ResetCursorData`` body)."""

    @guarded
    async def post(self, domain: str, tenant: str, namespace: str, topic: str,
                   subscription: str, action: str, value: str | None = None) -> None:
        args: dict[str, Any] = {"topic": _topic(domain, tenant, namespace, topic),
                                "subscription": subscription}
        if action == "skip_all":
            op = "topics.skip_all_messages"
        elif action == "skip":
            op, args["count"] = "topics.skip_messages", integer(value or "", "numMessages")
        elif action == "expireMessages":
            op = "topics.expire_messages"
            args["expire_time_seconds"] = integer(value or "", "expireTimeInSeconds")
        elif value is not None:
            op, args["timestamp"] = "topics.reset_cursor", integer(value, "timestamp")
        else:
            body = self.body()
            args["message_id"] = _message_id(body)
            if isinstance(body, dict) and body.get("isExcluded") and isinstance(
                args["message_id"], list
            ):  # the given message itself is skipped: read from the next entry
                args["message_id"][1] += 1
            op = "topics.reset_cursor"
        self.reply(await self.run(op, **args))


class ExpireAllSubscriptionsHandler(AdminResource):
    """POST all_subscription/expireMessages/{seconds}: expire on every subscription."""

    @guarded
    async def post(self, domain: str, tenant: str, namespace: str, topic: str,
                   seconds: str) -> None:
        self.reply(await self.run(
            "topics.expire_messages_all_subscriptions",
            topic=_topic(domain, tenant, namespace, topic),
            expire_time_seconds=integer(seconds, "expireTimeInSeconds")))


class TopicPermissionsHandler(AdminResource):
    """GET permissions: ``{role: [actions]}``, the namespace's grants and the topic's own."""

    @guarded
    async def get(self, domain: str, tenant: str, namespace: str, topic: str) -> None:
        await self.run("namespaces.get_topics", namespace=f"{tenant}/{namespace}")  # 404
        self.reply(await self.run("topics.get_permissions",
                                  topic=_topic(domain, tenant, namespace, topic)))


class TopicRolePermissionsHandler(AdminResource):
    """POST permissions/{role} grants the actions in the body on the topic, DELETE revokes
    the topic's own grant (Pulsar's ``grant-permission`` / ``revoke-permission``)."""

    @guarded
    async def post(self, domain: str, tenant: str, namespace: str, topic: str,
                   role: str) -> None:
        actions = self.body()
        if not isinstance(actions, list):
            raise ApiError(400, "the body must be a JSON list of actions, e.g. "
                                '["produce", "consume"]')
        await self.run("namespaces.get_topics", namespace=f"{tenant}/{namespace}")  # 404
        self.reply(await self.run("topics.grant_permission",
                                  topic=_topic(domain, tenant, namespace, topic), role=role,
                                  actions=actions))

    @guarded
    async def delete(self, domain: str, tenant: str, namespace: str, topic: str,
                     role: str) -> None:
        await self.run("namespaces.get_topics", namespace=f"{tenant}/{namespace}")  # 404
        self.reply(await self.run("topics.revoke_permission",
                                  topic=_topic(domain, tenant, namespace, topic), role=role))


class PeekHandler(MessageHandler):
    """GET subscription/{sub}/position/{n}: the n-th (1 = next) unacknowledged message; a
    subscription that does not exist yet is created at the earliest message first."""

    @guarded
    async def get(self, domain: str, tenant: str, namespace: str, topic: str,
                  subscription: str, position: str) -> None:
        name = _topic(domain, tenant, namespace, topic)
        n = integer(position, "messagePosition")
        if n < 1:
            raise ApiError(412, f"message position must be >= 1, not {n}")
        await _refuse_partitioned(self, name, "peek messages")
        if subscription not in await self.run("topics.get_subscriptions", topic=name):
            # as Pulsar's peek does (PersistentTopicsBase.getSubscriptionReference): a
            # subscription that does not exist is created, at the earliest message
            await self.run("topics.create_subscription", topic=name,
                           subscription=subscription, message_id="earliest")
        messages = await self.run("topics.peek_messages", topic=name,
                                  subscription=subscription, count=n)
        if len(messages) < n:
            raise ApiError(404, f"message not found: subscription {subscription!r} has "
                                f"{len(messages)} message(s) to peek")
        write_message(self, messages[n - 1])


class ExamineMessageHandler(MessageHandler):
    """GET examinemessage?initialPosition=earliest|latest&messagePosition=n."""

    @guarded
    async def get(self, *path: str) -> None:
        name = _topic(*path)
        n = integer(self.get_query_argument("messagePosition", "1"), "messagePosition")
        initial = self.get_query_argument("initialPosition", "latest")
        await _refuse_partitioned(self, name, "examine messages")
        write_message(self, await self.run("topics.examine_message", topic=name,
                                           initial_position=initial, message_position=n))


async def _partition_count(handler: AdminResource, topic: str) -> int:
    return (await handler.run("topics.get_partitioned_topic_metadata", topic=topic))["partitions"]


async def _refuse_partitioned(handler: AdminResource, topic: str, what: str) -> None:
    if await _partition_count(handler, topic):
        raise ApiError(405, f"{what} on a partitioned topic is not allowed; "
                            "use one of its partitions")
