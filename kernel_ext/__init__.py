"""pulsarlab: see and operate Apache Pulsar's messaging semantics from Jupyter.

The broker lives in ``pulsarlab.broker``, the widgets in ``pulsarlab.widgets``, Spark in
``pulsarlab.spark``; this package is also the IPython extension: ``%load_ext pulsarlab``
registers the ``%pulsar`` magics (auto-load: ``pulsarlab kernel install``, or
``c.InteractiveShellApp.extensions = ["pulsarlab"]`` in ``ipython_kernel_config.py``).
"""

from importlib import import_module

from .spark.worker_python import default_worker_python

# Spark's Python workers must run this venv's interpreter even when it is not activated.
default_worker_python()

__version__ = "0.1.0"

__all__ = [
    "Admin", "Broker", "BrokerService", "BrokerSettings", "MessageId", "__version__", "diagnose",
]

# -- client library (pulsar-client compatible), imported lazily ---------------------------

_CLIENT_NAMES = frozenset(
    {
        "Authentication", "AuthenticationBasic", "AuthenticationTLS", "AuthenticationToken",
        "BatchingType", "BytesSchema", "Client", "CompressionType", "Consumer",
        "ConsumerBatchReceivePolicy", "ConsumerCryptoFailureAction", "ConsumerDeadLetterPolicy",
        "ConsumerKeySharedPolicy", "ConsumerType", "HashingScheme", "InitialPosition",
        "KeySharedMode", "LoggerLevel", "Message", "PartitionsRoutingMode", "Producer",
        "ProducerAccessMode", "Reader", "RegexSubscriptionMode", "Result", "Schema",
        "StringSchema", "PulsarException", "Timeout", "AlreadyClosed", "ConsumerBusy",
        "NotConnected", "TopicNotFound", "SubscriptionNotFound",
        "CumulativeAcknowledgementNotAllowedError", "ProducerQueueIsFull", "MessageTooBig",
        "InvalidConfiguration", "ConsumerAssignError", "TopicTerminated", "Interrupted",
        "ProducerBusy", "NotAllowedError", "InvalidTopicName", "ConnectError",
        "OperationNotSupported", "UnknownError", "MultiplierRedeliveryBackoff",
        "AuthenticationError", "AuthorizationError", "ErrorGettingAuthenticationData",
    }
)


# Lazy (PEP 562): ``import pulsarlab.broker.client`` loads neither the server nor the core.
_EXPORTS = {
    "Admin": ".broker.admin", "Broker": ".broker.server", "BrokerService": ".broker",
    "BrokerSettings": ".broker", "MessageId": ".broker", "diagnose": ".diagnosis",
}


def __getattr__(name: str):
    if name in _CLIENT_NAMES:
        from .broker import client

        return getattr(client, name)
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'pulsarlab' has no attribute {name!r}")


__all__ += sorted(_CLIENT_NAMES)


# -- IPython extension: %load_ext pulsarlab -------------------------------------------------


def load_ipython_extension(ipython) -> None:
    """Register the ``%pulsar``/``%%pulsar`` magics (see :mod:`pulsarlab.magics`).

    A kernel that auto-loads the extension (``./scripts/run``, the ``pulsarlab`` kernelspec)
    also runs the tutorials' own ``%load_ext pulsarlab``: that second load is a silent no-op
    instead of IPython's "already loaded, use %reload_ext" note.
    """
    from .magics import load_ipython_extension as load

    load(ipython)
    manager = getattr(ipython, "extension_manager", None)
    if manager is not None and "load_extension" not in vars(manager):
        original = manager.load_extension

        def load_extension(module_str: str):
            if module_str == __name__ and module_str in manager.loaded:
                return None
            return original(module_str)

        manager.load_extension = load_extension


def unload_ipython_extension(ipython) -> None:
    """Stop the kernel's broker and everything the magics opened; remove the magics."""
    from .magics import unload_ipython_extension as unload

    unload(ipython)
    manager = getattr(ipython, "extension_manager", None)
    if manager is not None and "load_extension" in vars(manager):
        del manager.load_extension
