"""Tests of the Fantope ADMM's constraint families (``fairpca._fantope_constraints``).

Each family is checked against its definition: the adjoint identity
``<A(P), y> = <P, A^T(y)>``, the restriction to a subspace against the map of
``Q P' Q^T``, the proximal map against an independent solver (scipy, cvxpy)
and its conjugate by the Fenchel-Young equality. A third family, a single
linear equality ``<C, P> = c``, is defined here only: plugged into the ADMM it
solves small problems whose optimum Clarabel confirms, the loop unchanged.
"""

import cvxpy as cp
import numpy as np
import pytest
from scipy import optimize, sparse

import fairpca._fantope_constraints as constraints
import fairpca._fantope_subspaces as subspaces
from fairpca._fantope_admm import _NormalEquations, solve_fantope_admm
from fairpca._fantope_constraints import ConstraintFamily, CovarianceLMIs, MeanConstraints
from fairpca._fantope_prox import _sym

Q_SIZE = 7


def _symmetric(rng, q=Q_SIZE):
    A = rng.standard_normal((q, q))
    return A + A.T


def _blocks(rng, family):
    return [rng.standard_normal(shape) for shape in family.shapes()]


def _inner(a, b):
    return sum(float(np.sum(x * y)) for x, y in zip(a, b, strict=True))


def _mean_family(rng, q=Q_SIZE):
    return MeanConstraints(rng.standard_normal((3, q)), np.array([0.5, 0.2, 0.0]))


def _lmi_family(rng, q=Q_SIZE, mu=0.3):
    diagonal = sparse.csr_matrix(
        (rng.uniform(0.5, 2, 4), (np.arange(4), [0, 2, 3, q - 1])), shape=(4, q)
    )
    dense = sparse.csr_matrix(rng.standard_normal((q - 1, q)))
    return CovarianceLMIs([[diagonal, None], [dense, rng.standard_normal((2, q))]], mu)


class LinearEquality(ConstraintFamily):
    """``<C, P> = c``: one linear functional, held at a value (the toy third family)."""

    kind = "functional"
    hard = True
    description = "<C, P> = c"

    def __init__(self, C, c):
        self.C, self.c = _sym(C), float(c)

    def shapes(self):
        return [(1,)]

    def apply(self, P):
        return [np.array([np.sum(self.C * P)])]

    def adjoint(self, y):
        return y[0][0] * self.C

    def restrict(self, B):
        restricted = LinearEquality(B.T @ self.C @ B, self.c)
        restricted.parent = self
        return restricted

    def prox(self, blocks, rho, hint):
        return [np.full(1, self.c)], None, None

    def support(self, y, aux=None, rho=None):
        return float(y[0][0] * self.c)

    def _extremes(self, d):
        """The Fantope points of least and greatest ``<C, P>``: bottom and top eigenvectors."""
        values, vectors = np.linalg.eigh(self.C)
        return (values[:d].sum(), vectors[:, :d]), (values[-d:].sum(), vectors[:, -d:])

    def prepare(self, S, d):
        self.low, self.high = self._extremes(d)
        if not self.low[0] <= self.c <= self.high[0]:
            raise ValueError(f"infeasible: <C, P> ranges over [{self.low[0]}, {self.high[0]}]")

    def restoration_directions(self, S, d):
        low, high = self._extremes(d)
        return np.hstack((low[1], high[1]))

    def make_feasible(self, W, values):
        value = float(np.sum(values * np.einsum("ia,ij,ja->a", W, self.C, W)))
        other, W_other = self.low if value > self.c else self.high
        if value == self.c:
            return W, np.diag(values)
        weight = (value - self.c) / (value - other)  # (1 - w) value + w other = c
        basis, triangle = np.linalg.qr(np.hstack((W, W_other)))
        left, right = triangle[:, : W.shape[1]], triangle[:, W.shape[1] :]
        core = (1 - weight) * (left * values) @ left.T + weight * right @ right.T
        return basis, _sym(core)

    def satisfied(self, W, core):
        return abs(np.sum(self.C * (W @ core @ W.T)) - self.c) <= 1e-9 * (1 + abs(self.c))


def _families(rng):
    return {
        "mean": _mean_family(rng),
        "lmi": _lmi_family(rng),
        "equality": LinearEquality(_symmetric(rng), 0.3),
    }


@pytest.mark.parametrize("name", ["mean", "lmi", "equality"])
@pytest.mark.parametrize("seed", range(3))
def test_adjoint_identity(name, seed):
    rng = np.random.default_rng(seed)
    family = _families(rng)[name]
    P, y = _symmetric(rng), _blocks(rng, family)
    adjoint = family.adjoint(y)
    np.testing.assert_allclose(adjoint, adjoint.T)
    assert _inner(family.apply(P), y) == pytest.approx(np.sum(P * adjoint), rel=1e-12)


