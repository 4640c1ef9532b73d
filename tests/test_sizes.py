"""scripts/sizes.py: module and function sizes, and the summary docs/STATUS.md shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sizes.py"


def sizes(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_it_counts_modules_and_functions_and_names_those_over_the_limits(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "small.py").write_text("def f():\n    return 1\n")
    (tmp_path / "pkg" / "sub" / "big.py").write_text(
        "class A:\n"
        "    async def long(self):\n"
        "        def inner():\n"
        "            return 2\n"
        "        x = 1\n"
        "        return inner() + x\n"
        "\n"
        "def short():\n"
        "    pass\n"
    )
    out = sizes(str(tmp_path / "pkg"), "--module-limit", "5", "--function-limit", "4")
    assert "       9  sub/big.py" in out and "       2  small.py" in out
    assert "       5  sub/big.py:A.long" in out and "       2  sub/big.py:A.long.inner" in out
    assert "Summary: 2 modules, 11 lines, 4 functions; 1 modules over 5 lines, 1 functions over 4 lines." in out
    assert "Modules over 5 lines: sub/big.py 9" in out
    assert "Functions over 4 lines: sub/big.py:A.long 5" in out


def test_the_summary_alone_of_src_concerto() -> None:
    out = sizes("--summary").splitlines()
    assert out[0].startswith("Summary: ") and "modules over 400 lines" in out[0]
    assert out[1].startswith("Modules over 400 lines: ") and out[2].startswith("Functions over 80 lines: ")
