"""The broker a kernel works with: started inside it, beside it, or connected to.

One :class:`BrokerRuntime` per kernel holds the broker the ``%pulsar`` magics talk to and
everything the magics opened against it: the shared :class:`~pulsarlab.Client` and
:class:`~pulsarlab.Admin`, the live widget bindings and Spark streaming queries.

Three modes:

``kernel``
    :class:`~pulsarlab.Broker` serving on a daemon thread of this process (its loop waits on a
    stop event; every socket has ``linger=0``).
``beside``
    ``python -m pulsarlab.broker.cli broker …`` as a child process (the ``pulsarlab broker``
    command with this interpreter); its JSON report gives the URLs. Stopping sends SIGTERM,
    which the command handles by stopping its broker, and kills it if it does not exit.
``connected``
    a broker someone else runs — a pulsarlab broker over ZeroMQ, or any Pulsar cluster over
    pulsar:// and its admin REST API; stopping only forgets it.

Whatever the mode, the magics reach the broker through one
:class:`~pulsarlab.cluster.Connection` (:meth:`BrokerRuntime.connection`).

:meth:`BrokerRuntime.shutdown` ends everything within a bounded time (each step runs on a
helper daemon thread joined with a timeout, so a stuck step can never hang a kernel
shutdown). The extension calls it on ``%pulsar stop``, ``%unload_ext``, when the kernel is
asked to shut down or restart (the shell's ``exit_now`` flag) and at interpreter exit
(``atexit``). Nothing here prints; problems are logged to the ``pulsarlab.kernel`` logger.

While a broker is in use its URL is exported as ``$PULSARLAB_URL``, so shell commands run
from the notebook (``!pulsarlab consume t -s sub``) reach it too.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .broker import settings as broker_settings
from .broker.errors import InvalidArgument

log = logging.getLogger("pulsarlab.kernel")

__all__ = ["BrokerRuntime", "PulsarMagicError", "one_line", "parse_setting"]

STOP_TIMEOUT_S = 8.0  # bound for each shutdown step
START_TIMEOUT_S = 30.0
URL_VARIABLE = "PULSARLAB_URL"  # read by the pulsarlab produce/consume commands
ADMIN_URL_VARIABLE = "PULSARLAB_ADMIN_URL"  # read by the pulsarlab admin command


class PulsarMagicError(Exception):
    """An error a magic reports as one line, without a traceback.

    IPython calls ``_render_traceback_`` instead of formatting a traceback, and still counts
    the cell as failed (``run_cell(...).success`` is ``False``; a kernel replies with status
    ``error``), so nbval and nbconvert stop on it.
    """

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def one_line(exc: BaseException) -> str:
    """The first line of an error's text, as a magic reports it."""
    # str(KeyError("x")) is "'x'": use the argument itself
    keyed = isinstance(exc, KeyError) and exc.args
    text = str(exc.args[0]) if keyed else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def parse_setting(text: str) -> tuple[str, bool | int | str]:
    """``name=value`` → ``(name, value)`` as the broker's CLI reads it; a malformed one is
    a :class:`PulsarMagicError`."""
    try:
        return broker_settings.parse_setting(text)
    except InvalidArgument as exc:
        raise PulsarMagicError(str(exc)) from None