@pytest.mark.parametrize("name", ["mean", "lmi", "equality"])
def test_restriction_is_the_constraint_of_the_embedded_matrix(name):
    rng = np.random.default_rng(4)
    family = _families(rng)[name]
    B, _ = np.linalg.qr(rng.standard_normal((Q_SIZE, 4)))
    restricted = family.restrict(B)
    P_small = _symmetric(rng, 4)
    P = B @ P_small @ B.T
    if name == "lmi":
        # Blocks R_k P' in other coordinates: ||R_k P'||_2 = ||F_k B P' B^T||_2.
        for small, full in zip(restricted.apply(P_small), family.apply(P), strict=True):
            assert np.linalg.norm(small, 2) == pytest.approx(np.linalg.norm(full, 2), rel=1e-12)
        W, core = np.linalg.qr(rng.standard_normal((4, 4)))[0], np.diag(rng.uniform(0, 1, 4))
        assert restricted.penalty(W, core) == pytest.approx(family.penalty(B @ W, core), rel=1e-12)
    else:
        for small, full in zip(restricted.apply(P_small), family.apply(P), strict=True):
            np.testing.assert_allclose(small, full, rtol=1e-12, atol=1e-13)
    # A restricted multiplier stands for a full one, with the same adjoint pairing and
    # the same conjugate: the full problem's bound from the restricted solve.
    y = _blocks(rng, restricted)
    lifted = restricted.lifted_adjoint(y)
    assert _inner(restricted.apply(P_small), y) == pytest.approx(np.sum(P * lifted), rel=1e-12)
    if name == "lmi":
        full_y = [Qk @ yk @ B.T for Qk, yk in zip(restricted.Qs, y, strict=True)]
        # (Nuclear norms from Gram eigenvalues: each zero singular value of the rank-4
        # full_y comes out as sqrt(rounding), about 1e-8 of the largest.)
        assert restricted.support(y) == pytest.approx(family.support(full_y), rel=1e-7)
        np.testing.assert_allclose(lifted, family.adjoint(full_y), atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_mean_prox_is_the_projection_onto_the_box(seed):
    rng = np.random.default_rng(seed)
    family = _mean_family(rng)
    t = [rng.standard_normal(3)]
    (w,), _, _ = family.prox(t, 2.0, None)
    assert np.all(w <= family.limits)  # feasible
    np.testing.assert_array_equal(family.prox([w], 2.0, None)[0][0], w)  # idempotent
    brute = optimize.minimize(
        lambda z: np.sum((z - t[0]) ** 2),
        np.minimum(family.limits, 0) - 1,
        bounds=[(None, limit) for limit in family.limits],
        method="L-BFGS-B",
    )
    np.testing.assert_allclose(w, brute.x, atol=1e-6)
    # Fenchel-Young: the multiplier of the projection pairs with w to its support value.
    y = family.multiplier([t[0] - w], 2.0)
    assert np.all(y[0] >= 0)
    assert _inner([w], y) == pytest.approx(family.support(y), rel=1e-12, abs=1e-14)


def test_mean_coupling_is_the_generic_one():
    rng = np.random.default_rng(5)
    family = _mean_family(rng)
    inverse = rng.uniform(0.2, 1, (Q_SIZE, Q_SIZE))
    inverse = inverse + inverse.T
    generic = ConstraintFamily.coupling(family, inverse)
    np.testing.assert_allclose(family.coupling(inverse), generic, rtol=1e-12)
    original = constraints._COUPLING_AT_ONCE
    try:
        constraints._COUPLING_AT_ONCE = 0  # row by row
        np.testing.assert_allclose(family.coupling(inverse), generic, rtol=1e-12)
    finally:
        constraints._COUPLING_AT_ONCE = original


@pytest.mark.parametrize("rho", [0.5, 4.0])
def test_lmi_prox_against_clarabel_and_its_conjugate(rho):
    rng = np.random.default_rng(6)
    family = _lmi_family(rng, q=5, mu=0.4)
    T = [3 * block for block in _blocks(rng, family)]
    Z, aux, _ = family.prox(T, rho, None)
    weight = family.mu / rho
    for block, z in zip(T, Z, strict=True):
        V = cp.Variable(block.shape)
        cp.Problem(
            cp.Minimize(weight * cp.square(cp.sigma_max(V)) + 0.5 * cp.sum_squares(V - block))
        ).solve(solver="CLARABEL")
        np.testing.assert_allclose(z, V.value, atol=1e-4)
    # Fenchel-Young with equality at the prox: h(Z) + h*(y) = <Z, y> for y = rho (T - Z).
    y = family.multiplier([t - z for t, z in zip(T, Z, strict=True)], rho)
    h = family.mu * sum(np.linalg.norm(z, 2) ** 2 for z in Z)
    assert h + family.support(y, aux, rho) == pytest.approx(_inner(Z, y), rel=1e-12)
    # The prox's by-products are ||T - Z||_*, and give the conjugate computed from y
    # (from Gram eigenvalues there: the zero singular values of the low-rank y come
    # out as sqrt(rounding), about 1e-8 of the largest).
    removed = [t - z for t, z in zip(T, Z, strict=True)]
    assert aux == pytest.approx([np.linalg.svd(r, compute_uv=False).sum() for r in removed])
    assert family.support(y) == pytest.approx(family.support(y, aux, rho), rel=1e-7)


def test_normal_equations_of_mixed_families():
    # sym(M P) + sum_f A_f^T A_f (P) = R, with M from the LMIs and two functional
    # families coupled through the Woodbury system.
    rng = np.random.default_rng(7)
    families = [_lmi_family(rng), _mean_family(rng), LinearEquality(_symmetric(rng), 0.0)]
    R = _symmetric(rng)
    P = _sym(_NormalEquations(families, Q_SIZE).solve(R))
    lhs = P + sum(family.adjoint(family.apply(P)) for family in families)
    np.testing.assert_allclose(lhs, R, atol=1e-10)


def _clarabel(S, d, C, c, factors=(), mu=0.0):
    """max <S, P> - mu sum ||F P||_2^2 over the Fantope with <C, P> = c, by Clarabel."""
    q = S.shape[0]
    P = cp.Variable((q, q), symmetric=True)
    objective = cp.trace(S @ P)
    if factors:
        objective -= mu * sum(cp.square(cp.sigma_max(F @ P)) for F in factors)
    cons = [P >> 0, np.eye(q) - P >> 0, cp.trace(P) == d, cp.trace(C @ P) == c]
    problem = cp.Problem(cp.Maximize(objective), cons)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return problem.value


@pytest.mark.parametrize("with_lmis", [False, True])
def test_a_new_family_plugged_into_the_admm(with_lmis):
    rng = np.random.default_rng(8)
    q, d = 6, 2
    X = rng.standard_normal((40, q)) * np.linspace(2, 0.5, q)
    S = X.T @ X / 40
    C = _symmetric(rng, q)
    values = np.linalg.eigvalsh(C)
    c = 0.3 * values[:d].sum() + 0.7 * values[-d:].sum()
    equality = LinearEquality(C, c)
    F = rng.standard_normal((3, q))
    family = [CovarianceLMIs([[sparse.csr_matrix(F), None]], 0.2), equality]
    if not with_lmis:
        family = family[1:]
    result = solve_fantope_admm(S, family, d, 1e-8, 20000)
    assert result.converged
    P = result.P
    eig = np.linalg.eigvalsh(P)
    assert eig[0] >= -1e-10 and eig[-1] <= 1 + 1e-10 and np.trace(P) == pytest.approx(d)
    assert np.sum(C * P) == pytest.approx(c, rel=1e-9)
    optimum = _clarabel(S, d, C, c, [F] if with_lmis else (), 0.2)
    # The certified interval [objective, objective + gap] holds Clarabel's optimum (to
    # Clarabel's tolerance, 1e-8 relative).
    slack = 1e-7 * abs(optimum)
    assert result.objective - slack <= optimum <= result.objective + result.gap + slack
    assert result.gap <= 1e-8 * abs(result.objective) + 1e-15
    assert result.multipliers[-1] is not None  # the family's multiplier y of <C, P> = c


def test_a_new_family_on_growing_subspaces(monkeypatch):
    # The growing-subspace solve restricts the family and lifts its multiplier back.
    rng = np.random.default_rng(9)
    q, d = 14, 2
    X = rng.standard_normal((60, q)) * np.linspace(2, 0.5, q)
    S = X.T @ X / 60
    C = _symmetric(rng, q)
    values = np.linalg.eigvalsh(C)
    c = 0.6 * values[:d].sum() + 0.4 * values[-d:].sum()
    monkeypatch.setattr(subspaces, "_SUBSPACE_FROM", 4)
    monkeypatch.setattr(subspaces, "_SUBSPACE_START", 0)
    monkeypatch.setattr(subspaces, "_SUBSPACE_STEP", 2)
    monkeypatch.setattr(subspaces, "_MAX_SHARE", 0.99)
    result = subspaces.solve_fantope_sdp(S, [LinearEquality(C, c)], d, 1e-7, 20000)
    assert result.converged
    assert np.sum(C * result.P) == pytest.approx(c, rel=1e-9)
    optimum = _clarabel(S, d, C, c)
    slack = 1e-7 * abs(optimum)
    assert result.objective - slack <= optimum <= result.objective + result.gap + slack
