"""The `concerto` command: fixed names and flags of DESIGN.md, exit codes, JSON contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from concerto.cli import main
from concerto.redact import MASK


class Ran:
    def __init__(self, exit_code: int, output: str, err: str = "") -> None:
        self.exit_code, self.output, self.err = exit_code, output, err


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`ask` runs as a real process (agents may spawn MCP servers over stdio); others in process."""
    monkeypatch.setenv("CONCERTO_AGENTS", "echo")
    runner = CliRunner()

    def invoke(*args: str) -> Ran:
        if args[0] != "ask":
            r = runner.invoke(main, list(args))
            return Ran(r.exit_code, r.output)
        p = subprocess.run([sys.executable, "-m", "concerto.cli", *args], capture_output=True, text=True, timeout=120)
        return Ran(p.returncode, p.stdout, p.stderr)

    return invoke


def test_ask_json_prints_the_output_contract(run) -> None:  # type: ignore[no-untyped-def]
    r = run(
        "ask",
        "echo: hello",
        "--json",
        "--now",
        "2025-06-15T12:00:00Z",
        "--format",
        "brief",
        "--expertise",
        "executive",
        "--brand",
        "Kisqali",
    )
    assert r.exit_code == 0, r.output
    body = json.loads(r.output)
    for key in (
        "response",
        "response_type",
        "agents_invoked",
        "agent_results",
        "total_latency_ms",
        "breakdown",
        "follow_up_questions",
        "intent_classification",
    ):
        assert key in body
    assert body["agent_results"][0]["output"]["timestamp"].startswith("2025-06-15T12:00:00")


def test_failed_query_exits_non_zero_with_error_contract(run) -> None:  # type: ignore[no-untyped-def]
    r = run("ask", "", "--json")
    assert r.exit_code == 1
    body = json.loads(r.output)
    assert body["status"] == "failed" and body["error_category"] == "invalid_input"


def test_human_output_and_trace(run) -> None:  # type: ignore[no-untyped-def]
    r = run("ask", "echo: hi", "--trace")
    assert r.exit_code == 0 and 'Echo: "hi"' in r.output and "Dispatching echo" in r.err


def test_bad_now_is_a_usage_error(run) -> None:  # type: ignore[no-untyped-def]
    r = run("ask", "echo: hi", "--now", "yesterday-ish")
    assert r.exit_code == 2 and "ISO 8601" in r.err


def test_agents_json_and_table(run) -> None:  # type: ignore[no-untyped-def]
    r = run("agents", "--json")
    assert r.exit_code == 0 and [a["name"] for a in json.loads(r.output)] == ["echo"]
    assert "echo" in run("agents").output


