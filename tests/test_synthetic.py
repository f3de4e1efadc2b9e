"""The HMM data of the SWVP paper's Section 6 (footnote 6): the setups' parameters, sampling
against the model, Viterbi against enumeration, and the Sentences a LinearChain trains on."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from arborist.experiments import synthetic
from arborist.weights import Weights
from arborist.tagger.chain import LinearChain

SMALL = (60, 30, 10)
# Footnote 6, as printed: (Cx, Cy, transition vector, emission vector).
PAPER = {
    1: (5, 3, [0.7, 0.2, 0.1], [0.75, 0.1, 0.05, 0.05, 0.05]),
    2: (5, 3, [0.5, 0.3, 0.2], [0.6, 0.15, 0.1, 0.1, 0.05]),
    3: (20, 7, [0.7, 0.2, 0.1] + [0.0] * 4, [0.4, 0.2, 0.1, 0.1, 0.1] + [0.0] * 15),
}


@pytest.mark.parametrize("setup", [1, 2, 3])
def test_dataset_is_deterministic_and_indexed(setup):
    """Same (setup, index): the same HMM and arrays; another index: another HMM and other data."""
    hmm_a, a = synthetic.dataset(setup, 4, splits=SMALL)
    hmm_b, b = synthetic.dataset(setup, 4, splits=SMALL)
    hmm_c, c = synthetic.dataset(setup, 5, splits=SMALL)
    assert sorted(a) == ["dev", "test", "train"]
    for split in a:
        for k in range(2):
            np.testing.assert_array_equal(a[split][k], b[split][k])
    np.testing.assert_array_equal(hmm_a.transition, hmm_b.transition)
    np.testing.assert_array_equal(hmm_a.emission, hmm_b.emission)
    assert not (np.array_equal(hmm_a.transition, hmm_c.transition) and np.array_equal(hmm_a.emission, hmm_c.emission))
    assert not np.array_equal(a["train"][1], c["train"][1])
    # Another setup with the same index is another dataset too.
    other = 1 + setup % 3
    assert not np.array_equal(synthetic.dataset(other, 4, splits=SMALL)[1]["train"][1], a["train"][1])


@pytest.mark.parametrize("setup", [1, 2, 3])
def test_dataset_sizes_and_values(setup):
    """The paper's split: 7,000 / 2,000 / 1,000 items of length 8, states in [Cy], observations in [Cx];
    the splits are disjoint parts of one sample (not copies of each other)."""
    n_obs, n_states = PAPER[setup][:2]
    _, data = synthetic.dataset(setup, 0)
    assert {k: v[0].shape for k, v in data.items()} == {"train": (7000, 8), "dev": (2000, 8), "test": (1000, 8)}
    for states, observations in data.values():
        assert states.shape == observations.shape
        assert states.min() >= 0 and states.max() < n_states
        assert observations.min() >= 0 and observations.max() < n_obs
    assert synthetic.SPLITS == (7000, 2000, 1000) and synthetic.LENGTH == 8
    assert not np.array_equal(data["train"][1][:1000], data["test"][1])
    _, short = synthetic.dataset(setup, 0, splits=(5, 0, 2), length=3)
    assert short["train"][0].shape == (5, 3) and short["dev"][0].shape == (0, 3) and short["test"][0].shape == (2, 3)


@pytest.mark.parametrize("setup", [1, 2, 3])
def test_hmm_rows_are_permutations_of_the_setup_vectors(setup):
    """Every row of the transition and emission matrices is a permutation of the setup's vector,
    normalized (setup 3's emission vector sums to 0.9 as printed: each entry is divided by 0.9);
    rows sum to 1; the first state is uniform. Rows are not all the same permutation."""
    n_obs, n_states, trans, emit = PAPER[setup]
    trans, emit = np.array(trans) / sum(trans), np.array(emit) / sum(emit)
    if setup == 3:
        assert np.isclose(sum(PAPER[3][3]), 0.9)
        assert np.isclose(emit[0], 0.4 / 0.9)
    for index in range(3):
        hmm, _ = synthetic.dataset(setup, index, splits=(1, 0, 0))
        assert hmm.transition.shape == (n_states, n_states) and hmm.emission.shape == (n_states, n_obs)
        assert hmm.n_states == n_states
        np.testing.assert_allclose(hmm.prior, np.full(n_states, 1.0 / n_states))
        for row in hmm.transition:
            np.testing.assert_allclose(np.sort(row), np.sort(trans), rtol=1e-12)
        for row in hmm.emission:
            np.testing.assert_allclose(np.sort(row), np.sort(emit), rtol=1e-12)
        np.testing.assert_allclose(hmm.transition.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(hmm.emission.sum(axis=1), 1.0, rtol=1e-12)
        assert len({tuple(row) for row in hmm.emission}) > 1


@pytest.mark.parametrize("setup", [1, 3])
def test_sampling_matches_the_model(setup):
    """With 20,000 items of length 8, the empirical P(y' | y), P(x | y) and P(y_1) are within
    5 standard errors of the model's, and what has probability 0 (setup 3) never occurs."""
    hmm, _ = synthetic.dataset(setup, 2, splits=(1, 0, 0))
    n_obs = hmm.emission.shape[1]
    K = hmm.n_states
    states, observations = hmm.sample(20000, 8, np.random.default_rng(123))
    assert states.shape == observations.shape == (20000, 8)

    def check(counts, probs):
        totals = counts.sum(axis=1, keepdims=True)
        assert (totals > 1000).all()
        freq = counts / totals
        se = np.sqrt(probs * (1 - probs) / totals)
        assert (np.abs(freq - probs) <= 5 * se + 1e-12).all(), (freq, probs)
        assert not counts[probs == 0].any()

    transitions = np.zeros((K, K))
    np.add.at(transitions, (states[:, :-1].ravel(), states[:, 1:].ravel()), 1)
    check(transitions, hmm.transition)
    emissions = np.zeros((K, n_obs))
    np.add.at(emissions, (states.ravel(), observations.ravel()), 1)
    check(emissions, hmm.emission)
    first = np.bincount(states[:, 0], minlength=K)[None, :].astype(float)
    check(first, hmm.prior[None, :])
    # Not a trivial sampler: later states follow the transitions, not the prior.
    assert np.abs(transitions / transitions.sum(axis=1, keepdims=True) - 1.0 / K).max() > 0.2


def log_joint(hmm, states, observations) -> float:
    """log P(states, observations) under the HMM; -inf when some factor is 0."""
    with np.errstate(divide="ignore"):
        lp, lt, le = np.log(hmm.prior), np.log(hmm.transition), np.log(hmm.emission)
    total = lp[states[0]] + le[states[0], observations[0]]
    for i in range(1, len(states)):
        total += lt[states[i - 1], states[i]] + le[states[i], observations[i]]
    return float(total)


@pytest.mark.parametrize("setup", [1, 2, 3])
def test_viterbi_is_the_most_probable_state_sequence(setup):
    """HMM.viterbi against brute force over every state sequence of length 3 and 4, for random
    observation sequences (setup 3 has zero probabilities: log 0 = -inf must not win). Where the
    best sequence is unique, Viterbi returns exactly it."""
    hmm, _ = synthetic.dataset(setup, 1, splits=(1, 0, 0))
    rng = np.random.default_rng(setup)
    n_obs, K = hmm.emission.shape[1], hmm.n_states
    checked = unique = 0
    for length in (3, 4):
        candidates = [np.array(y) for y in itertools.product(range(K), repeat=length)]
        sampled = list(hmm.sample(4, length, rng)[1])
        tried = 0
        while tried < 6:  # random observations that some state sequence can produce
            obs = rng.integers(n_obs, size=length)
            values = np.array([log_joint(hmm, y, obs) for y in candidates])
            if np.isfinite(values.max()):
                sampled.append(obs)
                tried += 1
        for obs in sampled:
            values = np.array([log_joint(hmm, y, obs) for y in candidates])
            best = values.max()
            assert np.isfinite(best)
            got = hmm.viterbi(obs)
            assert got.shape == (length,)
            assert np.isclose(log_joint(hmm, got, obs), best, rtol=1e-12, atol=1e-12), (obs, got)
            winners = np.flatnonzero(np.isclose(values, best, rtol=1e-12, atol=1e-12))
            if len(winners) == 1:
                np.testing.assert_array_equal(got, candidates[winners[0]])
                unique += 1
            checked += 1
    assert checked == 20 and unique >= 5


@pytest.mark.parametrize("setup", [1, 2, 3])
def test_viterbi_beats_the_majority_state_on_held_out_data(setup):
    """The true model's decoding, the accuracy ceiling of the learners, is far above always
    predicting the most frequent state: the observations and transitions carry the states."""
    hmm, data = synthetic.dataset(setup, 0, splits=(0, 0, 300))
    states, observations = data["test"]
    accuracy = np.mean([hmm.viterbi(o) == s for s, o in zip(states, observations)])
    majority = np.bincount(states.ravel()).max() / states.size
    assert accuracy > majority + 0.2, (accuracy, majority)


@pytest.mark.parametrize("setup", [1, 3])
def test_to_sentences_feed_a_linear_chain(setup):
    """Items become Sentences with forms "x<k>" and UPOS "y<k>" (provenance: the split name and
    item number), which a LinearChain over tag_names(setup) with the HMM templates reads as gold."""
    _, data = synthetic.dataset(setup, 0, splits=(12, 0, 0))
    states, observations = data["train"]
    sentences = synthetic.to_sentences(states, observations, "train")
    assert len(sentences) == 12
    names = synthetic.tag_names(setup)
    assert names == [f"y{k}" for k in range(PAPER[setup][1])]
    structure = LinearChain(names, templates=synthetic.HMM_TEMPLATES, hash_bits=10)
    assert synthetic.HMM_TEMPLATES == ("bias", "form")
    for i, (x, y, o) in enumerate(zip(sentences, states, observations)):
        assert x.n == 8
        assert x.forms[1:] == [f"x{k}" for k in o]
        assert x.upos[1:] == [f"y{k}" for k in y]
        assert (x.source, x.first_line) == ("train", i + 1)
        gold = structure.gold(x)
        np.testing.assert_array_equal(gold, y)
        assert structure.tag_names(gold) == x.upos[1:]
        scores = structure.scores(x, Weights(10))
        assert scores.shape == structure.shape(8)
    # The chain can be built from the sentences too, with the same tags when every state occurs.
    many = synthetic.to_sentences(*synthetic.dataset(setup, 0, splits=(300, 0, 0))[1]["train"], "train")
    assert set(LinearChain.from_sentences(many, templates=synthetic.HMM_TEMPLATES).tags) == set(names)


def test_unknown_setup_is_an_error():
    with pytest.raises(ValueError, match="setup"):
        synthetic.dataset(4, 0)


@pytest.mark.parametrize("setup", [1, 3])
def test_posterior_decoding_takes_each_positions_most_probable_state(setup):
    """HMM.posterior_decode against brute-force state marginals P(y_i | x) over every state
    sequence of length 4: at each position the state with the largest marginal (ties: any of them)."""
    hmm, _ = synthetic.dataset(setup, 2, splits=(1, 0, 0))
    rng = np.random.default_rng(10 + setup)
    K, length = hmm.n_states, 4
    candidates = [np.array(y) for y in itertools.product(range(K), repeat=length)]
    differs = 0
    for obs in hmm.sample(30, length, rng)[1]:
        joint = np.exp([log_joint(hmm, y, obs) for y in candidates])
        marginal = np.zeros((length, K))
        for y, p in zip(candidates, joint):
            marginal[np.arange(length), y] += p
        got = hmm.posterior_decode(obs)
        assert np.allclose(marginal[np.arange(length), got], marginal.max(axis=1), rtol=1e-9)
        differs += not np.array_equal(got, hmm.viterbi(obs))
    assert differs >= 1  # on some sequences it is not Viterbi: the test sees which decoder ran
