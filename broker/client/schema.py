"""Minimal schemas: ``BytesSchema`` (the default) and ``StringSchema``, with official names.

A schema turns what the application passes to ``send`` into bytes and the payload back into
``Message.value()``. Any object with ``encode(obj) -> bytes`` and ``decode(bytes)`` works.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BytesSchema", "Schema", "StringSchema"]


class Schema:
    """Base class: identity on bytes."""

    def encode(self, obj: Any) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BytesSchema(Schema):
    def encode(self, obj: Any) -> bytes:
        if not isinstance(obj, bytes | bytearray | memoryview):
            raise ValueError(
                f"Argument content is expected to be of type 'bytes' and not "
                f"'{type(obj).__name__}'"
            )
        return bytes(obj)

    def decode(self, data: bytes) -> bytes:
        return data


class StringSchema(Schema):
    def encode(self, obj: Any) -> bytes:
        if not isinstance(obj, str):
            raise ValueError(
                f"Argument content is expected to be of type 'str' and not '{type(obj).__name__}'"
            )
        return obj.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")