def bounded(fn: Callable[[], Any], what: str, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Run ``fn`` on a helper daemon thread, waiting at most ``timeout`` s; log failures.

    Returns whether it finished in time without raising.
    """
    outcome: dict[str, bool] = {}

    def run() -> None:
        try:
            fn()
            outcome["ok"] = True
        except Exception:
            log.exception("pulsarlab: %s failed", what)

    thread = threading.Thread(target=run, name=f"pulsarlab-stop {what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        log.warning("pulsarlab: %s did not finish within %.0f s; leaving it", what, timeout)
        return False
    return outcome.get("ok", False)


class BrokerRuntime:
    """The broker of one kernel and the resources the magics opened against it."""

    def __init__(self) -> None:
        self.mode: str | None = None
        self.service_url: str | None = None
        self.events_url: str | None = None
        self.web_url: str | None = None  # the admin REST API of a broker started here
        self.storage: str | None = None
        self.data_dir: str | None = None
        self.broker: Any = None  # pulsarlab.Broker in "kernel" mode
        self.process: subprocess.Popen | None = None  # in "beside" mode
        self.last_topic: str | None = None
        self.last_subscription: str | None = None
        self.bindings: list[Any] = []  # pulsarlab.widgets.LiveBinding
        self.streams: dict[str, Any] = {}  # Spark StreamingQuery by name
        self._stream_dirs: dict[str, str] = {}
        self._connection: Any = None  # pulsarlab.cluster.Connection, made on first use
        self._security: dict[str, Any] = {}  # authentication / curve_server_key (connect)
        self._view_settings: dict[str, Any] = {}  # what shapes the views of a broker started here
        self._scratch: str | None = None  # beside mode: report files, temporary data dir
        self._lock = threading.RLock()

    # -- state ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether there is a broker to talk to (one we started must still be alive)."""
        if self.mode == "kernel":
            return self.broker is not None and self.broker.running
        if self.mode == "beside":
            return self.process is not None and self.process.poll() is None
        return self.mode == "connected"

    def require_url(self) -> str:
        """The current service URL, or a one-line error saying how to get one."""
        if self.mode is None or self.service_url is None:
            raise PulsarMagicError(
                "no broker: run %pulsar start (or %pulsar connect zmq://host:port) first"
            )
        if not self.running:
            crashed = getattr(self.broker, "loop_error", None) if self.mode == "kernel" else None
            why = f" (its loop crashed: {one_line(crashed)})" if crashed is not None else ""
            raise PulsarMagicError(
                f"the broker at {self.service_url} has stopped{why}; run %pulsar stop, then "
                "%pulsar start"
            )
        return self.service_url

    def status(self) -> dict[str, Any]:
        """What the runtime knows, as a plain dict."""
        with self._lock:
            info: dict[str, Any] = {
                "state": "running" if self.running else ("stopped" if self.mode else "none"),
                "mode": self.mode,
                "service_url": self.service_url,
                "events_url": self.events_url,
            }
            if self.mode in ("kernel", "beside"):
                info["storage"] = self.storage
                info["data_dir"] = self.data_dir
            if self.process is not None:
                info["pid"] = self.process.pid
            if self._connection is not None:
                info["backend"] = self._connection.backend
                info["admin_url"] = self._connection.admin_url
                info["writes_allowed"] = self._connection.writes_allowed
                if self._connection.backend == "cluster":
                    info["client"] = self._connection.client_name
            info["live_views"] = sum(1 for b in self.bindings if b.running)
            info["streams"] = sorted(self.streams)
            return info

    # -- starting -------------------------------------------------------------------------

    def start(
        self,
        *,
        beside: bool = False,
        data_dir: str | None = None,
        port: int = 0,
        events_port: int = 0,
        memory: bool = False,
        settings: Iterable[tuple[str, Any]] = (),
        timeout: float = START_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Start a broker in this process (default) or beside it; returns :meth:`status`."""
        with self._lock:
            if self.mode is not None and not self.running:
                self.stop()  # a broker that died (or was killed): clear it first
            if self.mode is not None:
                raise PulsarMagicError(
                    f"already using the broker at {self.service_url} ({self.mode}); "
                    "%pulsar stop first"
                )
            if memory and data_dir:
                raise PulsarMagicError("--memory keeps nothing on disk: drop --data-dir")
            settings = list(settings)
            self._security = {}
            if beside:
                self._start_beside(data_dir, port, events_port, memory, settings, timeout)
            else:
                self._start_in_kernel(data_dir, port, events_port, memory, settings, timeout)
            self._security = _own_security(dict(settings), self.broker)
            self._view_settings = _view_settings(dict(settings), self.broker)
            self._export_url()
            log.info("pulsarlab: using the broker at %s (%s)", self.service_url, self.mode)
            return self.status()

    def _start_in_kernel(
        self, data_dir: str | None, port: int, events_port: int, memory: bool,
        settings: list[tuple[str, Any]], timeout: float,
    ) -> None:
        from .broker.server import Broker

        storage = "memory" if memory else "durable"
        broker = Broker(data_dir, port=port, storage=storage, events_port=events_port,
                        **dict(settings))
        try:
            broker.start(timeout)
        except BaseException:
            # A failed bind leaves the broker's own context with an open socket, and
            # Broker.stop() would wait for it forever in ctx.term(): destroy it first.
            ctx = getattr(broker, "_ctx", None)
            if ctx is not None:
                ctx.destroy(linger=0)
            bounded(broker.stop, "stopping a broker that failed to start")
            raise
        self.broker = broker
        self.mode = "kernel"
        self.storage = storage
        self.data_dir = broker.data_dir
        self.service_url = broker.service_url
        self.events_url = broker.events_url
        self.web_url = broker.web_url

    def _start_beside(
        self, data_dir: str | None, port: int, events_port: int, memory: bool,
        settings: list[tuple[str, Any]], timeout: float,
    ) -> None:
        scratch = tempfile.mkdtemp(prefix="pulsarlab-beside-")
        storage = "memory" if memory else "durable"
        if not memory and not data_dir:
            data_dir = str(Path(scratch) / "data")
        cmd = [
            sys.executable, "-m", "pulsarlab.broker.cli", "broker",
            "--storage", storage, "--port", str(port), "--events-port", str(events_port),
            "--pulsar-port", "0", "--web-port", "0",
        ]
        if not memory:
            cmd += ["--data-dir", str(data_dir)]
        for name, value in settings:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            cmd += ["--set", f"{name}={text}"]
        out_path = Path(scratch) / "report.json"
        err_path = Path(scratch) / "stderr.log"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            process = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        report: dict[str, Any] | None = None
        while report is None:
            report = _read_report(out_path)
            if report is not None:
                break
            if process.poll() is not None:
                reason = _last_line(err_path).removeprefix("pulsarlab: error: ") or "no message"
                shutil.rmtree(scratch, ignore_errors=True)
                raise PulsarMagicError(
                    f"the broker process exited with code {process.returncode}: {reason}"
                )
            if time.monotonic() > deadline:
                _terminate(process)
                shutil.rmtree(scratch, ignore_errors=True)
                raise PulsarMagicError(f"the broker process did not report within {timeout:.0f} s")
            time.sleep(0.05)
        self.process = process
        self._scratch = scratch
        self.mode = "beside"
        self.storage = storage
        self.data_dir = report.get("data_dir")
        self.service_url = report["service_url"]
        self.events_url = report.get("events_url")
        self.web_url = report.get("web_url")

    def connect(self, service_url: str, events_url: str | None = None,
                check_timeout: float = 5.0, *,
                security: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        """Use a broker someone else runs (checked with one admin call).

        ``zmq://`` is a pulsarlab broker (``security``: ``authentication`` and/or
        ``curve_server_key`` for its ``Client`` and ``Admin``); ``pulsar://`` and
        ``pulsar+ssl://`` are any Pulsar cluster, reached with the official client and the
        admin REST API. ``options`` go to :func:`pulsarlab.cluster.open_connection`
        (``admin_url``, ``token``, ``tls_trust_certs_file_path``, ``allow_writes``)."""
        from .cluster import ZmqConnection, open_connection

        with self._lock:
            if self.mode in ("kernel", "beside"):
                if self.running:
                    raise PulsarMagicError(
                        f"a broker started here is running at {self.service_url}; "
                        "%pulsar stop it first"
                    )
                self.stop()
            security = dict(security or {})
            try:
                connection = open_connection(service_url, events_url=events_url, **options)
            except ValueError as exc:
                raise PulsarMagicError(str(exc)) from None
            if isinstance(connection, ZmqConnection):
                connection.security.update(security)
            try:
                connection.check(check_timeout)
            except (OSError, ValueError) as exc:  # no answer, refused, or no admin URL
                raise PulsarMagicError(str(exc)) from None
            self._release_all()
            self.mode = "connected"
            self.web_url = connection.admin_url
            self._connection = connection
            self._security = getattr(connection, "security", {})
            self.service_url = service_url
            self.events_url = events_url
            self.storage = self.data_dir = None
            self._export_url()
            log.info("pulsarlab: using the broker at %s (%s)", self.service_url, self.mode)
            return self.status()

    # -- what the magics use --------------------------------------------------------------

    @property
    def security(self) -> dict[str, Any]:
        """``authentication`` / ``curve_server_key`` for clients of this broker (maybe empty)."""
        return dict(self._security)

    def connection(self) -> Any:
        """The :class:`~pulsarlab.cluster.Connection` to the current broker."""
        url = self.require_url()
        with self._lock:
            if self._connection is None:
                from .cluster import ZmqConnection

                self._connection = ZmqConnection(url, self.events_url,
                                                 security=self._security,
                                                 view_settings=self._view_settings,
                                                 admin_url=self.web_url)
            return self._connection

    def client(self) -> Any:
        """The shared client of the magics (pulsarlab's, or the official one on a cluster
        connected with ``--client official``)."""
        return self.connection().client()

    def admin(self) -> Any:
        """The shared admin of the magics (the broker's or a cluster's admin REST API)."""
        return self.connection().admin()

    def add_binding(self, binding: Any) -> None:
        """Keep a live widget binding so that stopping the broker stops it too."""
        with self._lock:
            self.bindings = [b for b in self.bindings if b.running]
            self.bindings.append(binding)

    def add_stream(self, name: str, query: Any, checkpoint_dir: str | None = None) -> None:
        """Keep a Spark streaming query (and its temporary checkpoint) for cleanup."""
        with self._lock:
            self.streams[name] = query
            if checkpoint_dir is not None:
                self._stream_dirs[name] = checkpoint_dir

    def stop_stream(self, name: str) -> bool:
        """Stop one streaming query (bounded); returns whether it stopped in time."""
        with self._lock:
            query = self.streams.pop(name, None)
            checkpoint = self._stream_dirs.pop(name, None)
        done = True if query is None else bounded(query.stop, f"stopping stream {name}")
        if checkpoint is not None:
            shutil.rmtree(checkpoint, ignore_errors=True)
        return done

    # -- stopping -------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Stop what was started here (or forget a connected broker); say what happened."""
        with self._lock:
            done: list[str] = []
            for name in list(self.streams):
                self.stop_stream(name)
                done.append(f"stopped streaming query {name}")
            mode, url = self.mode, self.service_url
            self._release_all()
            if mode == "kernel":
                broker, self.broker = self.broker, None
                bounded(broker.stop, "stopping the in-kernel broker")
                done.append(f"stopped the broker at {url}")
            elif mode == "beside":
                process, self.process = self.process, None
                assert process is not None
                code = _terminate(process)
                done.append(f"stopped the broker process {process.pid} at {url} (exit {code})")
                if self._scratch is not None:
                    shutil.rmtree(self._scratch, ignore_errors=True)
                    self._scratch = None
            elif mode == "connected":
                done.append(f"disconnected from {url} (that broker keeps running)")
            for line in done:
                log.info("pulsarlab: %s", line)
            if url is not None and os.environ.get(URL_VARIABLE) == url:
                del os.environ[URL_VARIABLE]
            if self.web_url is not None and os.environ.get(ADMIN_URL_VARIABLE) == self.web_url:
                del os.environ[ADMIN_URL_VARIABLE]
            self.mode = self.service_url = self.events_url = self.web_url = None
            self.storage = self.data_dir = None
            return done

    def _export_url(self) -> None:
        """``$PULSARLAB_URL`` for ``!pulsarlab produce|consume|admin`` run from the notebook."""
        if self.service_url is not None:
            os.environ[URL_VARIABLE] = self.service_url
        if self.web_url is not None:
            os.environ[ADMIN_URL_VARIABLE] = self.web_url

    def shutdown(self) -> None:
        """Stop everything, quietly and within a bounded time (idempotent, any thread)."""
        try:
            self.stop()
        except Exception:
            log.exception("pulsarlab: error while shutting the kernel's broker down")

    def _release_all(self) -> None:
        """Stop the live bindings and close the connection's client and admin."""
        bindings, self.bindings = self.bindings, []
        for binding in bindings:
            bounded(binding.stop, "stopping a live widget binding")
        connection, self._connection = self._connection, None
        if connection is not None:
            bounded(connection.close, "closing the magics' client and admin")


def _own_security(settings: dict[str, Any], broker: Any) -> dict[str, Any]:
    """Token and CURVE key the magics need for a broker they started with auth or CURVE.

    The token's role is the first of ``super_user_roles`` (else ``pulsarlab-magics``), signed
    by the in-kernel broker or with the ``token_secret_key`` the broker process was given."""
    from .broker.security import provider_names

    out: dict[str, Any] = {}
    providers = provider_names(str(settings.get("authentication_providers", "")))
    if settings.get("authentication_enabled") and "token" in (providers or ("token",)):
        from .broker import tokens
        from .broker.client.auth import AuthenticationToken

        roles = [r.strip() for r in str(settings.get("super_user_roles", "")).split(",")]
        role = next((r for r in roles if r), "pulsarlab-magics")
        if broker is not None:
            token = broker.create_token(role)
        else:
            key = tokens.load_secret_key(str(settings["token_secret_key"]))
            token = tokens.create_token(key, role)
        out["authentication"] = AuthenticationToken(token)
    if settings.get("curve_secret_key_file"):
        from .broker.curve import load_secret_key

        out["curve_server_key"] = load_secret_key(str(settings["curve_secret_key_file"]))[0]
    return out


_VIEW_SETTINGS = {
    "pulsar_version": "pulsar_version",
    "consistent_hashing_points": "subscription_key_shared_consistent_hashing_replica_points",
}
"""What the views read from a snapshot's settings → the broker setting it comes from."""


def _view_settings(settings: dict[str, Any], broker: Any) -> dict[str, Any]:
    """The settings of a broker started here that shape the views (a HashRingView draws the
    ring of the broker's ``pulsar_version``): the in-kernel broker's own, or those the
    broker process was given."""
    if broker is not None:
        return {key: getattr(broker.settings, name) for key, name in _VIEW_SETTINGS.items()}
    return {key: settings[name] for key, name in _VIEW_SETTINGS.items() if name in settings}


def _read_report(path: Path) -> dict[str, Any] | None:
    """The broker command's JSON report once it is complete in ``path``."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").lstrip()
    except OSError:
        return None
    if not text:
        return None
    try:
        report, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    return report if isinstance(report, dict) and "service_url" in report else None


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _terminate(process: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> int | None:
    """SIGTERM (the broker command stops cleanly on it), then kill if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("pulsarlab: broker process %d ignored SIGTERM; killing it", process.pid)
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)
    return process.returncode
