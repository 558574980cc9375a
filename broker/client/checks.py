"""Argument checks that fail the way the official client does: ``ValueError`` with its text."""

from __future__ import annotations

from typing import Any


def check_type(var_type: type | tuple[type, ...], var: Any, name: str) -> None:
    """``ValueError("Argument X is expected to be of type 'T' and not 'U'")`` on a mismatch."""
    if not isinstance(var, var_type):
        raise ValueError(
            f"Argument {name} is expected to be of type '{_name(var_type)}' and not "
            f"'{type(var).__name__}'"
        )


def check_type_or_none(var_type: type | tuple[type, ...], var: Any, name: str) -> None:
    """Like :func:`check_type`, but ``None`` is accepted."""
    if var is not None and not isinstance(var, var_type):
        raise ValueError(
            f"Argument {name} is expected to be either None or of type '{_name(var_type)}'"
        )


def _name(var_type: type | tuple[type, ...]) -> str:
    if isinstance(var_type, tuple):
        return "' or '".join(t.__name__ for t in var_type)
    return var_type.__name__
