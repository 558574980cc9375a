"""Authentication with the official class names; pulsarlab brokers accept a token.

``AuthenticationToken(token)`` (a string or a callable returning one) is sent in CONNECT; a
broker listening beyond loopback requires it. The other official classes are accepted so
code constructs, but they carry nothing a pulsarlab broker checks.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Authentication", "AuthenticationBasic", "AuthenticationTLS", "AuthenticationToken"]


class Authentication:
    """Base class (``Authentication(dynamicLibPath, authParamsString)`` in the official API)."""

    def __init__(self, dynamicLibPath: str = "", authParamsString: str = "") -> None:
        self.dynamic_lib_path = dynamicLibPath
        self.auth_params_string = authParamsString

    def token(self) -> str | None:
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
    def __init__(self, certificate_path: str, private_key_path: str) -> None:
        super().__init__()
        self.certificate_path = certificate_path
        self.private_key_path = private_key_path


class AuthenticationBasic(Authentication):
    def __init__(self, username: str | None = None, password: str | None = None,
                 method: str = "basic", auth_params_string: str | None = None) -> None:
        super().__init__()
        self.username = username
        self.password = password
        self.method = method
