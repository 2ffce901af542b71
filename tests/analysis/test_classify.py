"""Head labels from mean statistics: each rule, the order between rules, NaN, settable thresholds."""

import numpy as np
import pytest

from attnscope.analysis.classify import LABELS, Thresholds, classify_heads
from attnscope.analysis.stats import STAT_NAMES
from attnscope.errors import ConfigError


def means_for(*heads):
    """(1 layer, len(heads)) means: every statistic 0 (entropy_norm 0.3) unless a head sets it."""
    out = {s: np.zeros((1, len(heads))) for s in STAT_NAMES}
    out["entropy_norm"][:] = 0.3
    for h, values in enumerate(heads):
        for k, v in values.items():
            out[k][0, h] = v
    return out


def test_each_rule():
    m = means_for({"to_prev": 0.7}, {"to_next": 0.6}, {"to_self": 0.55}, {"to_cls": 0.8}, {"to_sep": 0.9},
                  {"to_punct": 0.51}, {"to_local": 0.6}, {"entropy_norm": 0.9}, {})
    assert classify_heads(m).tolist() == [["previous", "next", "self", "cls", "sep", "punct", "local", "broad", "other"]]


def test_largest_dominant_fraction_wins_and_dominant_beats_local_and_broad():
    m = means_for({"to_prev": 0.5, "to_cls": 0.6}, {"to_prev": 0.9, "to_local": 1.0, "entropy_norm": 0.95},
                  {"to_local": 0.7, "entropy_norm": 0.95}, {"to_prev": 0.49, "to_next": 0.49, "to_local": 0.98})
    assert classify_heads(m).tolist() == [["cls", "previous", "local", "local"]]


def test_nan_never_passes():
    m = means_for({"to_next": np.nan, "to_prev": 0.2}, {"to_cls": np.nan, "entropy_norm": np.nan})
    assert classify_heads(m).tolist() == [["other", "other"]]


def test_thresholds_are_settable():
    m = means_for({"to_prev": 0.45}, {"entropy_norm": 0.7})
    assert classify_heads(m).tolist() == [["other", "other"]]
    t = Thresholds.parse(["previous=0.4", "broad = 0.65"])
    assert (t.previous, t.broad, t.cls) == (0.4, 0.65, 0.5)
    assert classify_heads(m, t).tolist() == [["previous", "broad"]]


@pytest.mark.parametrize("items, message", [
    (["previous"], "NAME=VALUE"), (["prev=0.3"], "NAME=VALUE"), (["cls=high"], "'high' is not a number"),
    (["sep=1.5"], r"threshold sep must be a number in \[0, 1\], got 1.5"),
    # the first value was dropped in silence: --threshold local=0.3 --threshold local=0.4 classified at 0.4
    (["local=0.3", "previous=0.4", "local = 0.4"], r"--threshold local=… is given twice"),
])
def test_bad_thresholds(items, message):
    with pytest.raises(ConfigError, match=message):
        Thresholds.parse(items)


def test_labels_are_the_documented_ones():
    assert LABELS == ("previous", "next", "self", "cls", "sep", "punct", "local", "broad", "other")
