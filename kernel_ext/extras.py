"""Optional dependencies: which ``pulsarlab[extra]`` brings a module, and a clear error.

pulsarlab's core needs only its default dependencies; Jupyter, Spark and the official
``pulsar-client`` come with the ``jupyter``, ``spark`` and ``ops`` extras. Code that needs
one calls :func:`require`, which raises :class:`MissingDependency` — a one-line message
naming the ``pip install`` that fixes it — instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .broker.errors import PulsarLabError

__all__ = ["EXTRA_OF", "MissingDependency", "install_hint", "require"]

EXTRA_OF = {
    "pulsar": "ops", "_pulsar": "ops", "fastavro": "ops",
    "pyspark": "spark", "py4j": "spark", "pyarrow": "spark", "pandas": "spark",
    "IPython": "jupyter", "ipykernel": "jupyter", "ipywidgets": "jupyter",
    "plotly": "jupyter", "anywidget": "jupyter", "numpy": "jupyter", "jupyterlab": "jupyter",
}
"""Top-level module name → the extra that installs it."""


class MissingDependency(PulsarLabError, ModuleNotFoundError):
    """An optional dependency is not installed; the message says which extra brings it."""


def install_hint(module: str | None) -> str | None:
    """``pip install 'pulsarlab[extra]'`` for a module an extra brings, else ``None``."""
    extra = EXTRA_OF.get((module or "").split(".")[0])
    return f"pip install 'pulsarlab[{extra}]'" if extra else None


def require(module: str, needed_for: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingDependency` saying what needs it and how to
    install it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        hint = install_hint(missing) or install_hint(module)
        text = f"{needed_for} needs {missing!r}, which is not installed"
        raise MissingDependency(f"{text}: {hint}" if hint else text, name=missing) from None
