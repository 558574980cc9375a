"""A Jupyter kernelspec named ``pulsarlab`` whose kernels start with the magics loaded.

``pulsarlab kernel install [--user | --sys-prefix | --prefix DIR]`` writes a copy of
ipykernel's own kernelspec (same logos, same ``python -m ipykernel_launcher`` command with this
interpreter) plus ``--ext=pulsarlab``, ipykernel's alias for
``InteractiveShellApp.extra_extensions``, so ``%pulsar`` is ready in every notebook that picks
"Python 3 (pulsarlab)". ``pulsarlab kernel uninstall`` removes it.

The other opt-in way to auto-load, for every IPython kernel of a profile or environment, is
one line in an ``ipython_kernel_config.py`` (``$IPYTHONDIR/profile_default/`` or
``{sys.prefix}/etc/ipython/``)::

    c.InteractiveShellApp.extensions = ["pulsarlab"]

Only this module's functions import ``ipykernel``/``jupyter_client``, so the command line
works without them until ``kernel`` is used.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "CONFIG_LINE",
    "DISPLAY_NAME",
    "EXTRA_ARGUMENTS",
    "KERNEL_NAME",
    "add_kernel_commands",
    "install",
    "kernel_argv",
    "uninstall",
]

KERNEL_NAME = "pulsarlab"
DISPLAY_NAME = "Python 3 (pulsarlab)"
CONFIG_LINE = 'c.InteractiveShellApp.extensions = ["pulsarlab"]'


EXTRA_ARGUMENTS = ["--ext=pulsarlab"]


def _python_arguments() -> list[str]:
    # what `python -m ipykernel install` does: the debugger wants frozen modules off
    return ["-Xfrozen_modules=off"] if platform.python_implementation() == "CPython" else []


def kernel_argv() -> list[str]:
    """The kernel command: this interpreter's ipykernel with the extension loaded."""
    from ipykernel.kernelspec import get_kernel_dict

    return get_kernel_dict(EXTRA_ARGUMENTS, _python_arguments())["argv"]


def install(
    *,
    user: bool = False,
    sys_prefix: bool = False,
    prefix: str | None = None,
    name: str = KERNEL_NAME,
    display_name: str = DISPLAY_NAME,
) -> str:
    """Install the kernelspec and return the directory it went to.

    ``user``: the user's Jupyter data dir; ``sys_prefix``: this environment
    (``{sys.prefix}/share/jupyter/kernels``); ``prefix``: ``{prefix}/share/jupyter/kernels``;
    none of them: the system-wide location (as ``jupyter kernelspec install`` does).
    """
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager

    if sum((bool(user), bool(sys_prefix), prefix is not None)) > 1:
        raise ValueError("choose one of --user, --sys-prefix and --prefix")
    if sys_prefix:
        prefix = sys.prefix
    staging = Path(tempfile.mkdtemp(prefix="pulsarlab-kernelspec-")) / name
    try:
        path = write_kernel_spec(
            staging, overrides={"display_name": display_name},
            extra_arguments=EXTRA_ARGUMENTS, python_arguments=_python_arguments(),
        )
        return KernelSpecManager().install_kernel_spec(
            path, kernel_name=name, user=user, prefix=prefix
        )
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)


def uninstall(name: str = KERNEL_NAME) -> str:
    """Remove the kernelspec ``name`` wherever Jupyter finds it; return where it was."""
    from jupyter_client.kernelspec import KernelSpecManager

    try:
        return KernelSpecManager().remove_kernel_spec(name)
    except KeyError:
        raise ValueError(f"no kernelspec named {name!r} is installed") from None


# -- command line ---------------------------------------------------------------------------

def add_kernel_commands(commands: Any) -> None:
    """Register ``pulsarlab kernel install|uninstall`` on the main parser's subcommands."""
    kernel = commands.add_parser(
        "kernel", help="install a Jupyter kernel that loads the %%pulsar magics",
        description="A 'pulsarlab' kernelspec starts ipykernel with --ext=pulsarlab. "
                    f"Alternatively put `{CONFIG_LINE}` in an ipython_kernel_config.py.",
    )
    ops = kernel.add_subparsers(dest="kernel_command", required=True)
    inst = ops.add_parser("install", help="install the kernelspec")
    where = inst.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for the current user")
    where.add_argument("--sys-prefix", action="store_true",
                       help="into this environment (sys.prefix)")
    where.add_argument("--prefix", help="under PREFIX/share/jupyter/kernels")
    inst.add_argument("--name", default=KERNEL_NAME, help=f"kernel name (default {KERNEL_NAME})")
    inst.add_argument("--display-name", default=DISPLAY_NAME,
                      help=f"name shown in Jupyter (default {DISPLAY_NAME!r})")
    inst.set_defaults(func=_run_kernel)
    rm = ops.add_parser("uninstall", help="remove the kernelspec")
    rm.add_argument("--name", default=KERNEL_NAME)
    rm.set_defaults(func=_run_kernel)


def _run_kernel(args: argparse.Namespace) -> int:
    try:
        if args.kernel_command == "install":
            path = install(user=args.user, sys_prefix=args.sys_prefix, prefix=args.prefix,
                           name=args.name, display_name=args.display_name)
            print(f"installed kernelspec {args.name!r} in {path}")
        else:
            path = uninstall(args.name)
            print(f"removed kernelspec {args.name!r} from {path}")
    except ImportError as exc:
        print(f"pulsarlab: error: {exc}; install the Jupyter extra: "
              "pip install 'pulsarlab[jupyter]'", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"pulsarlab: error: {exc}", file=sys.stderr)
        return 2
    return 0
