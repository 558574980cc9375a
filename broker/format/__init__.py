"""The stored and wire format both the broker and the client read and write.

:mod:`.compression` (Pulsar's codecs, with a bounded inflate), :mod:`.batch` (batch
payloads in Pulsar's layout and pulsarlab's first one) and :mod:`.metadata` (Pulsar's
``MessageMetadata`` <-> the core's). Nothing here imports the server, the core or the
client: both sides import it.
"""
