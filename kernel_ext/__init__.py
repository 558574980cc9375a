"""pulsarlab: see and operate Apache Pulsar's messaging semantics from Jupyter.

The broker lives in ``pulsarlab.broker``, the widgets in ``pulsarlab.widgets``; this
package is also the IPython extension (``%load_ext pulsarlab``) once the magics land.
"""

from .broker import BrokerService, BrokerSettings, MessageId
from .broker.admin import Admin
from .broker.server import Broker

__version__ = "0.1.0"

__all__ = ["Admin", "Broker", "BrokerService", "BrokerSettings", "MessageId", "__version__"]
