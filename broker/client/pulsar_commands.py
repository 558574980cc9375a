"""Pulsar's commands as pulsarlab's client builds and reads them (pure functions).

The URL of a Pulsar broker, the ``PRODUCER`` and ``SUBSCRIBE`` commands built from the
fields the producers and consumers ask with, ``ack_set`` bit sets as Java's ``BitSet``
words, uint64 ids as signed longs, and ``ServerError`` codes as client exceptions.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from ..pulsar_protocol import PulsarApi_pb2 as pb
from ..pulsar_protocol.framing import Frame
from .connection import Command
from .exceptions import InvalidUrl, PulsarException, exception_for

__all__ = [
    "batch_id_data", "bits_to_words", "error_for", "id_data", "is_tls_url", "parse_pulsar_url",
    "producer_command", "request_id_of", "settle", "settle_reply", "signed", "subscribe_command",
    "words_to_bits",
]

_SUB_TYPES = {"Exclusive": 0, "Shared": 1, "Failover": 2, "Key_Shared": 3}
_ACCESS_MODES = {"Shared": 0, "Exclusive": 1, "WaitForExclusive": 2, "ExclusiveWithFencing": 3}
_T = pb.BaseCommand.Type
_MASK64 = (1 << 64) - 1


def is_tls_url(url: str) -> bool:
    """Whether a broker URL is ``pulsar+ssl://`` (TLS) rather than ``pulsar://``."""
    return url.strip().startswith("pulsar+ssl://")


def parse_pulsar_url(service_url: str) -> tuple[str, int]:
    """``pulsar://host:port`` or ``pulsar+ssl://host:port`` → ``(host, port)`` (the first
    host of a list)."""
    url = service_url.strip().rstrip("/")
    scheme = "pulsar+ssl://" if is_tls_url(url) else "pulsar://"
    if not url.startswith(scheme):
        raise InvalidUrl(f"service URL {service_url!r} must look like pulsar://host:port "
                         "or pulsar+ssl://host:port")
    hostport = url[len(scheme):].split(",")[0]
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidUrl(f"service URL {service_url!r} must look like {scheme}host:port")
    return host.strip("[]"), int(port)


def words_to_bits(words: Any) -> int:
    """Pulsar's ``ack_set`` (a ``BitSet``'s 64-bit words, signed) as one int."""
    bits = 0
    for i, word in enumerate(words):
        bits |= (word & _MASK64) << (64 * i)
    return bits


def bits_to_words(bits: int, size: int) -> list[int]:
    """One int of bits as a ``BitSet``'s words (signed 64-bit, as Java writes them)."""
    out = []
    for _ in range(max(1, (size + 63) // 64)):
        word = bits & _MASK64
        out.append(word - (1 << 64) if word >> 63 else word)
        bits >>= 64
    return out


def id_data(position: Any, partition: int = -1) -> pb.MessageIdData:
    return pb.MessageIdData(ledgerId=position[0] & _MASK64, entryId=position[1] & _MASK64,
                            partition=partition)


def batch_id_data(message_id: Any) -> pb.MessageIdData:
    """``[ledger, entry, partition, batch_index]`` as Pulsar's ``MessageIdData``."""
    ledger, entry, partition, batch = message_id
    return pb.MessageIdData(ledgerId=ledger & _MASK64, entryId=entry & _MASK64,
                            partition=partition, batch_index=batch)


def producer_command(fields: dict[str, Any]) -> pb.BaseCommand:
    """PRODUCER from the fields pulsarlab's producer asks with."""
    command = pb.BaseCommand(type=_T.PRODUCER)
    p = command.producer
    p.topic = fields["topic"]
    p.producer_id = fields["producer_id"]
    if fields.get("producer_name"):
        p.producer_name = fields["producer_name"]
        p.user_provided_producer_name = bool(fields.get("user_provided_name", True))
    if fields.get("access_mode"):
        p.producer_access_mode = _ACCESS_MODES[fields["access_mode"]]
    if fields.get("topic_epoch") is not None:  # back after a reconnect, as Java's client
        p.topic_epoch = fields["topic_epoch"]
    if fields.get("initial_subscription_name"):
        p.initial_subscription_name = fields["initial_subscription_name"]
    return command


def subscribe_command(f: dict[str, Any]) -> pb.BaseCommand:
    """SUBSCRIBE from the fields pulsarlab's consumer asks with."""
    command = pb.BaseCommand(type=_T.SUBSCRIBE)
    s = command.subscribe
    s.topic = f["topic"]
    s.subscription = f["subscription"]
    s.subType = _SUB_TYPES[f["sub_type"]]
    s.consumer_id = f["consumer_id"]
    s.consumer_name = f["consumer_name"]
    s.durable = bool(f.get("durable", True))
    if f.get("priority_level"):
        s.priority_level = f["priority_level"]
    if f.get("read_compacted"):
        s.read_compacted = True
    s.initialPosition = 1 if f.get("initial_position") == "earliest" else 0
    start = f.get("start_message_id")
    if start is not None:
        s.start_message_id.CopyFrom(batch_id_data(start))
    mode = f.get("key_shared_mode")
    ranges = f.get("sticky_ranges") or f.get("key_hash_ranges")
    if mode is not None or ranges:  # a reader's key hash ranges: sticky ranges
        meta = s.keySharedMeta
        meta.keySharedMode = 1 if mode == "STICKY" or f.get("key_hash_ranges") else 0
        meta.allowOutOfOrderDelivery = bool(f.get("allow_out_of_order_delivery"))
        for start_hash, end_hash in ranges or ():
            meta.hashRanges.add(start=start_hash, end=end_hash)
    return command


_REPLY_FIELDS = {
    _T.SUCCESS: "success", _T.ERROR: "error", _T.PRODUCER_SUCCESS: "producer_success",
    _T.LOOKUP_RESPONSE: "lookupTopicResponse",
    _T.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
    _T.GET_LAST_MESSAGE_ID_RESPONSE: "getLastMessageIdResponse",
    _T.GET_TOPICS_OF_NAMESPACE_RESPONSE: "getTopicsOfNamespaceResponse",
}


def request_id_of(cmd: pb.BaseCommand) -> int | None:
    field = _REPLY_FIELDS.get(cmd.type)
    return None if field is None else getattr(cmd, field).request_id


def signed(value: int) -> int:
    """Pulsar's uint64 ids as the signed longs Java and pulsarlab use (-1 stays -1)."""
    return value - (1 << 64) if value >> 63 else value


def error_for(code: int, message: str) -> PulsarException:
    name = pb.ServerError.Name(code) if code in pb.ServerError.values() else "UnknownError"
    return exception_for(name, message)


def settle_reply(future: concurrent.futures.Future, frame: Frame) -> None:
    cmd = frame.command
    if future.done():
        return
    if cmd.type == _T.ERROR:
        future.set_exception(error_for(cmd.error.error, cmd.error.message))
    else:
        future.set_result(Command("SUCCESS", 0, {}))


def settle(future: concurrent.futures.Future, err: BaseException | None) -> None:
    if future.done():
        return
    if err is None:
        future.set_result(None)
    else:
        future.set_exception(err)
