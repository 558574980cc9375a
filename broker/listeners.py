"""Advertised listeners (PIP-61): which broker URL a LOOKUP answers, by listener name.

``advertised_listeners`` (broker.conf's ``advertisedListeners``) names each listener's
``pulsar://`` and/or ``pulsar+ssl://`` URL, e.g. ``internal:pulsar://10.0.0.5:6650,
external:pulsar+ssl://broker.example.com:6651``; ``internal_listener_name`` is the one a
lookup without a name answers (the first listener when empty). A client's ``listener_name``
travels in LOOKUP's ``advertised_listener_name`` (or, over REST, ``?listenerName=`` /
``X-Pulsar-ListenerName``); a name the broker does not advertise gets Pulsar's
``ServiceNotReady`` "the broker do not have NAME listener". Without advertised listeners a
lookup answers the broker's own pulsar:// and pulsar+ssl:// URLs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidArgument, ServiceNotReady

__all__ = ["AdvertisedListeners", "Listener"]

_SCHEMES = ("pulsar://", "pulsar+ssl://")


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener's URLs (``None`` where it has none)."""

    name: str
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None


class AdvertisedListeners:
    """The listeners a lookup may answer with."""

    def __init__(self, listeners: dict[str, Listener], internal: Listener) -> None:
        self.listeners = listeners
        self.internal = internal

    @classmethod
    def parse(
        cls, spec: str, internal_name: str = "", *, url: str | None = None,
        url_tls: str | None = None,
    ) -> AdvertisedListeners:
        """Listeners from ``advertised_listeners``; the broker's own ``url``/``url_tls``
        when ``spec`` is empty. A malformed entry is an :class:`InvalidArgument`."""
        found: dict[str, Listener] = {}
        for item in (part.strip() for part in spec.split(",")):
            if not item:
                continue
            name, sep, address = item.partition(":")
            if not sep or not name or not address.startswith(_SCHEMES):
                raise InvalidArgument(
                    f"advertised_listeners entry {item!r} must look like "
                    "name:pulsar://host:port or name:pulsar+ssl://host:port"
                )
            listener = found.get(name, Listener(name))
            tls = address.startswith("pulsar+ssl://")
            if (listener.broker_service_url_tls if tls else listener.broker_service_url):
                raise InvalidArgument(
                    f"advertised_listeners: listener {name!r} has more than one "
                    f"{'pulsar+ssl' if tls else 'pulsar'}:// URL"
                )
            found[name] = Listener(
                name,
                listener.broker_service_url if tls else address,
                address if tls else listener.broker_service_url_tls,
            )
        if not found:
            if internal_name:
                raise InvalidArgument(
                    "internal_listener_name needs advertised_listeners that name it"
                )
            return cls({}, Listener("", url, url_tls))
        name = internal_name or next(iter(found))
        if name not in found:
            raise InvalidArgument(
                f"internal_listener_name {name!r} is not one of advertised_listeners "
                f"({', '.join(found)})"
            )
        return cls(found, found[name])

    def lookup(self, name: str = "") -> Listener:
        """The listener a LOOKUP for ``name`` answers (the internal one for no name)."""
        if not name:
            return self.internal
        listener = self.listeners.get(name)
        if listener is None:
            raise ServiceNotReady(f"the broker do not have {name} listener")
        return listener
