"""Authentication with the official class names.

``AuthenticationToken(token)`` (a string or a callable returning one) and
``AuthenticationBasic(username, password[, method])`` are sent in CONNECT; a broker
listening beyond loopback requires one. ``AuthenticationTLS(cert, key)`` is a client
certificate presented in the TLS handshake of ``pulsar+ssl://`` connections (CONNECT names
the ``tls`` method; the broker takes the certificate's CN as the role).
"""

from __future__ import annotations

from collections.abc import Callable

from .checks import check_type

__all__ = ["Authentication", "AuthenticationBasic", "AuthenticationTLS", "AuthenticationToken"]


class Authentication:
    """Base class (``Authentication(dynamicLibPath, authParamsString)`` in the official API)."""

    def __init__(self, dynamicLibPath: str = "", authParamsString: str = "") -> None:
        self.dynamic_lib_path = dynamicLibPath
        self.auth_params_string = authParamsString

    def token(self) -> str | None:
        return None

    def method_and_data(self) -> tuple[str, str] | None:
        """``(auth method name, auth data)`` for a method other than ``token``."""
        return None


class AuthenticationToken(Authentication):
    """Token authentication: ``token`` is a string or a zero-argument callable."""

    def __init__(self, token: str | Callable[[], str]) -> None:
        super().__init__()
        if not (isinstance(token, str) or callable(token)):
            raise ValueError("Argument token is expected to be of type 'str' or a callable")
        self._token = token

    def token(self) -> str:
        return self._token() if callable(self._token) else self._token


class AuthenticationTLS(Authentication):
    """TLS client-certificate authentication: the certificate and its private key, PEM."""

    def __init__(self, certificate_path: str, private_key_path: str) -> None:
        super().__init__()
        check_type(str, certificate_path, "certificate_path")
        check_type(str, private_key_path, "private_key_path")
        self.certificate_path = certificate_path
        self.private_key_path = private_key_path

    def method_and_data(self) -> tuple[str, str]:
        return "tls", ""


class AuthenticationBasic(Authentication):
    def __init__(self, username: str | None = None, password: str | None = None,
                 method: str = "basic", auth_params_string: str | None = None) -> None:
        super().__init__()
        self.username = username
        self.password = password
        if auth_params_string:  # the official JSON form: {"userId", "password", "method"}
            import json

            params = json.loads(auth_params_string)
            self.username = params.get("userId", username)
            self.password = params.get("password", password)
            method = params.get("method", method)
        self.method = method

    def method_and_data(self) -> tuple[str, str]:
        return self.method, f"{self.username}:{self.password}"
