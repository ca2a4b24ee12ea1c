"""Long commands say what they are doing: a line on stderr whenever no progress line came for a
while (issue: a line at least every 30 s on long work), and none under --quiet."""

import io

from inductheory.cli import main
from inductheory.internal import _progress
from inductheory.internal._progress import Progress, heartbeat_on

LOSS = "loss --L 4 --S 3 --H 1 --N 40 --select 1".split()


def test_a_progress_line_written_restarts_the_silence():
    out = io.StringIO()
    with heartbeat_on(stream=out, period=1e6) as heart:
        with Progress(20, "seeds", stream=io.StringIO()) as bar:
            bar.update(2)  # 2/20: written (a new tenth)
            assert heart.last_line.startswith("seeds 2/20 [")
            bar.update()  # 3/20: the same tenth, not written
            assert heart.last_line.startswith("seeds 2/20 [")
            bar.note("compiling")
            assert heart.last_line.endswith("] compiling")
    assert out.getvalue() == ""
    bar = Progress(2, "after", stream=io.StringIO())
    bar.update()  # no heartbeat watches any more
    assert heart.last_line.endswith("] compiling")


def test_a_silent_command_prints_heartbeats_and_a_quiet_one_none(monkeypatch, capsys):
    monkeypatch.setattr(_progress, "HEARTBEAT_S", 0.02)
    assert main(LOSS) == 0
    beats = [
        line
        for line in capsys.readouterr().err.splitlines()
        if "no progress line for" in line
    ]
    assert beats, "a command silent for longer than the period printed no heartbeat"
    assert all(line.startswith("inductheory: ") for line in beats)
    assert all(
        line.split(": ", 1)[1].startswith(("computing;", "compiling a jax program"))
        for line in beats
    )
    # --quiet: no progress display, no heartbeat (oracle takes --quiet)
    quiet = "oracle --L 4 --S 3 --H 1 --N 40 --restarts 1 --steps 5 --polish-steps 5 --quiet"
    assert main(quiet.split()) == 0
    assert "no progress line" not in capsys.readouterr().err
