"""The brokers running on this machine, by ZeroMQ service URL: where their admin REST API is.

``Admin("zmq://host:port")`` finds the web service of a broker started on this machine:
``Broker.start`` registers it in this process and in a small file of this user's runtime
directory (one per ``host:port``, with the broker's pid), so other processes of the user —
Spark's Python workers, a kernel whose broker runs beside it — find it too. A file whose
process is gone is ignored (and removed); ``Broker.stop`` removes its own. Any other broker
is reached by its web URL.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

_lock = threading.Lock()
_web_urls: dict[str, str] = {}


def _key(service_url: str) -> str:
    """``zmq://host:port`` and ``tcp://host:port`` name the same endpoint."""
    parts = urlsplit(service_url)
    return parts.netloc or service_url


def _directory() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"pulsarlab-{os.getuid()}" / "brokers"


def _file(service_url: str) -> Path:
    return _directory() / (_key(service_url).replace(":", "_").replace("/", "_") + ".json")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def register(service_url: str, web_url: str) -> None:
    """Remember that ``service_url``'s broker (this process's) serves its admin REST API at
    ``web_url``; a failure to write the file only keeps it from other processes."""
    with _lock:
        _web_urls[_key(service_url)] = web_url
    path = _file(service_url)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"web_url": web_url, "pid": os.getpid()}))
        temporary.replace(path)
    except OSError:
        pass


def unregister(service_url: str) -> None:
    with _lock:
        _web_urls.pop(_key(service_url), None)
    path = _file(service_url)
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def web_url_for(service_url: str) -> str | None:
    """The admin REST API of the broker at ``service_url``, if it runs on this machine."""
    with _lock:
        known = _web_urls.get(_key(service_url))
    if known is not None:
        return known
    path = _file(service_url)
    try:
        record = json.loads(path.read_text())
        web_url, pid = record["web_url"], int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return web_url if isinstance(web_url, str) else None
