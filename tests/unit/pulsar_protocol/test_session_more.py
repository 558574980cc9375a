"""More of the pulsar:// session with bytes: schemas, namespace listings, stats, failover
notices, de-duplication, exclusive producers, batches stored in pulsarlab's old layout."""

from __future__ import annotations

from pulsarlab.broker.entry import MessageMetadata
from pulsarlab.broker.format.batch import OutgoingMessage, encode_batch
from pulsarlab.broker.format.metadata import from_pulsar, to_pulsar
from pulsarlab.broker.pulsar_protocol import PulsarApi_pb2 as api
from pulsarlab.broker.rates import date_string

from .support import Harness, T, command, send_frame


def _connected(**settings):
    h = Harness(**settings)
    s = h.session()
    h.connect(s)
    return h, s


def test_schemas_get_versions_and_can_be_read_back() -> None:
    h, s = _connected()
    schema = api.Schema(name="Order", schema_data=b'{"type":"record"}', type=api.Schema.Json)
    (reply,) = h.run(s, command(T.GET_OR_CREATE_SCHEMA, "getOrCreateSchema", request_id=1,
                                topic="t", schema=schema))
    first = reply.getOrCreateSchemaResponse.schema_version
    (reply,) = h.run(s, command(T.GET_OR_CREATE_SCHEMA, "getOrCreateSchema", request_id=2,
                                topic="t", schema=schema))
    assert reply.getOrCreateSchemaResponse.schema_version == first
    other = api.Schema(name="Order", schema_data=b"{}", type=api.Schema.Json)
    (reply,) = h.run(s, command(T.GET_OR_CREATE_SCHEMA, "getOrCreateSchema", request_id=3,
                                topic="t", schema=other))
    assert reply.getOrCreateSchemaResponse.schema_version != first
    (reply,) = h.run(s, command(T.GET_SCHEMA, "getSchema", request_id=4, topic="t",
                                schema_version=first))
    assert reply.getSchemaResponse.schema.schema_data == b'{"type":"record"}'
    (reply,) = h.run(s, command(T.GET_SCHEMA, "getSchema", request_id=5, topic="none"))
    assert reply.getSchemaResponse.error_code == api.TopicNotFound


def test_topics_of_a_namespace_with_a_pattern_and_an_unchanged_hash() -> None:
    h, s = _connected()
    for name in ("orders-1", "orders-2", "payments"):
        h.service.create_topic(name)
    (reply,) = h.run(s, command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                                request_id=1, namespace="public/default",
                                topics_pattern="persistent://public/default/orders-.*"))
    response = reply.getTopicsOfNamespaceResponse
    assert list(response.topics) == ["persistent://public/default/orders-1",
                                     "persistent://public/default/orders-2"]
    assert response.filtered
    (reply,) = h.run(s, command(T.GET_TOPICS_OF_NAMESPACE, "getTopicsOfNamespace",
                                request_id=2, namespace="public/default",
                                topics_pattern="persistent://public/default/orders-.*",
                                topics_hash=response.topics_hash))
    assert not reply.getTopicsOfNamespaceResponse.changed
    assert not reply.getTopicsOfNamespaceResponse.topics


def test_consumer_stats_and_last_message_id() -> None:
    h, s = _connected()
    h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="sub",
                     subType=api.CommandSubscribe.Shared, consumer_id=5, request_id=1,
                     consumer_name="c1"))
    h.run(s, command(T.FLOW, "flow", consumer_id=5, messagePermits=7))
    (reply,) = h.run(s, command(T.CONSUMER_STATS, "consumerStats", request_id=2, consumer_id=5))
    stats = reply.consumerStatsResponse
    assert (stats.consumerName, stats.availablePermits, stats.type) == ("c1", 7, "Shared")
    assert stats.connectedSince == date_string(h.clock.now_ms())  # Pulsar's date string
    (admin_stats,) = h.service.topic_stats("t")["subscriptions"]["sub"]["consumers"]
    assert admin_stats["clientVersion"] == "test"  # as the CONNECT gave it
    (reply,) = h.run(s, command(T.GET_LAST_MESSAGE_ID, "getLastMessageId", request_id=3,
                                consumer_id=5))
    assert reply.getLastMessageIdResponse.request_id == 3
    (reply,) = h.run(s, command(T.CONSUMER_STATS, "consumerStats", request_id=4, consumer_id=9))
    assert reply.type == T.ERROR and reply.error.error == api.ConsumerNotFound


def test_failover_consumers_hear_who_is_active() -> None:
    h, s = _connected()
    replies = h.run(s, command(T.SUBSCRIBE, "subscribe", topic="t", subscription="sub",
                               subType=api.CommandSubscribe.Failover, consumer_id=1,
                               request_id=1, consumer_name="a"))
    assert [r.type for r in replies] == [T.SUCCESS]  # the first pick waits for the delay
    h.clock.advance(h.settings.active_consumer_failover_delay_ms)
    h.service.tick()
    replies = h.run(s)
    notices = [r.active_consumer_change for r in replies if r.type == T.ACTIVE_CONSUMER_CHANGE]
    assert [(n.consumer_id, n.is_active) for n in notices] == [(1, True)]


def test_deduplication_reports_the_last_sequence_id() -> None:
    h, s = _connected(broker_deduplication_enabled=True)
    h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1,
                     producer_name="p"))
    h.run(s, send_frame(1, 5, b"x"))
    (again,) = h.run(s, send_frame(1, 5, b"x"))  # a duplicate still gets its receipt
    assert again.type == T.SEND_RECEIPT
    assert h.service.get_topic("t").ledger.number_of_entries == 1
    h.run(s, command(T.CLOSE_PRODUCER, "close_producer", producer_id=1, request_id=2))
    (reply,) = h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=2,
                                request_id=3, producer_name="p"))
    assert reply.producer_success.last_sequence_id == 5


def test_an_exclusive_producer_keeps_others_out() -> None:
    h, s = _connected()
    (reply,) = h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=1, request_id=1,
                                producer_access_mode=api.Exclusive))
    assert reply.type == T.PRODUCER_SUCCESS
    (reply,) = h.run(s, command(T.PRODUCER, "producer", topic="t", producer_id=2, request_id=2))
    assert reply.type == T.ERROR and reply.error.error == api.ProducerBusy


def test_batches_stored_in_pulsarlabs_layout_are_relaid_for_pulsar_consumers() -> None:
    messages = [OutgoingMessage(f"m{i}".encode(), {"i": str(i)}, f"k{i}", None, 10 + i, i)
                for i in range(3)]
    md = MessageMetadata(producer_name="p", publish_time=5, num_messages_in_batch=3)
    raw, payload = to_pulsar(md, encode_batch(messages))
    pulsar_md = from_pulsar(raw)
    assert pulsar_md.num_messages_in_batch == 3
    singles, offset = [], 0
    while offset < len(payload):  # Pulsar's layout: size, SingleMessageMetadata, payload
        size = int.from_bytes(payload[offset:offset + 4], "big")
        single = api.SingleMessageMetadata.FromString(payload[offset + 4:offset + 4 + size])
        offset += 4 + size
        singles.append((single.partition_key, dict((p.key, p.value) for p in single.properties),
                        payload[offset:offset + single.payload_size]))
        offset += single.payload_size
    assert singles == [(f"k{i}", {"i": str(i)}, f"m{i}".encode()) for i in range(3)]
