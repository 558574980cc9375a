"""The cluster admin client over https with a CA file, and a token, against a TLS server on
loopback (a certificate made with ``openssl`` for 127.0.0.1)."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from pulsarlab.cluster import ClusterConnection, RestAdmin


class _Clusters(BaseHTTPRequestHandler):
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        _Clusters.seen.append(self.headers.get("Authorization"))
        body = json.dumps(["standalone"]).encode()
        self.send_response(200 if self.path == "/admin/v2/clusters" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (it makes the test certificate)")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Clusters)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}", cert
    server.shutdown()
    server.server_close()


def test_https_with_the_ca_file_and_a_token(tls_server) -> None:
    url, cert = tls_server
    admin = RestAdmin(url, token="ops-token", tls_trust_certs_file_path=str(cert))
    assert admin.request("GET", "clusters") == ["standalone"]
    assert _Clusters.seen[-1] == "Bearer ops-token"


def test_https_without_the_ca_is_one_line(tls_server) -> None:
    url, _ = tls_server
    connection = ClusterConnection("pulsar+ssl://127.0.0.1:6651", url)
    with pytest.raises(OSError) as caught:
        connection.check(5.0)
    text = str(caught.value)
    assert text.startswith(f"no admin REST API answered at {url}: ")
    assert "CERTIFICATE_VERIFY_FAILED" in text and "\n" not in text
