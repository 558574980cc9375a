"""Apache Pulsar's own ``pulsar-admin`` / ``pulsar-client`` in one long-lived JVM.

:func:`real_pulsar.assemble_cli` resolves ``org.apache.pulsar:pulsar-client-tools`` (the
CLI's jar and what it needs) with Maven; :class:`PulsarCli` starts ``AdminCli.java`` (beside
this file, run by Java's single-file source launcher: no build step) on that classpath and
sends it one command at a time, so a scenario can mix CLI commands with steps of the Python
client. Python only; used by ``test_pulsar_admin.py``.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .real_pulsar import Assembly

DRIVER = Path(__file__).with_name("AdminCli.java")


@dataclass(frozen=True)
class Result:
    """What one command line did: its exit status and what it printed."""

    exit: int
    out: str
    err: str

    def json(self) -> object:
        return json.loads(self.out)


class PulsarCli:
    """``admin(url, *args)`` runs ``pulsar-admin --admin-url url args...``; ``client(url,
    *args)`` runs ``pulsar-client --url url args...``; ``close()`` ends the JVM."""

    def __init__(self, assembly: Assembly) -> None:
        self.version = assembly.version
        self._proc = subprocess.Popen(
            [assembly.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-cp", assembly.classpath, str(DRIVER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8")

    def _run(self, tool: str, url: str, args: tuple[str, ...]) -> Result:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        request = {"tool": tool, "url": url, "args": [str(a) for a in args]}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the pulsar-admin JVM ended (exit {self._proc.poll()}) "
                               f"while running {tool} {' '.join(request['args'])}")
        answer = json.loads(line)
        return Result(answer["exit"], answer["out"], answer["err"])

    def admin(self, url: str, *args: str) -> Result:
        return self._run("admin", url, args)

    def client(self, url: str, *args: str) -> Result:
        return self._run("client", url, args)

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()  # the driver ends at the end of its input
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
