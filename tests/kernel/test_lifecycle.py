"""The broker's lifecycle: real kernels shut down promptly, every exit path stops it.

Kernels are started by jupyter_client from temporary kernelspecs, with ``IPYTHONDIR`` and
``JUPYTER_RUNTIME_DIR`` in the test's temp dir. Waits are bounded generously (30 s); the
tests assert that the kernel exits by itself (exit code 0: not killed after a timeout) and
that the extension's cleanup ran (it logs "stopped the broker at …").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pulsarlab.kernelspec import CONFIG_LINE, install

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

SHUTDOWN_BOUND_S = 30.0
LOG_SETUP = textwrap.dedent("""\
    import logging
    _h = logging.FileHandler({path!r})
    _h.setFormatter(logging.Formatter("%(message)s"))
    _log = logging.getLogger("pulsarlab.kernel")
    _log.addHandler(_h)
    _log.setLevel(logging.INFO)
""")


class Kernel:
    """A started kernel and a blocking client that runs cells."""

    def __init__(self, km: KernelManager) -> None:
        self.km = km
        self.client = km.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        outputs: list[tuple[str, dict[str, Any]]] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] not in ("status", "execute_input"):
                outputs.append((msg["msg_type"], msg["content"]))

        reply = self.client.execute_interactive(code, timeout=60, output_hook=hook)
        return reply["content"], outputs

    def text(self, code: str) -> str:
        content, outputs = self.run(code)
        assert content["status"] == "ok", outputs
        parts = []
        for kind, body in outputs:
            if kind == "stream":
                parts.append(body["text"])
            elif kind == "execute_result":
                parts.append(body["data"]["text/plain"])
        return "".join(parts)


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    env = {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")}
    env.pop("PULSARLAB_URL", None)
    return env


@pytest.fixture
def managers() -> Iterator[list[KernelManager]]:
    started: list[KernelManager] = []
    yield started
    for km in started:  # a failed test must not leave a kernel behind
        if km.is_alive():
            km.shutdown_kernel(now=True)


def start_kernel(ksm: KernelSpecManager, name: str, env: dict[str, str],
                 managers: list[KernelManager]) -> Kernel:
    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
    km.start_kernel(env=env)
    managers.append(km)
    return Kernel(km)


def shut_down(kernel: Kernel) -> tuple[float, int | None]:
    """Graceful shutdown (as JupyterLab and nbconvert do it); its duration and exit code."""
    process = kernel.km.provisioner.process  # type: ignore[union-attr]
    started = time.monotonic()
    kernel.km.shutdown_kernel(now=False)
    elapsed = time.monotonic() - started
    kernel.client.stop_channels()
    return elapsed, process.poll() if process is not None else None


def test_kernelspec_kernel_autoloads_and_shuts_down_with_a_running_broker(
    tmp_path: Path, kernel_env: dict[str, str], managers: list[KernelManager]
) -> None:
    install(prefix=str(tmp_path / "prefix"))
    ksm = KernelSpecManager(kernel_dirs=[str(tmp_path / "prefix/share/jupyter/kernels")])
    log_file = tmp_path / "kernel.log"
    kernel = start_kernel(ksm, "pulsarlab", kernel_env, managers)

    kernel.text(LOG_SETUP.format(path=str(log_file)))
    out = kernel.text("%pulsar start --memory")  # no %load_ext: --ext=pulsarlab did it
    assert out.startswith("pulsarlab broker running in the kernel at zmq://127.0.0.1:")
    out = kernel.text("%pulsar produce t hello --count 3")
    assert "sent 3 messages" in out
    out = kernel.text("msgs = %pulsar consume t --sub s --earliest --timeout 500\n"
                      "[m['value'] for m in msgs]")
    assert out == "['hello', 'hello', 'hello']"
    out = kernel.text("import threading; sorted(t.name for t in threading.enumerate() "
                      "if t.name.startswith('pulsarlab'))")
    assert "pulsarlab-broker" in out

    # an error is one line and the cell fails (execute_reply status "error")
    content, outputs = kernel.run("%pulsar stats missing")
    assert content["status"] == "error"
    assert content["ename"] == "PulsarMagicError"
    line = "%pulsar stats: Topic persistent://public/default/missing not found"
    assert content["traceback"] == [line]
    assert outputs == [("error", {"traceback": [line], "ename": "PulsarMagicError",
                                  "evalue": line})]

    elapsed, code = shut_down(kernel)
    assert elapsed < SHUTDOWN_BOUND_S
    assert code == 0  # exited by itself, not killed after the shutdown timeout
    assert not kernel.km.is_alive()
    assert "stopped the broker at zmq://127.0.0.1:" in log_file.read_text()


def test_config_file_autoload_and_restart(
    tmp_path: Path, kernel_env: dict[str, str], managers: list[KernelManager]
) -> None:
    profile = Path(kernel_env["IPYTHONDIR"]) / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(CONFIG_LINE + "\n")
    spec_dir = tmp_path / "kernels" / "plain"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "plain", "language": "python",
    }))
    ksm = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    log_file = tmp_path / "kernel.log"
    kernel = start_kernel(ksm, "plain", kernel_env, managers)

    kernel.text(LOG_SETUP.format(path=str(log_file)))
    assert kernel.text("%pulsar start --memory").startswith("pulsarlab broker running")

    started = time.monotonic()
    kernel.km.restart_kernel(now=False)
    assert time.monotonic() - started < SHUTDOWN_BOUND_S
    assert "stopped the broker at" in log_file.read_text()
    kernel.client.wait_for_ready(timeout=60)
    assert '"state": "none"' in kernel.text("%pulsar status")  # loaded again, fresh

    elapsed, code = shut_down(kernel)
    assert elapsed < SHUTDOWN_BOUND_S
    assert code == 0


def test_interpreter_exit_stops_the_broker(tmp_path: Path) -> None:
    script = textwrap.dedent("""\
        import logging, sys
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
        logging.getLogger("pulsarlab.kernel").setLevel(logging.INFO)
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
        c = Config(); c.HistoryManager.hist_file = ":memory:"
        ip = InteractiveShell.instance(config=c)
        ip.run_line_magic("load_ext", "pulsarlab")
        ip.run_line_magic("pulsar", "start --memory")
        ip.run_line_magic("pulsar", "produce t x")
        print("started", flush=True)
        # no %pulsar stop: atexit must do it
    """)
    env = {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=SHUTDOWN_BOUND_S, env=env)
    assert time.monotonic() - started < SHUTDOWN_BOUND_S
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout
    assert "stopped the broker at zmq://127.0.0.1:" in done.stderr


def test_exit_now_stops_the_broker(ip, run, runtime) -> None:
    run("%pulsar start --memory")
    broker = runtime.broker
    try:
        ip.exit_now = True  # what the kernel's shutdown handler sets
    finally:
        ip.exit_now = False
    assert not broker.running
    assert runtime.mode is None


def test_unload_stops_broker_client_and_magics(ip, run) -> None:
    from pulsarlab.magics import get_runtime

    before = set(threading.enumerate())  # other tests' brokers are not this one's
    run("%pulsar start --memory")
    run("%pulsar produce t x")
    runtime = get_runtime()
    broker, client = runtime.broker, runtime.connection().client()
    assert client is not None
    ip.run_line_magic("unload_ext", "pulsarlab")
    try:
        assert not broker.running
        assert client._closed
        assert get_runtime() is None
        assert "pulsar" not in ip.magics_manager.magics["line"]
        assert "pulsar" not in ip.magics_manager.magics["cell"]
        assert run("%pulsar status").success is False
        alive = [t.name for t in threading.enumerate()
                 if t.name.startswith("pulsarlab") and t not in before]
        assert alive == []
    finally:
        ip.run_line_magic("load_ext", "pulsarlab")
    assert run("%pulsar status").success
    assert get_runtime() is not runtime


def test_load_is_idempotent(ip) -> None:
    from pulsarlab.magics import get_runtime

    runtime = get_runtime()
    ip.run_line_magic("load_ext", "pulsarlab")
    import pulsarlab

    pulsarlab.load_ipython_extension(ip)
    assert get_runtime() is runtime


def test_beside_broker_is_a_process_stopped_by_stop(run, runtime) -> None:
    before = set(threading.enumerate())
    ran = run("%pulsar start --beside --memory --set max_message_size=2000000")
    assert ran.success, ran.out
    assert ran.out.startswith("pulsarlab broker running beside the kernel at zmq://127.0.0.1:")
    process = runtime.process
    assert process is not None and process.poll() is None
    scratch = runtime._scratch
    status = run("%pulsar status").value
    assert status["mode"] == "beside" and status["pid"] == process.pid
    assert status["storage"] == "memory"
    run("%pulsar produce beside hi")
    got = run("%pulsar consume beside --sub s --earliest --timeout 500").value
    assert [m["value"] for m in got] == ["hi"]
    # the broker thread is in the other process
    assert not any(t.name == "pulsarlab-broker" for t in threading.enumerate()
                   if t not in before)

    ran = run("%pulsar stop")
    assert ran.out.strip().startswith(f"stopped the broker process {process.pid} at ")
    assert ran.out.strip().endswith("(exit 0)")
    assert process.poll() == 0
    assert not os.path.exists(scratch)


def test_beside_broker_durable_and_its_errors(run, runtime, tmp_path) -> None:
    ran = run("%pulsar start --beside --set no_such_setting=1")
    assert ran.success is False
    assert ran.out.strip() == ("%pulsar start: the broker process exited with code 2: "
                               "unknown broker setting 'no_such_setting'")
    assert runtime.mode is None
    data = tmp_path / "beside-data"
    ran = run(f"%pulsar start --beside --data-dir {data}")
    assert ran.success, ran.out
    assert f"durable storage in {data}" in ran.out
    process = runtime.process
    run("%pulsar produce kept x")
    run("%pulsar stop")
    assert process.poll() == 0
    assert data.is_dir()  # a given data dir is kept


def test_a_crashed_broker_loop_is_named_on_the_next_magic(run, runtime, monkeypatch) -> None:
    from pulsarlab.broker.service import BrokerService
    from pulsarlab.runtime import PulsarMagicError

    run("%pulsar start --memory")
    died = threading.Event()

    def broken_tick(self: BrokerService) -> None:
        died.set()
        raise RuntimeError("boom in housekeeping")

    monkeypatch.setattr(BrokerService, "tick", broken_tick)
    assert died.wait(30)
    runtime.broker.stop()  # joins the dead thread
    with pytest.raises(PulsarMagicError, match="its loop crashed: boom in housekeeping"):
        runtime.require_url()
