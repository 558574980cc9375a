"""Which Python Spark's workers run, and a clear error when it cannot import pulsarlab.

PySpark starts its Python workers (the data-source lookup, planning and ``read()``) with
``$PYSPARK_PYTHON`` (or ``spark.pyspark.python``), else the ``python3`` found on ``PATH`` —
not the interpreter of the notebook or script. In a virtual environment that was not
activated, that ``python3`` has no pulsarlab: the lookup then fails with
``DATA_SOURCE_NOT_FOUND`` and, after an explicit ``register``, every read fails with
``ModuleNotFoundError: No module named 'pulsarlab'`` deep inside a worker traceback.

:func:`check_worker_python` tries the workers' interpreter once (cached) and raises one line
naming the fix instead.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import Any

from .options import PulsarSparkError

__all__ = ["check_worker_python", "default_worker_python", "worker_python"]

_PROBE = "import pulsarlab.spark.datasource"


def worker_python(spark: Any = None) -> str:
    """The interpreter Spark's Python workers run (as configured, not resolved)."""
    configured = None
    if spark is not None:
        try:
            configured = spark.conf.get("spark.pyspark.python", None)
        except Exception:  # a session without that setting (or a stand-in)
            configured = None
    return configured or os.environ.get("PYSPARK_PYTHON") or "python3"


def default_worker_python() -> str | None:
    """Point ``PYSPARK_PYTHON`` at this interpreter when it is unset and the ``python3`` on
    ``PATH`` is not this virtual environment's (a venv used without activating it, as pip
    users do): Spark's workers then import the same pulsarlab as the driver. Returns what it
    set, or ``None`` (already set, not in a venv, or the venv is the one on ``PATH``).

    ``import pulsarlab`` and ``%load_ext pulsarlab`` call it, so a plain
    ``SparkSession.builder.getOrCreate()`` after them finds ``format("pulsar")``.
    """
    if os.environ.get("PYSPARK_PYTHON") or sys.prefix == sys.base_prefix:
        return None
    on_path = shutil.which("python3")
    prefix = os.path.join(os.path.abspath(sys.prefix), "")
    if on_path and os.path.abspath(on_path).startswith(prefix):
        return None
    os.environ["PYSPARK_PYTHON"] = sys.executable
    return sys.executable


@functools.lru_cache(maxsize=8)
def _problem(executable: str) -> str | None:
    resolved = shutil.which(executable) or executable
    if os.path.realpath(resolved) == os.path.realpath(sys.executable):
        return None
    try:
        done = subprocess.run([resolved, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run it ({exc})"
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit code {done.returncode}"


def check_worker_python(spark: Any = None) -> None:
    """Raise :class:`PulsarSparkError` naming the fix if the workers cannot import pulsarlab."""
    executable = worker_python(spark)
    problem = _problem(executable)
    if problem is None:
        return
    raise PulsarSparkError(
        f"Spark's Python workers run {executable!r}, which cannot import pulsarlab "
        f"({problem}): start Spark with PYSPARK_PYTHON={sys.executable} in the environment "
        "(or .config('spark.pyspark.python', sys.executable) before getOrCreate()), or "
        "start it with pulsarlab.spark.get_or_create_session()"
    )
