"""The pulsarlab wire protocol, version 1: ZeroMQ multipart frames between client and broker.

Transport: each client owns one DEALER socket connected to the broker's ROUTER socket
(the ROUTER prepends the peer identity frame; it is not part of what follows). Every
message, in either direction, is::

    frame 0   header: a msgpack map {"v": 1, "cmd": NAME, "rid": REQUEST_ID, ...fields}
    frame 1.. payload frames (raw bytes, never re-encoded): one per entry for SEND and
              MESSAGE; none for every other command

``rid`` pairs a request with its reply (``SUCCESS``, ``ERROR`` or a command-specific
answer); pushes from the broker (``MESSAGE``, ``SEND_RECEIPT``, ``SEND_RECEIPTS``,
``ACTIVE_CONSUMER_CHANGE``, ``CLOSE_CONSUMER``, ``CLOSE_PRODUCER``, ``REACHED_END_OF_TOPIC``,
``PING``) carry ``rid`` 0 or the request
they answer. Positions are ``[ledger_id, entry_id]`` lists; message ids are
``[ledger_id, entry_id, partition, batch_index]``.

Every SEND gets exactly one receipt (or ``SEND_ERROR``), in send order per producer. When
one group commit confirms several sends of one producer, the broker packs their receipts
into one ``SEND_RECEIPTS`` message (``receipts``: ``[[sequence_id, ledger_id, entry_id,
partition], ...]``, in order); :func:`split_receipts` turns it back into ``SEND_RECEIPT``
commands. A lone receipt still travels as ``SEND_RECEIPT``.

The broker also binds a PUB socket for the event stream: two frames, the event type
(utf-8) and a msgpack map (:meth:`BrokerEvent.to_dict`), so subscribers can filter by type.
It cannot read a CONNECT, so with authentication on it binds on loopback only and is a
ZeroMQ PLAIN server: a subscriber logs in with username ``token`` and its token as password
(checked by the broker's ZAP handler, :mod:`.zap`; a superuser role when authorization is on).

Connection setup and security: a client's first message is ``CONNECT`` (``client_version``,
plus ``auth_token`` when the broker has authentication on: a signed token whose subject is
the client's role, see :mod:`.tokens`); the broker answers ``CONNECTED`` (server and protocol
versions, ``max_message_size``). With authentication on, a first message that is anything
but a ``CONNECT`` with a valid token gets exactly one ``ERROR`` with code
``AuthenticationError`` (naming what is wrong, never a topic), and every later message from
that peer is dropped unanswered: a ROUTER cannot close one peer's connection, so the broker
ignores it (for two keep-alive periods, then a new message gets one new ``ERROR``). A
``CONNECT`` past ``max_connections`` is refused the same way with ``ConnectError``. With
authorization on, opening a producer needs the ``produce`` permission on the topic's
namespace, subscribing ``consume``, lookups either, ``ADMIN`` a superuser role (errors:
``AuthorizationError``). With ``curve_secret_key_file`` set the ROUTER is a CurveZMQ server:
every frame is encrypted, and a client without the broker's public key gets no answer.
An authenticated session is tied to its TCP connection, not just to its routing id (which a
peer may choose): ZeroMQ ignores a second peer claiming a live id, and the session ends when
its connection closes, before a later peer with that id is read.

Validation: :func:`decode` checks the header is a msgpack map of at most
``MAX_HEADER_SIZE`` bytes, the version, that the command is known, that each required
field is present with the right type, and the number of payload frames. Anything else
raises :class:`ProtocolError` with a one-line reason; the broker answers it with ``ERROR``
(or drops the frame with a log line when it cannot even find a request id) and goes on.
The broker's hot path unpacks a header once (:func:`unpack_header`) and asks
:func:`send_fields` whether it is a SEND with exactly its fields and their exact types;
anything else goes through :func:`validate`, the same checks as :func:`decode`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack

PROTOCOL_VERSION = 1
MAX_HEADER_SIZE = 1 << 20

_INT = (int,)
_STR = (str,)
_BOOL = (bool,)
_LIST = (list,)
_DICT = (dict,)
_OPT_INT = (int, type(None))
_OPT_STR = (str, type(None))
_OPT_LIST = (list, type(None))
_OPT_DICT = (dict, type(None))
_OPT_BYTES = (bytes, type(None))


@dataclass(frozen=True, slots=True)
class Spec:
    """The fields a command must or may carry, and how many payload frames follow."""

    required: dict[str, tuple[type, ...]] = field(default_factory=dict)
    optional: dict[str, tuple[type, ...]] = field(default_factory=dict)
    payloads: str = "none"  # "none", "one" or "any"


# Client -> broker.
CLIENT_COMMANDS: dict[str, Spec] = {
    "CONNECT": Spec(
        {"client_version": _STR},
        {"auth_token": _OPT_STR, "auth_method_name": _OPT_STR, "auth_data": _OPT_STR},
    ),
    "PING": Spec(),
    "PONG": Spec(),
    # access_mode: Pulsar's ProducerAccessMode name ("Shared" when absent); topic_epoch:
    # the epoch a re-creating exclusive producer was given. A WaitForExclusive producer's
    # PRODUCER is answered when it gets the topic (no time-out on the client's side).
    "PRODUCER": Spec(
        {"topic": _STR, "producer_id": _INT},
        {"producer_name": _OPT_STR, "access_mode": _OPT_STR, "topic_epoch": _OPT_INT},
    ),
    "SEND": Spec(
        {"producer_id": _INT, "sequence_id": _INT, "metadata": _DICT}, payloads="one"
    ),
    "CLOSE_PRODUCER": Spec({"producer_id": _INT}),
    "SUBSCRIBE": Spec(
        {"topic": _STR, "subscription": _STR, "consumer_id": _INT, "sub_type": _STR},
        {
            "consumer_name": _OPT_STR,
            "initial_position": _STR,  # "latest" | "earliest"
            "durable": _BOOL,
            "priority_level": _INT,
            "key_shared_mode": _OPT_STR,  # "AUTO_SPLIT" | "STICKY"
            "sticky_ranges": _OPT_LIST,
            "allow_out_of_order_delivery": _BOOL,
            "key_hash_ranges": _OPT_LIST,
            "start_message_id": _OPT_LIST,
            "start_message_id_inclusive": _BOOL,
            "batch_index_ack_enabled": _BOOL,
            "is_reader": _BOOL,
        },
    ),
    "FLOW": Spec({"consumer_id": _INT, "permits": _INT}),
    "ACK": Spec(
        {"consumer_id": _INT, "positions": _LIST},
        # ack_sets: [[ledger, entry, unacked_bits, batch_size], ...]
        {"cumulative": _BOOL, "ack_sets": _OPT_LIST},
    ),
    # reason: "consumer_request" | "nack" | "ack_timeout"; requested_at: per position, when
    # the client nacked it or saw it time out (ms), for the event stream.
    "REDELIVER_UNACKNOWLEDGED": Spec(
        {"consumer_id": _INT},
        {"positions": _OPT_LIST, "reason": _OPT_STR, "requested_at": _OPT_LIST},
    ),
    "CLOSE_CONSUMER": Spec({"consumer_id": _INT}),
    "UNSUBSCRIBE": Spec({"consumer_id": _INT}),
    # SEEK: message_id [ledger, entry, partition, batch] or publish_time ms. The broker
    # disconnects the subscription's consumers (CLOSE_CONSUMER, reason "seek"), then answers
    # SUCCESS with the [ledger, entry] read next: the client subscribes again from there.
    "SEEK": Spec({"consumer_id": _INT}, {"message_id": _OPT_LIST, "publish_time": _OPT_INT}),
    "GET_LAST_MESSAGE_ID": Spec({"consumer_id": _INT}),
    "PARTITIONED_METADATA": Spec({"topic": _STR}),
    "GET_TOPICS": Spec({"namespace": _STR}, {"include_system": _BOOL}),
    # ADMIN: op is an Admin method name (e.g. "topics.get_stats"), args its keyword args.
    "ADMIN": Spec({"op": _STR}, {"args": _OPT_DICT}),
}

# Broker -> client.
BROKER_COMMANDS: dict[str, Spec] = {
    "CONNECTED": Spec(
        {"server_version": _STR, "protocol_version": _INT}, {"max_message_size": _INT}
    ),
    "SUCCESS": Spec({}, {"result": (object,)}),
    "ERROR": Spec({"code": _STR, "message": _STR}),
    "PING": Spec(),
    "PONG": Spec(),
    "PRODUCER_SUCCESS": Spec(
        {"producer_id": _INT, "producer_name": _STR, "last_sequence_id": _INT},
        {"topic_epoch": _OPT_INT},
    ),
    "SEND_RECEIPT": Spec({"producer_id": _INT, "sequence_id": _INT, "message_id": _LIST}),
    # receipts: [[sequence_id, ledger, entry, partition], ...] for one producer, in order.
    "SEND_RECEIPTS": Spec({"producer_id": _INT, "receipts": _LIST}),
    "SEND_ERROR": Spec(
        {"producer_id": _INT, "sequence_id": _INT, "code": _STR, "message": _STR}
    ),
    # entries: [[ledger, entry, partition, redelivery_count, ack_set_or_None], ...],
    # one payload frame per entry, in the same order.
    "MESSAGE": Spec({"consumer_id": _INT, "entries": _LIST}, payloads="any"),
    "ACTIVE_CONSUMER_CHANGE": Spec({"consumer_id": _INT, "is_active": _BOOL}),
    "CLOSE_CONSUMER": Spec({"consumer_id": _INT}, {"reason": _OPT_STR}),
    # reason "terminated": the topic was terminated, the producer can send no more.
    "CLOSE_PRODUCER": Spec({"producer_id": _INT}, {"reason": _OPT_STR}),
    # The consumer's topic is terminated and its subscription consumed all of it.
    "REACHED_END_OF_TOPIC": Spec({"consumer_id": _INT}),
}


class ProtocolError(Exception):
    """A frame that does not follow this protocol; ``request_id`` is 0 when unknown."""

    def __init__(self, message: str, request_id: int = 0) -> None:
        super().__init__(message)
        self.request_id = request_id


@dataclass(slots=True)
class Command:
    """One decoded protocol message."""

    name: str
    request_id: int
    fields: dict[str, Any]
    payloads: list[Any] = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


def encode(name: str, request_id: int = 0, payloads: Sequence[Any] = (), **fields: Any) -> list:
    """Frames for one message: the msgpack header, then the payload frames unchanged."""
    header = {"v": PROTOCOL_VERSION, "cmd": name, "rid": request_id}
    header.update(fields)
    if payloads:
        return [_pack(header), *payloads]
    return [_pack(header)]


_packers = threading.local()


def pack_header(header: dict[str, Any]) -> bytes:
    """The header frame for a complete map (``v``, ``cmd``, ``rid`` and the fields): what
    :func:`encode` does, for hot paths that build the map themselves."""
    try:
        pack = _packers.pack
    except AttributeError:
        # One packer per thread: making a packer costs more than packing a small header.
        pack = _packers.pack = msgpack.Packer(use_bin_type=True).pack
    return pack(header)


_pack = pack_header


def decode(frames: Sequence[Any], specs: dict[str, Spec]) -> Command:
    """Validate and decode one message (``frames`` without the ROUTER identity)."""
    if not frames:
        raise ProtocolError("empty message: expected a header frame")
    return validate(unpack_header(frames[0]), frames, specs)


def unpack_header(raw: Any) -> Any:
    """The msgpack value of a header frame (bytes or a ``zmq.Frame``), unchecked but for
    its size and encoding: :func:`validate` or :func:`send_fields` check the rest."""
    if type(raw) is not bytes:
        raw = getattr(raw, "bytes", raw)  # a zmq.Frame's copy
    if len(raw) > MAX_HEADER_SIZE:
        raise ProtocolError(f"header frame of {len(raw)} bytes exceeds {MAX_HEADER_SIZE}")
    try:
        return _unpackb(raw)  # msgpack's defaults: raw=False, strict_map_key=True
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError(f"header frame is not valid msgpack ({type(exc).__name__})") from None


_unpackb = msgpack.unpackb


def send_fields(header: Any) -> tuple[int, int, int, dict] | None:
    """``(request_id, producer_id, sequence_id, metadata)`` when ``header`` (from
    :func:`unpack_header`) is a SEND header carrying exactly its fields with their exact
    types: the hot path, checked in a few steps. ``None`` for anything else, which
    :func:`validate` then accepts or names the problem of."""
    if type(header) is not dict or len(header) != 6:
        return None
    get = header.get
    if get("cmd") != "SEND" or get("v") != PROTOCOL_VERSION:
        return None
    request_id, producer_id = get("rid"), get("producer_id")
    sequence_id, metadata = get("sequence_id"), get("metadata")
    if (
        type(request_id) is int and request_id >= 0 and type(producer_id) is int
        and type(sequence_id) is int and type(metadata) is dict
    ):
        return request_id, producer_id, sequence_id, metadata
    return None


def validate(header: Any, frames: Sequence[Any], specs: dict[str, Spec]) -> Command:
    """Check an unpacked header against ``specs`` (the header frame first in ``frames``,
    the payload frames after it) and build the command; the map becomes its fields."""
    if not isinstance(header, dict):
        raise ProtocolError(f"header must be a msgpack map, not {type(header).__name__}")
    # The map is ours: what is left after taking v, cmd and rid out are the fields.
    fields = header
    request_id = fields.pop("rid", 0)
    if type(request_id) is not int or request_id < 0:
        raise ProtocolError(f"request id must be an int >= 0, not {request_id!r}")
    version = fields.pop("v", None)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"unsupported protocol version {version!r} (this broker speaks {PROTOCOL_VERSION})",
            request_id,
        )
    name = fields.pop("cmd", None)
    spec = specs.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ProtocolError(f"unknown command {name!r}", request_id)
    for key, types in spec.required.items():
        try:
            value = fields[key]
        except KeyError:
            raise ProtocolError(f"{name} is missing field {key!r}", request_id) from None
        if type(value) not in types:  # exact type: the common case; _check decides the rest
            _check(name, key, value, types, request_id)
    if spec.optional:
        for key, types in spec.optional.items():
            if key in fields:
                _check(name, key, fields[key], types, request_id)
    payloads = frames[1:] if type(frames) is list else list(frames[1:])
    if spec.payloads == "none" and payloads:
        raise ProtocolError(f"{name} takes no payload frames, got {len(payloads)}", request_id)
    if spec.payloads == "one" and len(payloads) != 1:
        raise ProtocolError(f"{name} takes exactly one payload frame, got {len(payloads)}",
                            request_id)
    return Command(name, request_id, fields, payloads)


def _check(name: str, key: str, value: Any, types: tuple[type, ...], request_id: int) -> None:
    if object in types:
        return
    wrong_bool = isinstance(value, bool) and bool not in types
    if wrong_bool or not isinstance(value, types):
        expected = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        raise ProtocolError(
            f"{name} field {key!r} must be {expected}, not {type(value).__name__}", request_id
        )


def split_receipts(command: Command) -> list[Command]:
    """The ``SEND_RECEIPT`` commands packed in a ``SEND_RECEIPTS`` one, in order.

    Raises :class:`ProtocolError` if an item is not ``[sequence_id, ledger, entry,
    partition]`` (four ints).
    """
    producer_id = command.fields["producer_id"]
    out = []
    for item in command.fields["receipts"]:
        if (
            type(item) is not list or len(item) != 4
            or not all(type(v) is int for v in item)
        ):
            raise ProtocolError(
                f"SEND_RECEIPTS items are [sequence_id, ledger, entry, partition], not {item!r}"
            )
        sequence_id, ledger_id, entry_id, partition = item
        out.append(Command("SEND_RECEIPT", command.request_id, {
            "producer_id": producer_id, "sequence_id": sequence_id,
            "message_id": [ledger_id, entry_id, partition, -1],
        }))
    return out


def position_list(value: Any, what: str = "position") -> tuple[int, int]:
    """Check a ``[ledger, entry]`` list from a frame and return it as a position tuple."""
    if type(value) is list and len(value) >= 2 and type(value[0]) is int and type(value[1]) is int:
        return (value[0], value[1])  # the common case, checked without a generator
    if (
        not isinstance(value, list | tuple)
        or len(value) < 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value[:2])
    ):
        raise ProtocolError(f"{what} must be [ledger_id, entry_id], not {value!r}")
    return (value[0], value[1])
