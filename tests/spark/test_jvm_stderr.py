"""The driver JVM's start-up notices stay out of notebook cells; its other lines do not."""

from __future__ import annotations

import io

from pulsarlab.spark.gateway import copy_stderr


def test_incubator_notice_is_dropped_and_everything_else_copied():
    jvm = io.BytesIO(
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"12:00:01 ERROR SparkContext: something real\n"
        b"caf\xc3\xa9\n"
    )
    out = io.StringIO()
    copy_stderr(jvm, out)
    assert out.getvalue() == "12:00:01 ERROR SparkContext: something real\ncafé\n"
