"""The down-sampled history behind the overlay: exact extremes, bounded memory."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sanctum.charts.glyphs import NONFINITE_MARK
from sanctum.charts.overlay import OverlayCanvas, Series
from sanctum.model.downsample import CAPACITY, Bucket, DownsampledHistory

VALUES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(-1e3, 1e3, allow_nan=False),
)


def covered(raw: list[float | None], bucket: Bucket, first: int) -> list[float | None]:
    """The raw values of updates ``bucket.first..bucket.last`` (updates start at ``first``)."""
    return raw[bucket.first - first : bucket.last - first + 1]


@given(
    raw=st.lists(VALUES, max_size=300),
    capacity=st.sampled_from([2, 4, 8, 16]),
    first=st.integers(0, 1000),
)
def test_each_bucket_keeps_the_extremes_of_the_raw_values_it_covers(
    raw: list[float | None], capacity: int, first: int
) -> None:
    history = DownsampledHistory(capacity)
    for i, value in enumerate(raw):
        history.add(first + i, value)
    buckets = history.frozen()
    assert len(buckets) <= capacity
    assert sum(b.count for b in buckets) == len(raw)
    assert [b.first for b in buckets[1:]] == [b.last + 1 for b in buckets[:-1]]  # no gap
    assert all(b.count == history.span for b in buckets[:-1])
    for b in buckets:
        values = covered(raw, b, first)
        assert len(values) == b.count
        finite = [v for v in values if v is not None and math.isfinite(v)]
        assert b.low == min(finite, default=None)
        assert b.high == max(finite, default=None)
        assert b.low_positive == min((v for v in finite if v > 0), default=None)
        assert b.nonfinite == any(v is not None and not math.isfinite(v) for v in values)
        assert b.value is values[-1] or b.value == values[-1]  # NaN is itself


def test_an_update_index_going_back_is_left_out() -> None:
    history = DownsampledHistory(4)
    for update, value in ((0, 1.0), (1, 2.0), (5, 3.0), (2, 99.0), (6, 4.0)):
        history.add(update, value)
    assert [(b.last, b.value) for b in history.frozen()] == [(0, 1.0), (1, 2.0), (5, 3.0), (6, 4.0)]


def test_memory_stays_bounded_for_a_long_run() -> None:
    history = DownsampledHistory()
    n = 200_000
    for u in range(n):
        history.add(u, math.sin(u / 1000.0))
    buckets = history.frozen()
    assert len(buckets) <= CAPACITY
    assert (buckets[0].first, buckets[-1].last) == (0, n - 1)
    assert history.span == 512  # doubled each time the buckets filled: 200,000 / 512 -> 2^9
    assert min(b.low for b in buckets if b.low is not None) == pytest.approx(-1.0, abs=1e-6)


def test_an_odd_capacity_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity must be even"):
        DownsampledHistory(5)


def text_of(rows: list[list[tuple[str, int | str]]]) -> list[str]:
    return ["".join(text for text, _ in row) for row in rows]


def test_a_canvas_kept_across_frames_draws_a_growing_history_as_a_fresh_one_does() -> None:
    """Buckets fill and merge between frames: the kept canvas still draws what a fresh
    canvas draws from the same buckets."""
    history = DownsampledHistory(8)
    canvas = OverlayCanvas()
    for u in range(300):
        history.add(u, 0.01 * (1.5 + math.sin(u / 7)) if u % 53 else None)
        if u % 5 == 0:
            frame = [Series(history.frozen(), 0, history.span)]
            kept = canvas.rows(frame, 40, 8, log=True)
            assert text_of(kept) == text_of(OverlayCanvas().rows(frame, 40, 8, log=True)), u


def test_a_long_run_is_drawn_from_update_0_with_its_spike_and_its_nan() -> None:
    """A spike and a NaN in the middle of 6,000 updates: the down-sampled line still reaches
    the top (the spike's bucket keeps its maximum) and marks the NaN."""
    history = DownsampledHistory(64)
    for u in range(6000):
        value = 10.0 if u == 3001 else math.nan if u == 4242 else 1.0
        history.add(u, value)
    rows = text_of(OverlayCanvas().rows([Series(history.frozen(), 0, history.span)], 40, 8))
    assert rows[0].startswith("10┤")
    assert rows[0].count(NONFINITE_MARK) == 1
    assert rows[0].replace(NONFINITE_MARK, " ")[3:].strip()  # the spike's dots in the top row
    assert rows[-1].split()[0] == "0" and rows[-1].split()[-1] == "6000"
    plot = [row[3:] for row in rows[:-2]]
    assert any(row[0] != " " for row in plot)  # update 0 is drawn, at the left edge
