"""Vu et al.'s LFW subset: area resizing, the seeded draw, and the data built from the file."""

import numpy as np
import pytest
from experiments_support import data_dir

from fairpca.experiments.papers._vu_lfw import (
    VU_LFW_GROUP_SIZE,
    area_weights,
    draw_per_group,
    resize_area,
    vu_lfw,
)


def _supersampled(images, shape):
    """Area averages by brute force: repeat each pixel, then average equal blocks.

    Repeating every input pixel ``H`` times down and ``W`` times across gives
    an image of ``H * h`` by ``W * w`` sub-pixels; output pixel ``(i, j)`` is the
    mean of its block of ``h`` by ``w`` sub-pixels, exactly its footprint.
    """
    n, h, w = images.shape
    H, W = shape
    fine = np.repeat(np.repeat(images, H, axis=1), W, axis=2)
    return fine.reshape(n, H, h, W, w).mean(axis=(2, 4))


@pytest.mark.parametrize(("n_in", "n_out"), [(49, 24), (36, 24), (7, 3), (5, 5)])
def test_area_weights_are_footprint_overlaps(n_in, n_out):
    weights = area_weights(n_in, n_out)
    assert weights.shape == (n_out, n_in) and (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
    # Every input cell is spread in full: columns sum to n_out / n_in.
    np.testing.assert_allclose(weights.sum(axis=0), n_out / n_in, rtol=1e-12)
    expected = _supersampled(np.eye(n_in)[None, :, :], (n_out, n_in))[0]
    np.testing.assert_allclose(weights, expected, atol=1e-12)


def test_area_weights_by_hand():
    # 3 cells to 2: output 0 covers [0, 1.5), output 1 covers [1.5, 3).
    np.testing.assert_allclose(area_weights(3, 2), [[2 / 3, 1 / 3, 0], [0, 1 / 3, 2 / 3]])
    # An integer factor is a block mean.
    np.testing.assert_allclose(area_weights(4, 2), [[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    with pytest.raises(ValueError, match="n_out <= n_in"):
        area_weights(24, 49)


def test_resize_area_matches_brute_force_supersampling():
    images = np.random.default_rng(0).uniform(size=(3, 49, 36))
    resized = resize_area(images, (24, 24))
    assert resized.shape == (3, 24, 24)
    np.testing.assert_allclose(resized, _supersampled(images, (24, 24)), rtol=1e-12)
    # The mean grey value is kept, and a flat image stays flat.
    np.testing.assert_allclose(resized.mean(axis=(1, 2)), images.mean(axis=(1, 2)), rtol=1e-12)
    np.testing.assert_allclose(resize_area(np.full((1, 49, 36), 0.3), (24, 24)), 0.3)
    with pytest.raises(ValueError, match="n_images, height, width"):
        resize_area(images[0], (24, 24))


def test_draw_per_group_is_the_seeded_choice_of_each_group():
    groups = np.array(["male", "female"] * 30 + ["male"] * 10)
    rows = draw_per_group(groups, 5, np.random.default_rng(3))
    # The same draw by hand: women first, then men, from one generator.
    rng = np.random.default_rng(3)
    women = rng.choice(np.flatnonzero(groups == "female"), 5, replace=False)
    men = rng.choice(np.flatnonzero(groups == "male"), 5, replace=False)
    np.testing.assert_array_equal(rows, np.sort(np.concatenate([women, men])))
    assert (groups[rows] == "female").sum() == 5 and len(set(rows)) == 10
    with pytest.raises(ValueError, match="'female' has 30 rows, fewer than 31"):
        draw_per_group(groups, 31, np.random.default_rng(0))


@pytest.mark.parametrize("seed", [None, 1.5, True, "0"])
def test_vu_lfw_needs_a_seed(seed):
    with pytest.raises(TypeError, match="random_state must be an int"):
        vu_lfw(random_state=seed)


@pytest.mark.slow  # three draws of 4000 resized faces (the resize itself: tests above)
@pytest.mark.requires_data("lfw")
def test_vu_lfw_is_4000_faces_of_24_by_24():
    X, sex = vu_lfw(random_state=0)
    assert X.shape == (4000, 576) and X.dtype == np.float64
    assert (sex == "female").sum() == VU_LFW_GROUP_SIZE and (sex == "male").sum() == 2000
    assert 0 <= X.min() and X.max() <= 1 + 1e-12
    # Seeded: the same seed (or generator) gives the same faces, another seed others.
    X_again, _ = vu_lfw(random_state=np.random.default_rng(0))
    np.testing.assert_array_equal(X, X_again)
    X_other, _ = vu_lfw(random_state=1)
    assert not np.array_equal(X, X_other)


@pytest.mark.slow
@pytest.mark.requires_data("lfw")
def test_vu_lfw_against_the_raw_files():
    X, sex = vu_lfw(random_state=5)
    # Independently: the npz read with numpy, sex.txt (1 = male), the same draw,
    # 49 x 36 images resized by brute-force supersampling.
    with np.load(data_dir() / "lfw/lfw_samadi_1764px_grey_x3.npz") as archive:
        grey = archive["grey_x3"].astype(np.float64) / 3.0
    male = np.loadtxt(data_dir() / "lfw/sex.txt").astype(int) == 1
    rng = np.random.default_rng(5)
    women = rng.choice(np.flatnonzero(~male), 2000, replace=False)
    men = rng.choice(np.flatnonzero(male), 2000, replace=False)
    rows = np.sort(np.concatenate([women, men]))
    np.testing.assert_array_equal(sex == "male", male[rows])
    some = np.arange(0, 4000, 397)
    faces = _supersampled(grey[rows[some]].reshape(-1, 49, 36) / 255.0, (24, 24))
    np.testing.assert_allclose(X[some], faces.reshape(len(some), -1), rtol=1e-12)
    # Upright faces survive the resize: around each pixel's mean, vertically
    # neighbouring pixels are strongly correlated (0.87; 0.51 when the same values
    # are read as 42 x 42 images, as Samadi et al.'s text suggests).
    images = X.reshape(-1, 24, 24) - X.reshape(-1, 24, 24).mean(axis=0)
    vertical = np.corrcoef(images[:, :-1, :].ravel(), images[:, 1:, :].ravel())[0, 1]
    assert vertical > 0.8


@pytest.mark.slow
@pytest.mark.requires_data("lfw")
def test_vu2022_lfw_split_is_stratified_and_not_standardised():
    from fairpca.experiments import vu2022

    data = vu2022("lfw", split=3)
    assert data.X_train.shape == (1200, 576) and data.X_test.shape == (2800, 576)
    for s, n in ((data.s_train, 600), (data.s_test, 1400)):
        assert (s == "female").sum() == n and (s == "male").sum() == n
    # Grey values / 255, as drawn: the rows of both parts are rows of vu_lfw(seed 3).
    X, _ = vu_lfw(random_state=3)
    assert 0.0 <= data.X_train.min() and data.X_test.max() <= 1.0 + 1e-12
    rows = {row.tobytes() for row in X}
    assert all(row.tobytes() in rows for row in np.r_[data.X_train, data.X_test])
    theirs = vu2022("lfw", split=3, splits="authors")
    np.testing.assert_array_equal(theirs.X_train, data.X_train)
    assert "lfw" in data.description.lower() and len(data.feature_names) == 576
