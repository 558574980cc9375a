"""Lets PySpark find pulsarlab's ``pulsar`` data source by itself.

PySpark (>= 4.0) imports every top-level module whose name starts with ``pyspark_`` at the
first data-source lookup of a session and registers its ``DefaultSource`` under
``DefaultSource.name()``. This module only re-exports the class; see :mod:`pulsarlab.spark`.
"""

from pulsarlab.spark.datasource import PulsarDataSource as DefaultSource

__all__ = ["DefaultSource"]
