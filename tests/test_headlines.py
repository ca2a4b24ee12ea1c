"""Results at a glance: every figure's headline, computed from its stored data, checked against
counts taken from the raw JSON, and the anchors its table links to."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from inductheory.figures import FIGURES, figure_names
from inductheory.figures._headlines import (
    ANSWER_WORDS,
    HEADLINES,
    Chapter,
    Headline,
    anchor,
    headline,
    headlines,
)

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = [ROOT / "figures", ROOT / "figures" / "quick"]


def stored(folder: Path) -> dict[str, dict]:
    return {
        n: json.loads((folder / "data" / f"{n}.json").read_text())
        for n in figure_names()
    }


def test_every_figure_has_a_headline():
    assert set(HEADLINES) == set(FIGURES)


@pytest.mark.parametrize("folder", FOLDERS, ids=["full", "quick"])
def test_headlines_are_short_and_in_story_order(folder):
    rows = headlines(stored(folder))
    assert [h.figure for h in rows] == list(HEADLINES)
    chapters = [list(Chapter).index(h.chapter) for h in rows]
    assert chapters == sorted(chapters)
    for h in rows:
        assert len(h.answer.split()) <= ANSWER_WORDS, h.figure
        assert h.question.endswith("?"), h.figure
        # the key number carries its interval (or says why it has none)
        assert "[" in h.number or "no " in h.number, h.figure


def test_a_long_answer_is_refused():
    with pytest.raises(ValueError, match="answer must be <= 20 words"):
        Headline("x", Chapter.THEOREM_1, "Q?", " ".join(["word"] * 21), "1/1 [0.21, 1]")


def test_unknown_figure_is_refused():
    with pytest.raises(ValueError, match="name must be one of"):
        headline("nope", {})


def _share(number: str) -> tuple[int, int]:
    k, n = re.search(r"(\d+)/(\d+)", number).groups()
    return int(k), int(n)


@pytest.mark.parametrize("folder", FOLDERS, ids=["full", "quick"])
def test_counts_are_those_of_the_raw_json(folder):
    # recount from the stored dicts, without the figures' records
    data = stored(folder)
    gaps = [
        g for m in data["weak_spots"]["models"] if m["H"] < m["S"] - 1 for g in m["gap"]
    ]
    assert _share(headline("weak_spots", data["weak_spots"]).number) == (
        sum(g == 1 for g in gaps),
        len(gaps),
    )
    rb = data["regime_boundary"]
    agrees = [b["agrees"] for s in rb["oracle"] for b in s["boundary"]] + [
        b["agrees"] for b in rb["flow"]
    ]
    assert _share(headline("regime_boundary", rb).number) == (sum(agrees), len(agrees))
    runs = data["theorem2_trajectories"]["runs"].values()
    seeds = sum(len(r["status"]) for r in runs)
    assert _share(
        headline("theorem2_trajectories", data["theorem2_trajectories"]).number
    )[1] == (seeds)


def test_wilson_interval_of_the_number_by_brute_force():
    # the 95% Wilson interval: the shares p whose score statistic |k - n p| / sqrt(n p (1 - p))
    # is at most 1.96, found on a fine grid
    import numpy as np

    data = stored(FOLDERS[0])
    number = headline("regime_boundary", data["regime_boundary"]).number
    k, n = _share(number)
    p = np.linspace(1e-6, 1 - 1e-6, 2_000_001)
    inside = p[np.abs(k - n * p) / np.sqrt(n * p * (1 - p)) <= 1.959963984540054]
    low, high = re.search(r"\[([\d.]+), ([\d.]+)\]", number).groups()
    assert float(low) == pytest.approx(inside.min(), abs=0.006)
    assert float(high) == pytest.approx(inside.max(), abs=0.006)


def test_anchors_match_github_and_mkdocs():
    markdown = pytest.importorskip("markdown.extensions.toc")
    for f in FIGURES.values():
        assert anchor(f.title, collapse=True) == markdown.slugify(f.title, "-")
    # GitHub keeps one hyphen per removed space
    assert anchor("where p = 1/2 is", collapse=False) == "where-p--12-is"


@pytest.mark.parametrize("folder", FOLDERS, ids=["full", "quick"])
def test_readme_glance_links_reach_sections(folder):
    text = (folder / "README.md").read_text()
    headings = {anchor(h, collapse=False) for h in re.findall(r"^## (.+)$", text, re.M)}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert len(links) == len(FIGURES)
    assert set(links) <= headings
