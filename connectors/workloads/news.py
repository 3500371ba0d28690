"""The news workload: m agencies report shared stories as weighted keyword vectors.

GrubJoin (Gedik et al.) motivates m-way joins with news items from several agencies that
report the same stories with time lags; the paper gives no generator, so this one is ours:

* a new story breaks every ``story_interval_s``; story s has a profile of
  ``keywords_per_story`` distinct keywords with weights in [0.5, 1.5];
* an item of agency i at event time φ picks a story among the ``recent_stories`` that had
  broken by φ − τ_i, Zipf by recency (rank 1 = newest): popular stories are the recent
  ones, and agency i trails the others by its reporting lag τ_i;
* the item is a noisy copy of the profile (each keyword kept with ``keep_prob``, weight ×
  lognormal noise, plus a few low-weight random words).

Natural join: cosine similarity of the keyword vectors ≥ θ (same story ⇒ high, else low).
"""

from __future__ import annotations

import numpy as np

from connectors.workloads.disorder import sample_zipf_ranks
from connectors.workloads.params import NewsParams


def vocabulary_words(size: int) -> list[str]:
    """The keyword strings ``w0000``.. of a vocabulary of ``size`` words."""
    width = max(4, len(str(size - 1)))
    return [f"w{k:0{width}d}" for k in range(size)]


def story_ids(
    phi_s: np.ndarray, lag_s: float, params: NewsParams, rng: np.random.Generator
) -> np.ndarray:
    """Story of each item: Zipf-by-recency among the stories broken by φ − τ_i (ids ≥ 0)."""
    newest = np.floor((phi_s - lag_s) / params.story_interval_s).astype(np.int64)
    newest += params.recent_stories
    rank = sample_zipf_ranks(params.recent_stories, params.story_skew, len(phi_s), rng)
    return np.maximum(newest - rank, 0)


def story_profiles(
    n_stories: int, params: NewsParams, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Keyword ids (n_stories × K, distinct per row) and weights in [0.5, 1.5]."""
    k = params.keywords_per_story
    keys = rng.random((n_stories, params.vocabulary))
    idx = np.argpartition(keys, k - 1, axis=1)[:, :k].astype(np.int64)
    weights = rng.uniform(0.5, 1.5, (n_stories, k))
    return idx, weights


def item_keywords(
    stories: np.ndarray,
    profile_idx: np.ndarray,
    profile_w: np.ndarray,
    params: NewsParams,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy copies of the stories' profiles: ids (−1 = absent) and weights, n × (K + noise)."""
    n, k = len(stories), params.keywords_per_story
    idx = profile_idx[stories].copy()
    w = profile_w[stories] * rng.lognormal(0.0, params.weight_noise, (n, k))
    dropped = rng.random((n, k)) >= params.keep_prob
    dropped[:, 0] = False
    idx[dropped] = -1
    w[dropped] = 0.0
    extra_idx = rng.integers(0, params.vocabulary, (n, params.noise_keywords))
    extra_w = rng.uniform(0.05, 0.3, (n, params.noise_keywords))
    for j in range(params.noise_keywords):  # a noise word never repeats a word of the item
        seen = np.concatenate([idx, extra_idx[:, :j]], axis=1)
        clash = (seen == extra_idx[:, j : j + 1]).any(axis=1)
        extra_idx[clash, j] = -1
        extra_w[clash, j] = 0.0
    return np.concatenate([idx, extra_idx], axis=1), np.concatenate([w, extra_w], axis=1)
