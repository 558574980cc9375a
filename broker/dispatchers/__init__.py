"""Dispatchers: which consumer of a subscription gets which entry."""

from .base import Dispatcher, RedeliveryTracker
from .key_shared import KeySharedDispatcher
from .shared import SharedDispatcher
from .single_active import SingleActiveConsumerDispatcher

__all__ = [
    "Dispatcher",
    "KeySharedDispatcher",
    "RedeliveryTracker",
    "SharedDispatcher",
    "SingleActiveConsumerDispatcher",
]
