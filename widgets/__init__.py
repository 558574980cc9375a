"""Live ipywidgets + plotly views of Pulsar's messaging semantics.

Every view takes a *source*: :class:`WhatIf` drives the real broker core on a simulated
clock (buttons add/remove consumers, publish, ack, nack, advance time), and
:class:`LiveBinding` follows a running broker's event stream and stats from one daemon
thread, redrawing at most ~10 frames a second. The same view code serves both::

    from pulsarlab.widgets import WhatIf, HashRangeView
    w = WhatIf("Key_Shared", key_shared_use_consistent_hashing=False)
    view = HashRangeView(w, keys=["Order-1", "Order-2"])
    w.add_consumer("C1"); w.add_consumer("C2")
    view   # displays itself

:class:`StatsView` draws a ``pulsar-admin topics stats`` dict from a real cluster.
"""

from .base import View
from .compare import CompareView
from .controls import WhatIfControls
from .cursor import CursorView
from .dashboard import Dashboard
from .failover import FailoverView
from .flow import FlowView
from .hash_range import HashRangeView
from .hash_ring import HashRingView
from .keys import KeyInfo, key_info
from .live import LiveBinding
from .source import EventLog, Palette, Snapshot, Source
from .stats_view import StatsView
from .throttle import FrameThrottle
from .timeline import MarkKind, RedeliveryTimeline, TimelineModel, register_kind
from .whatif import WhatIf

VIEWS: dict[str, type[View]] = {
    "ranges": HashRangeView,
    "ring": HashRingView,
    "failover": FailoverView,
    "cursor": CursorView,
    "timeline": RedeliveryTimeline,
    "flow": FlowView,
    "dashboard": Dashboard,
}
"""View classes by the short name a ``%pulsar show NAME`` magic can use."""

__all__ = [
    "VIEWS",
    "CompareView",
    "CursorView",
    "Dashboard",
    "EventLog",
    "FailoverView",
    "FlowView",
    "FrameThrottle",
    "HashRangeView",
    "HashRingView",
    "KeyInfo",
    "LiveBinding",
    "MarkKind",
    "Palette",
    "RedeliveryTimeline",
    "Snapshot",
    "Source",
    "StatsView",
    "TimelineModel",
    "View",
    "WhatIf",
    "WhatIfControls",
    "key_info",
    "register_kind",
]
