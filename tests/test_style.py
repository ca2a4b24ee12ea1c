"""The tree is clean under ruff's linter (with import sorting) and formatter, as configured in
pyproject.toml; the test command fails when it is not."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    shutil.which("ruff") is None
    and subprocess.run(
        [sys.executable, "-m", "ruff", "--version"], capture_output=True
    ).returncode
    != 0,
    reason="ruff is not installed (install the test extra)",
)


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ruff_lint_is_clean():
    proc = _ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_format_is_clean():
    proc = _ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_lint_check_can_fail(tmp_path):
    """A deliberately unsorted, unused import is reported under the project's settings."""
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n")
    proc = _ruff(
        "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)
    )
    assert proc.returncode == 1 and "F401" in proc.stdout and "I001" in proc.stdout
