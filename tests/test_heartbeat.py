"""Long commands say what they are doing: a line on stderr whenever no progress line came for a
while (issue: a line at least every 30 s on long work), and none under --quiet."""

import io
import warnings

from inductheory.cli import main
from inductheory.experiments import NoSelectionWarning
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


def test_the_loops_inside_a_unit_show_after_the_outer_count():
    """A sweep's display shows its points' own progress (training steps, flow seeds): each
    inner line after the sweep's count, the first and last of a loop at once and the others at
    most every `every` seconds off a terminal; none when the sweep's display is off."""
    out = io.StringIO()
    with Progress(2, "sweep", stream=out) as bar:
        with bar.nested(every=1e6):
            inner = Progress(3, "train", enabled=False, stream=io.StringIO())
            for _ in range(3):
                inner.update()
        bar.update()
    lines = out.getvalue().splitlines()
    assert [line.split("] ", 1)[1].split(" [")[0] for line in lines[:2]] == [
        "train 1/3",
        "train 3/3",
    ]
    assert all(line.startswith("sweep 0/2 [") for line in lines[:2])
    assert lines[2].startswith("sweep 1/2 [")
    quiet = io.StringIO()
    with Progress(2, "sweep", enabled=False, stream=quiet) as bar:
        with bar.nested():
            Progress(3, "train", enabled=False).update()
    assert quiet.getvalue() == ""


def test_a_local_sweep_shows_its_rows_training(capsys):
    argv = "sweep matrix --quick --grid steps=10 --grid".split()
    assert main([*argv, "row=W8/S8 1 KV (reference)"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any(
        line.startswith("sweep matrix 0/1 [") and "] train 10/10 [" in line
        for line in err
    ), err


def test_the_eta_reads_the_rate_after_a_warmup_unit(monkeypatch):
    """Units marked `warmup` (the first training chunk: mostly compiling) give no ETA; the
    next ones read the rate from their end only."""
    now = [100.0]
    monkeypatch.setattr(_progress.time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    bar = Progress(10, "train", stream=out)
    now[0] += 5.0  # 1 unit in 5 s, of which compiling
    bar.update(1, warmup=True)
    now[0] += 1.0  # then 1 s a unit: 8 left
    bar.update(1)
    plain = Progress(10, "train", stream=out)
    now[0] += 6.0
    plain.update(2)  # the whole average: 3 s a unit
    first, second, third = out.getvalue().splitlines()
    assert first == "train 1/10 [5.0s elapsed, eta ?]"
    assert second == "train 2/10 [6.0s elapsed, eta 8.0s]"
    assert third == "train 2/10 [6.0s elapsed, eta 24.0s]"


def test_a_flow_in_chunks_gives_no_eta_from_its_compiling_chunk(capsys):
    """The first chunk of seeds compiles the flow: the ETA waits for the next one."""
    import inductheory as it

    task = it.Task(L=4, S=3, H=1, N=40)
    config = it.FlowConfig(dynamics="reduced", t_max=50.0, max_steps=2_000)
    with warnings.catch_warnings():  # a short flow: whether it selects is not the point
        warnings.simplefilter("ignore", NoSelectionWarning)
        it.run_flow(task, config, 4, chunk=2, progress=True)
    lines = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("flow (reduced) ")
    ]
    assert lines[0].startswith("flow (reduced) 2/4 [") and "eta ?]" in lines[0], lines
    assert lines[-1].startswith("flow (reduced) 4/4 [") and "eta 0.0s]" in lines[-1]
