"""Copy the tutorials shipped in the package (``pulsarlab.notebooks``) into a folder.

``pulsarlab tutorials [DIR]`` and ``%pulsar tutorials [DIR]`` both call :func:`copy_tutorials`:
the notebooks, their ``README.md`` and ``data/`` land in ``DIR`` (default
``./pulsarlab-tutorials``). A file already there is left alone when it is the shipped one,
and kept (reported, not overwritten) when it differs — a reader's edits or saved outputs —
unless ``force`` is given. Failures (a file where the folder should be, a read-only target)
are one-line :class:`TutorialsError`\\ s.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from .broker.errors import PulsarLabError

__all__ = ["DEFAULT_DIR", "CopyReport", "TutorialsError", "copy_tutorials", "shipped_files"]

DEFAULT_DIR = "pulsarlab-tutorials"
PACKAGE = "pulsarlab.notebooks"
_SHIPPED_SUFFIXES = (".ipynb", ".md", ".json")


class TutorialsError(PulsarLabError):
    """The tutorials could not be copied (one line, says what to do)."""


@dataclass
class CopyReport:
    """What :func:`copy_tutorials` did, file by file (paths relative to ``target``)."""

    target: Path
    copied: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed by the reader, not overwritten
    overwritten: list[str] = field(default_factory=list)  # changed, replaced under --force

    def lines(self) -> list[str]:
        """The summary a person reads: counts, the kept files, and how to open them."""
        out = [f"{len(self.copied) + len(self.overwritten)} file(s) copied to {self.target}"
               + (f", {len(self.unchanged)} already up to date" if self.unchanged else "")]
        if self.overwritten:
            out.append("overwritten (--force): " + ", ".join(self.overwritten))
        if self.kept:
            out.append("kept your changed copies (use --force to overwrite them): "
                       + ", ".join(self.kept))
        where = shlex.quote(str(self.target))
        out.append(f"open them with: jupyter lab {where}  (needs pip install "
                   "'pulsarlab[jupyter]'; start with 01-getting-started.ipynb)")
        out.append("to see the pictures again when you reopen a saved notebook, turn on "
                   "Settings > Widget Manager > Save Widget State Automatically")
        return out


def _walk(node: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found: list[tuple[str, Traversable]] = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        name = f"{prefix}{child.name}"
        if child.is_dir():
            if not child.name.startswith(("_", ".")):
                found += _walk(child, name + "/")
        elif child.name.endswith(_SHIPPED_SUFFIXES):
            found.append((name, child))
    return found


def shipped_files() -> list[tuple[str, Traversable]]:
    """``(relative path, resource)`` of every tutorial file in the installed package."""
    try:
        root = resources.files(PACKAGE)
    except ModuleNotFoundError:
        raise TutorialsError(
            "this pulsarlab has no tutorials inside (reinstall it: pip install pulsarlab)"
        ) from None
    files = _walk(root)
    if not any(name.endswith(".ipynb") for name, _ in files):
        raise TutorialsError("this pulsarlab has no tutorials inside (reinstall it)")
    return files


def copy_tutorials(target: str | os.PathLike[str] = DEFAULT_DIR, *,
                   force: bool = False) -> CopyReport:
    """Copy the shipped tutorials into ``target`` (created if missing); see the module doc."""
    target = Path(target).expanduser()
    report = CopyReport(target.absolute())
    if target.exists() and not target.is_dir():
        raise TutorialsError(f"{target} exists and is not a folder (choose another: "
                             f"pulsarlab tutorials DIR)")
    try:
        for name, resource in shipped_files():
            data = resource.read_bytes()
            path = target / name
            if path.is_file():
                if path.read_bytes() == data:
                    report.unchanged.append(name)
                    continue
                if not force:
                    report.kept.append(name)
                    continue
                report.overwritten.append(name)
            else:
                report.copied.append(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TutorialsError(
            f"cannot write the tutorials into {exc.filename or target}: {reason} "
            f"(choose a folder you can write: pulsarlab tutorials DIR)"
        ) from None
    return report
