"""What every admin resource shares: token check, JSON in and out, Pulsar's error answers.

Errors are Pulsar's: a status code and ``{"reason": "..."}``. Broker errors map to the
status Pulsar's REST resources give for the same failure (:data:`STATUS`); a request this
layer cannot read (bad JSON, a path number that is not one) is a 400.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from tornado.httputil import responses
from tornado.web import HTTPError, RequestHandler

from .. import errors
from .pump import PumpedLoop

# Broker error -> HTTP status, looked up along the error's class hierarchy.
STATUS: dict[type[errors.PulsarLabError], int] = {
    errors.AuthenticationError: 401,
    errors.AuthorizationError: 403,
    errors.TopicNotFound: 404,
    errors.SubscriptionNotFound: 404,
    errors.ClusterNotFound: 404,
    errors.TenantNotFound: 404,
    errors.NamespaceNotFound: 404,
    errors.ConsumerNotFound: 404,
    errors.ProducerNotFound: 404,
    errors.TopicAlreadyExists: 409,
    errors.SubscriptionAlreadyExists: 409,
    errors.TenantAlreadyExists: 409,
    errors.NamespaceAlreadyExists: 409,
    errors.TenantNotEmpty: 409,
    errors.NamespaceNotEmpty: 409,
    errors.ConsumerBusy: 409,
    errors.PartitionsNotIncreased: 422,
    errors.TopicBusy: 412,
    errors.NotAllowed: 412,
    errors.InvalidTopicName: 412,
    errors.InvalidArgument: 412,
    errors.MessageTooBig: 413,
}


# The response header naming the broker error class behind an error answer.
ERROR_HEADER = "X-Pulsarlab-Error"


def status_of(exc: errors.PulsarLabError) -> int:
    for cls in type(exc).__mro__:
        status = STATUS.get(cls)
        if status is not None:
            return status
    return 500


class ApiError(Exception):
    """An answer this layer decides itself (bad request, not allowed on this resource)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class AdminResource(RequestHandler):
    """Base of the ``/admin/v2`` resources; ``self.broker`` is the running :class:`Broker`."""

    broker: Any
    role: str | None = None

    def initialize(self, broker: Any) -> None:
        self.broker = broker

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json")

    def compute_etag(self) -> None:
        return None  # admin answers are live state, never served from a client cache

    def prepare(self) -> None:
        authenticator = self.broker.authenticator
        if not authenticator.enabled:
            return
        headers = self.request.headers
        try:
            self.role = authenticator.authenticate_http(
                headers.get("Authorization", ""), client_certificate(self.request),
                headers.get("X-Pulsar-Auth-Method-Name", ""),
            )
        except errors.AuthenticationError as exc:
            self.fail(401, str(exc), type(exc).__name__)

    # -- answers --------------------------------------------------------------------------

    def fail(self, status: int, reason: str, error: str | None = None) -> None:
        """Pulsar's error answer; ``error`` names the broker error class in the
        ``X-Pulsarlab-Error`` header, so ``pulsarlab.Admin`` raises that very class (the
        status alone cannot tell TopicNotFound from SubscriptionNotFound)."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        if error is not None:
            self.set_header(ERROR_HEADER, error)
        self.finish(json.dumps({"reason": reason}))

    def reply(self, value: Any) -> None:
        """200 with ``value`` as JSON; ``None`` is Pulsar's 204 No Content."""
        if value is None:
            self.set_status(204)
            self.clear_header("Content-Type")
            self.finish()
        else:
            self.finish(json.dumps(value))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Tornado's own errors (405, 500 …) in Pulsar's ``{"reason": ...}`` shape."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        reason = exc.log_message if isinstance(exc, HTTPError) and exc.log_message else None
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"reason": reason or responses.get(status_code, "Error")}))

    # -- the broker -----------------------------------------------------------------------

    async def submit(self, fn: Callable[[Any], Any]) -> Any:
        """The result of ``fn(service)``, run on the broker thread."""
        return await answer_of(self.broker.submit(fn))

    async def run_with(self, fn: Callable[[Callable[..., Any]], Any]) -> Any:
        """``fn(call)`` in one trip to the broker thread, where ``call(op, **args)``
        authorizes and runs one admin operation (``"topics.get_stats"`` …)."""
        role = self.role
        broker = self.broker

        def work(_service: Any) -> Any:
            admin = broker.admin

            def call(op: str, **args: Any) -> Any:
                admin.authorizer.check_admin(role, op, args)
                return admin.call(op, args)

            return fn(call)

        return await self.submit(work)

    async def run_all(self, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        """Authorize and run admin operations, in order, in one trip to the broker thread."""
        return await self.run_with(lambda call: [call(op, **args) for op, args in calls])

    async def run(self, op: str, **args: Any) -> Any:
        """Authorize and run one admin operation (``"topics.get_stats"`` …)."""
        return (await self.run_all((op, args)))[0]

    # -- reading the request --------------------------------------------------------------

    def body(self, default: Any = None) -> Any:
        """The JSON body (``default`` when empty); unreadable JSON is a 400."""
        raw = self.request.body
        if not raw or not raw.strip():
            return default
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, f"the request body is not valid JSON: {exc}") from None
        except RecursionError:
            raise ApiError(400, "the request body is JSON nested too deeply") from None

    def flag(self, name: str) -> bool:
        """A boolean query parameter (``?force=true``)."""
        value = self.get_query_argument(name, "false").strip().lower()
        if value not in ("true", "false"):
            raise ApiError(400, f"query parameter {name} must be true or false, not {value!r}")
        return value == "true"


