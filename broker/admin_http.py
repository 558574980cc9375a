"""The HTTP side of ``pulsarlab.Admin``: one kept-alive connection to a broker's
``/admin/v2`` REST API, its credentials, and Pulsar's error answers as broker errors.

Standard library only (``http.client``): admin calls are small JSON requests one at a time,
and one kept-alive connection answers them without a new TCP (and TLS) handshake each.
An error answer (``{"reason": ...}`` with a 4xx/5xx status) becomes the broker error class
the old ZeroMQ admin raised: the class the ``X-Pulsarlab-Error`` header names (a pulsarlab
broker sends it), else the one Pulsar's status and reason mean.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
from typing import Any
from urllib.parse import quote, unquote, urlencode, urlsplit

from . import errors
from .errors import PulsarLabError

# The response header a pulsarlab broker names its error class in (broker/web/base.py).
ERROR_HEADER = "X-Pulsarlab-Error"

_STATUS_ERRORS: dict[int, type[PulsarLabError]] = {
    400: errors.InvalidArgument,
    401: errors.AuthenticationError,
    403: errors.AuthorizationError,
    404: errors.TopicNotFound,
    405: errors.NotAllowed,
    406: errors.InvalidArgument,
    409: errors.TopicAlreadyExists,
    412: errors.NotAllowed,
    413: errors.MessageTooBig,
    422: errors.PartitionsNotIncreased,
    503: errors.ServiceNotReady,
}
# What a 404 / 409 is about, by the first word of the reason Pulsar gives that names it.
_BY_SUBJECT: dict[int, tuple[tuple[str, type[PulsarLabError]], ...]] = {
    404: (("subscription", errors.SubscriptionNotFound), ("namespace", errors.NamespaceNotFound),
          ("tenant", errors.TenantNotFound), ("cluster", errors.ClusterNotFound)),
    409: (("subscription", errors.SubscriptionAlreadyExists),
          ("namespace", errors.NamespaceAlreadyExists), ("tenant", errors.TenantAlreadyExists)),
}
_NAMED: dict[str, type[PulsarLabError]] = {}


def _named_classes() -> dict[str, type[PulsarLabError]]:
    if not _NAMED:
        for name, obj in vars(errors).items():
            if isinstance(obj, type) and issubclass(obj, PulsarLabError):
                _NAMED[name] = obj
        # Auth refusals are also the client's exceptions, so ``except
        # pulsarlab.AuthenticationError`` catches them from Client and Admin alike.
        from .client import exceptions as client_errors

        for name in ("AuthenticationError", "AuthorizationError"):
            _NAMED[name] = type(name, (getattr(errors, name), getattr(client_errors, name)),
                                {"__module__": __name__})
    return _NAMED


def error_for(status: int, reason: str, error_class: str | None = None) -> PulsarLabError:
    """The broker error of a REST error answer; ``status`` is kept on it."""
    named = _named_classes()
    cls = named.get(error_class or "")
    if cls is None:
        cls = _STATUS_ERRORS.get(status, PulsarLabError)
        lowered = reason.lower()
        for subject, subject_cls in _BY_SUBJECT.get(status, ()):
            if subject in lowered:
                cls = subject_cls
                break
        cls = named.get(cls.__name__, cls)  # the auth classes the client catches too
    exc = cls(reason)
    exc.status = status  # type: ignore[attr-defined]
    return exc


def segment(text: str) -> str:
    """One path segment, URL-quoted (``/`` included)."""
    return quote(text, safe="")


def authorization_header(authentication: Any, token: str | None) -> str | None:
    """``Authorization`` for a token (``Bearer``) or basic credentials (``Basic``)."""
    if token is None and authentication is not None:
        token = authentication.token()
        if token is None:
            method = authentication.method_and_data()
            if method is not None and method[0] == "basic":
                return "Basic " + base64.b64encode(method[1].encode()).decode("ascii")
    return f"Bearer {token}" if token else None


class AdminConnection:
    """Requests to one web service (``http://`` or ``https://``); thread-safe."""

    def __init__(
        self,
        web_url: str,
        timeout_seconds: float,
        *,
        authentication: Any = None,
        token: str | None = None,
        tls_trust_certs_file_path: str | None = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = True,
    ) -> None:
        parts = urlsplit(web_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the admin URL must be http://host:port or https://host:port, "
                             f"not {web_url!r}")
        self.web_url = f"{parts.scheme}://{parts.hostname}" + (
            f":{parts.port}" if parts.port else "")
        self._host, self._port = parts.hostname, parts.port
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout_seconds
        self._authentication = authentication
        self._token = token
        self._basic = None
        if parts.username is not None:  # http://user:password@host:port
            user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self._basic = "Basic " + base64.b64encode(user_pass.encode()).decode("ascii")
        self._ssl: ssl.SSLContext | None = None
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=tls_trust_certs_file_path)
            if tls_allow_insecure_connection:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif not tls_validate_hostname:
                context.check_hostname = False
            cert = getattr(authentication, "certificate_path", None)
            if cert:  # AuthenticationTLS: the client certificate is the credential
                context.load_cert_chain(cert, getattr(authentication, "private_key_path", None))
            self._ssl = context
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._ssl is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                               context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "pulsarlab-admin"}
        if has_body:
            headers["Content-Type"] = "application/json"
        auth = self._basic or authorization_header(self._authentication, self._token)
        if auth:
            headers["Authorization"] = auth
        return headers

    def request(self, method: str, path: str, body: Any = None, *,
                query: dict[str, Any] | None = None, raw: bool = False) -> Any:
        """One call to ``/admin/v2/<path>``: the decoded JSON answer (``None`` for an empty
        one), or with ``raw`` ``(body bytes, headers)``. An error answer raises its broker
        error; no answer in time raises ``TimeoutError``."""
        target = f"{self._prefix}/admin/v2/{path}"
        if query:
            target += "?" + urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        headers = self._headers(data is not None)
        with self._lock:
            status, reason, payload, answer_headers = self._send(method, target, data, headers)
        if status >= 400:
            raise error_for(status, _reason(payload, reason), answer_headers.get(ERROR_HEADER))
        if raw:
            return payload, answer_headers
        if not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError:
            return payload.decode("utf-8", "replace")  # text/plain answers (version, health)

    def _send(self, method: str, target: str, data: bytes | None,
              headers: dict[str, str]) -> tuple[int, str, bytes, http.client.HTTPMessage]:
        """One exchange on the kept-alive connection. A connection the server closed while
        idle fails before any answer: that request is sent once more on a new one."""
        for attempt in (1, 2):
            reused = self._conn is not None
            conn = self._conn or self._connection()
            self._conn = conn
            try:
                conn.request(method, target, body=data, headers=headers)
                response = conn.getresponse()
                payload = response.read()
            except TimeoutError:
                self._drop()
                raise TimeoutError(f"the admin REST API at {self.web_url} did not answer "
                                   f"{method} {target} within {self._timeout:g} s") from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest) as exc:
                self._drop()
                if reused and attempt == 1:
                    continue
                raise ConnectionError(f"the admin REST API at {self.web_url} closed the "
                                      f"connection: {exc}") from None
            except ssl.SSLError as exc:
                self._drop()
                raise ConnectionError(f"TLS with the admin REST API at {self.web_url} "
                                      f"failed: {exc.reason or exc}") from None
            except OSError as exc:
                self._drop()
                raise ConnectionError(f"no admin REST API answered at {self.web_url}: "
                                      f"{exc.strerror or exc}") from None
            if response.will_close:
                self._drop()
            return response.status, response.reason, payload, response.headers
        raise AssertionError("unreachable")

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._drop()


def _reason(payload: bytes, fallback: str) -> str:
    try:
        reason = json.loads(payload).get("reason")
    except (ValueError, AttributeError):
        reason = None
    return str(reason or fallback or "error")