def test_config_masks_secrets(run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CONCERTO_LLM_API_KEY", "sk-secret")
    r = run("config", "--json")
    values = json.loads(r.output)
    assert values["llm_api_key"] == MASK and "sk-secret" not in r.output  # as every secret shows


def test_every_command_and_option_has_help(run) -> None:  # type: ignore[no-untyped-def]
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None and command.help, name
        for param in command.get_params(click.Context(command)):
            if isinstance(param, click.Option) and param.name not in ("help", "version"):
                assert param.help, f"{name} --{param.name}"


def test_installed_console_script() -> None:
    exe = Path(sys.executable).with_name("concerto")  # beside the interpreter, whatever PATH says
    assert exe.exists(), "the console script is installed with the package"
    r = subprocess.run([exe, "ask", "echo: installed", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["response"] == 'Echo: "installed"'


PROBE = '''
from concerto import Agent, AgentInfo, AgentResult, Pack

class Probe(Agent):
    """Answers with the task it was given."""

    info = AgentInfo(name="probe", description="Shows the task it receives.")

    def match_structured(self, text):
        return {} if text.startswith("probe:") else None

    async def run(self, context, task):
        given = {"source": task.source, "context": task.business_context, **task.inputs}
        return AgentResult(output={k: v for k, v in given.items() if v is not None}, summary="probed")

pack = Pack(name="probe", agents=[Probe])
'''


def test_ask_options_come_from_the_input_contract(install_plugin, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every `OrchestratorInput` field is an option; per-question parameters reach the agent's task."""
    install_plugin("probe_pack", PROBE, {"concerto.agents": {"probe": "probe_pack:pack"}})
    args = ["--source", "sales", "--context", "Q3 only", "--param", "k=3", "--param", "label=top tier"]
    r = subprocess.run(
        [sys.executable, "-m", "concerto.cli", "ask", "probe: payload", "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(tmp_path), "CONCERTO_AGENTS": "probe"},
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["agent_results"][0]["output"] == {
        "source": "sales",
        "context": "Q3 only",
        "k": 3,
        "label": "top tier",
    }
    from concerto.contracts.orchestrator import OrchestratorInput

    ask = main.get_command(click.Context(main), "ask")
    assert ask is not None
    flags = {p.name for p in ask.get_params(click.Context(ask))}
    assert set(OrchestratorInput.model_fields) - {"query"} <= flags


VALUES = '''
from concerto import Agent, AgentInfo, AgentResult, Pack

class Counter(Agent):
    """Answers with values a program reads."""

    info = AgentInfo(name="counter", description="Counts things.")

    def match_structured(self, text):
        return {} if text.startswith("count:") else None

    async def run(self, context, task):
        return AgentResult(summary="Two things: 42 and Seattle.", answer_values=[42, "Seattle", 2.5])

pack = Pack(name="counter", agents=[Counter])
'''


def test_brief_prints_just_the_answer_values(install_plugin, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`--format brief` prints the answer's values, one a line, when the answer has some (issue 28)."""
    install_plugin("counter_pack", VALUES, {"concerto.agents": {"counter": "counter_pack:pack"}})
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "CONCERTO_AGENTS": "counter"}
    asked = [sys.executable, "-m", "concerto.cli", "ask", "count: things"]
    r = subprocess.run([*asked, "--format", "brief"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["42", "Seattle", "2.5"]
    whole = subprocess.run([*asked, "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert json.loads(whole.stdout)["answer_values"] == [42, "Seattle", 2.5]


def test_bad_param_is_a_usage_error(run) -> None:  # type: ignore[no-untyped-def]
    r = run("ask", "echo: hi", "--param", "no-equals-sign")
    assert r.exit_code == 2 and "KEY=VALUE" in r.err


def test_config_lists_every_pack_and_documents_them(run) -> None:  # type: ignore[no-untyped-def]
    text = run("config").output
    for owner in ("# core", "# city", "# data", "# kpi", "# mcp", "# metrics"):
        assert owner in text
    assert "CONCERTO_PROMETHEUS_URL=" in text and "CONCERTO_DATABASE_URL=" in text
    markdown = run("config", "--markdown").output
    assert markdown.startswith("| variable | default | meaning |") and "| **metrics** | | |" in markdown


def test_bounds_of_the_contract_are_usage_errors(run) -> None:  # type: ignore[no-untyped-def]
    r = run("ask", "echo: hi", "--max-latency-ms", "0")
    assert r.exit_code == 2 and "1<=x<=3600000" in r.err


def test_a_command_line_that_is_not_utf8_is_refused_by_every_command(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 reach Python as lone surrogates, which no command can print,
    store or send (it was a traceback): `ask` answers with the error contract, the others with
    a usage error naming the argument."""
    command = [sys.executable, "-m", "concerto.cli"]
    env = {**os.environ, "CONCERTO_AGENTS": "echo", "CONCERTO_DATA_DIR": str(tmp_path), "LC_ALL": "C.UTF-8"}
    asked = subprocess.run([*command, "ask", b"echo: \xff", "--json"], capture_output=True, env=env, timeout=120)
    body = json.loads(asked.stdout)
    assert asked.returncode != 0 and body["error_category"] == "invalid_input", asked.stderr[-2000:]
    assert "or the byte 0xFF that is not UTF-8" in body["error_message"]
    for args, named in (
        (["data", "show", b"\xff"], b"'NAME'"),
        (["data", "load", "x.csv", "--describe", b"a=\xed\xa0\x80"], b"'--describe'"),
    ):
        done = subprocess.run([*command, *args], capture_output=True, env=env, timeout=120)
        assert done.returncode == 2 and b"is not UTF-8 text" in done.stderr and b"Traceback" not in done.stderr
        assert named in done.stderr, done.stderr  # the argument or option at fault


def test_a_file_name_that_is_not_utf8_loads(tmp_path: Path) -> None:
    """A file's name is bytes, not text: one in Latin-1 (`caf\xe9.csv`) is a legitimate name that
    the file system gives back as it came (it was refused as "argument 3 is not UTF-8"). The
    source records it as a UTF-8 reader shows it."""
    path = os.path.join(os.fsencode(tmp_path), b"caf\xe9.csv")
    with open(path, "wb") as handle:  # a name of bytes
        handle.write(b"region,amount\nNorth,10\nSouth,20\n")
    env = {**os.environ, "CONCERTO_DATA_DIR": str(tmp_path / "data"), "LC_ALL": "C.UTF-8"}
    command = [sys.executable, "-m", "concerto.cli", "data"]
    done = subprocess.run([*command, "load", path, "--json"], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    context = json.loads(done.stdout)
    assert context["name"] == "caf" and context["row_count"] == 2 and context["file_name"] == "caf\ufffd.csv"
    listed = subprocess.run([*command, "list", "--json"], capture_output=True, env=env, timeout=120)
    assert [c["name"] for c in json.loads(listed.stdout)] == ["caf"]
