"""benchmarks/run.py: any benchmark's run recorded as a result file (timings as data)."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import run as runner  # noqa: E402

BENCH = """
import time
start = time.process_time()
block = bytearray(300 * 2**20)  # 300 MiB, touched below: the peak the runner must see
for i in range(0, len(block), 4096):
    block[i] = 1
while time.process_time() - start < 0.3:
    pass
time.sleep(0.2)
print("warm-up")
print("ratio new/old 0.5 (measured side by side)")
"""


def test_a_benchmark_run_is_recorded_with_what_it_used(tmp_path, monkeypatch, capsys):
    (tmp_path / "bench_fake.py").write_text(BENCH)
    monkeypatch.setattr(runner, "HERE", tmp_path)
    code, path = runner.run("bench_fake.py", ["--size", "2"], folder=tmp_path / "out")
    assert code == 0 and path == tmp_path / "out" / "bench-fake-size-2.json"
    result = json.loads(path.read_text())
    assert result["benchmark"] == "bench_fake"
    assert result["command"] == "python benchmarks/bench_fake.py --size 2"
    assert result["note"] == "ratio new/old 0.5 (measured side by side)"
    assert result["wall_s"]["low"] >= 0.5  # 0.3 s busy, 0.2 s asleep
    assert 0.3 <= result["cpu_s"]["low"] <= result["wall_s"]["low"]
    assert result["peak_rss_gib"] >= 300 / 1024
    assert "ratio new/old" in capsys.readouterr().out  # the benchmark's output is shown
    assert not list((tmp_path / "out").glob("*.partial"))


def test_a_failed_benchmark_records_nothing(tmp_path, monkeypatch):
    (tmp_path / "bench_broken.py").write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(runner, "HERE", tmp_path)
    assert runner.run("bench_broken.py", [], folder=tmp_path / "out") == (3, None)
    assert not (tmp_path / "out").exists()
