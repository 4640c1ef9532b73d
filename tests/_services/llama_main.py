"""Run llama-cpp-python's OpenAI-compatible server with ggml's extra CPU buffer types off.

Usage: `python llama_main.py --model GGUF --host 127.0.0.1 --port PORT [server options]`,
the same arguments as `python -m llama_cpp.server`.

Why: a wheel built with `-march=native` on a CPU that reports AMX repacks the weights
for AMX, and the first batched matrix product then executes `ldtilecfg`, which some
virtual machines do not allow (the server dies with SIGSEGV on its first completion,
seen on this project's build machine). llama-cpp-python does not expose llama.cpp's
`use_extra_bufts` model parameter, so it is switched off in the default parameters
before the server builds its model. For a 135M model the plain CPU path is as fast.
"""

from __future__ import annotations

import runpy
from typing import Any

import llama_cpp.llama_cpp as llama_lib

_default_params = llama_lib.llama_model_default_params


def _params_without_extra_buffers() -> Any:
    params = _default_params()
    params.use_extra_bufts = False
    return params


llama_lib.llama_model_default_params = _params_without_extra_buffers

if __name__ == "__main__":
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
