"""``%pulsar browse``'s decoding of an Avro topic written by the official client: each
message read by the schema version it carries, over pulsarlab's admin and its REST API."""

from __future__ import annotations

import pulsar
from pulsar.schema import AvroSchema, Integer, Record, String

from pulsarlab import Admin, Broker
from pulsarlab.browse import MessageFilter, browse_messages
from pulsarlab.cluster.rest import RestAdmin
from pulsarlab.schema_values import SchemaDecoder, admin_lookup

from .conftest import unique


class Parcel(Record):
    parcel_id = String()
    weight = Integer()


def _parcel_v2() -> type:
    """The same record (Avro names it by the class), one more field with a default."""

    class Parcel(Record):
        parcel_id = String()
        weight = Integer()
        depot = String(required_default=True)

    return Parcel


def test_browse_reads_each_message_by_its_schema_version(broker: Broker,
                                                          client: pulsar.Client) -> None:
    topic = f"persistent://public/default/{unique('browse-avro')}"
    first = client.create_producer(topic, schema=AvroSchema(Parcel))
    first.send(Parcel(parcel_id="p-1", weight=3))
    first.close()
    parcel_v2 = _parcel_v2()
    second = client.create_producer(topic, schema=AvroSchema(parcel_v2))
    second.send(parcel_v2(parcel_id="p-2", weight=8, depot="north"))
    second.close()
    rest = RestAdmin(broker.web_url)
    for admin in (Admin(broker.web_url), rest):
        decode = SchemaDecoder(admin_lookup(admin))
        rows, read = browse_messages(admin.topics, [topic], decode=decode)
        assert read == 2
        assert [r["value"] for r in rows] == [
            {"parcel_id": "p-1", "weight": 3},
            {"parcel_id": "p-2", "weight": 8, "depot": "north"},
        ]
        rows, _ = browse_messages(admin.topics, [topic], decode=decode,
                                  keep=MessageFilter(json_path="depot=north"))
        assert [r["value"]["parcel_id"] for r in rows] == ["p-2"]
    assert admin_lookup(rest)(f"{topic}-none", None) is None  # no schema: plain values