def answer_of(future: Future) -> asyncio.Future:
    """An awaitable of a broker call. Served by the broker thread itself (a
    :class:`~.pump.PumpedLoop`), the answer is set on that thread and resumes the handler
    with ``call_soon``, not through the loop's self-pipe; served by a thread of its own,
    through ``asyncio.wrap_future``."""
    loop = asyncio.get_running_loop()
    if not isinstance(loop, PumpedLoop):
        return asyncio.wrap_future(future)
    waiter = loop.create_future()
    thread = threading.get_ident()

    def settle(done: Future) -> None:
        if waiter.cancelled():
            return
        exc = done.exception()
        if exc is None:
            waiter.set_result(done.result())
        else:
            waiter.set_exception(exc)

    def answered(done: Future) -> None:
        if threading.get_ident() == thread:
            settle(done)
        else:  # failed by another thread (the broker stopped)
            loop.call_soon_threadsafe(settle, done)

    future.add_done_callback(answered)
    return waiter


def client_certificate(request: Any) -> dict | None:
    """The verified TLS client certificate of an https:// request (``None`` otherwise)."""
    connection = request.connection
    stream = getattr(connection, "stream", None)
    sock = getattr(stream, "socket", None)
    if not isinstance(sock, ssl.SSLSocket):
        return None
    return sock.getpeercert() or None


def integer(text: str, what: str) -> int:
    """A path segment that must be an integer, a Java long as Pulsar reads it (a 400
    otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, f"{what} must be an integer, not {text!r}") from None
    if not -(1 << 63) <= value < 1 << 63:
        raise ApiError(400, f"{what} must be a 64-bit integer, not {text}")
    return value


def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a handler method so broker errors and :class:`ApiError` become Pulsar answers."""

    async def wrapper(self: AdminResource, *args: Any) -> None:
        try:
            await method(self, *args)
        except ApiError as exc:
            self.fail(exc.status, exc.reason)
        except errors.PulsarLabError as exc:
            self.fail(status_of(exc), str(exc), type(exc).__name__)

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


class NotFoundHandler(AdminResource):
    """Any path that is not an admin resource: 404 with a reason."""

    def prepare(self) -> None:
        self.fail(404, f"no admin resource at {self.request.path}")
