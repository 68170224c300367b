"""Array API inputs (torch, CuPy, array-api-strict) for the moment-based estimators.

Under ``sklearn.set_config(array_api_dispatch=True)`` (which needs
``SCIPY_ARRAY_API=1`` in the environment before scipy is imported), an
estimator that declares ``_supports_array_api`` fits on arrays of any
namespace following scikit-learn's conventions
(:func:`sklearn.utils._array_api.get_namespace`, ``device``, ``move_to``):

- the pass over the rows (the group moments,
  :func:`fairpca.moments._device_group_scatters`) and ``transform`` /
  ``inverse_transform`` run in ``X``'s namespace, on its device, in the most
  precise float type of that device (float64, as the NumPy route, unless the
  device has only float32);
- labels, sample weights and ``y`` are small: they are brought to the host
  (:func:`to_host`), encoded there, and their codes sent to the device as
  index arrays;
- the small ``p x p`` problem of the closed-form estimators
  (:class:`~fairpca.MeanMatchingFairPCA`, :class:`~fairpca.LinearErasure`,
  the group-blind PCA of every moment-based estimator) is solved in the
  moments' namespace, on their device: the same functions serve NumPy and
  the other namespaces (:func:`namespace_of`, :func:`like`; ``eigh``, ``svd``
  and ``qr`` of the standard's ``linalg`` extension), only the counts and
  proportions (``k`` numbers) living on the host. Eigenvectors are then
  those of the device's ``eigh``: equal to NumPy's up to rounding, sign
  (fixed by :func:`fairpca._linalg.flip_signs`) and rotation within
  repeated eigenvalues;
- :class:`~fairpca.MinMaxLossFairPCA` solves on the host: its two-group
  solver is Kelley's cutting planes on the weight of the two groups, each
  step a top-``d`` eigen-solve by ARPACK's Lanczos method or LAPACK's subset
  driver (neither is in the standard) whose scalars decide the next step,
  then a rounding to an extreme point; its cost is in those small steps, and
  on a GPU each would wait for the device. The moments (``k`` matrices of
  ``p x p``) are moved to the host once
  (:meth:`fairpca.GroupMoments.to_numpy`) and the answer moved back
  (:func:`fitted_to_device`);
- the fitted arrays are in ``X``'s namespace and on its device, and
  ``moments_`` stays on the device so that ``partial_fit`` accumulates there.

Estimators whose solvers read the rows or iterate in NumPy refuse such input
with one error (:func:`refuse_array_api`).
"""

from __future__ import annotations

import numpy as np
from sklearn import get_config
from sklearn.externals import array_api_compat
from sklearn.externals.array_api_compat import is_array_api_obj
from sklearn.utils._array_api import (
    _is_numpy_namespace,
    get_namespace_and_device,
    move_to,
    supported_float_dtypes,
)

__all__ = [
    "ARRAY_API_CLASSES",
    "device_namespace",
    "fitted_to_device",
    "float_dtypes",
    "held_namespace",
    "like",
    "namespace_of",
    "refuse_array_api",
    "to_host",
]

#: What fits on array-API input besides the estimators that declare it.
ARRAY_API_CLASSES = ("GroupMoments",)


def device_namespace(*arrays):
    """``(xp, device)`` of array-API arrays that are not NumPy's, else None.

    None also when ``array_api_dispatch`` is off (scikit-learn then converts
    inputs with ``np.asarray``) and for lists, DataFrames and sparse matrices.
    """
    if not get_config()["array_api_dispatch"]:
        return None
    arrays = [a for a in arrays if _is_foreign_array(a)]
    if not arrays:
        return None
    xp, _, device = get_namespace_and_device(*arrays)
    if _is_numpy_namespace(xp):
        return None
    return xp, device


def held_namespace(array):
    """``(xp, device)`` of an array held outside NumPy (whatever the dispatch setting), else None.

    For fitted state (moments, components): where it lives does not depend on
    the configuration at the time it is read.
    """
    if not _is_foreign_array(array):
        return None
    return array_api_compat.array_namespace(array), array_api_compat.device(array)


def namespace_of(array):
    """``(xp, device)`` to compute with ``array`` in: NumPy itself for NumPy arrays.

    NumPy (2 and later) follows the array API standard in its own namespace,
    so code written against ``xp`` runs on NumPy arrays unchanged, and other
    arrays get their namespace from :func:`held_namespace`.
    """
    return held_namespace(array) or (np, "cpu")


def like(values, reference):
    """Host ``values`` (counts, proportions) as an array beside ``reference``.

    In ``reference``'s namespace, on its device, in its float type; for a
    NumPy ``reference``, ``values`` are returned as they are.
    """
    held = held_namespace(reference)
    if held is None:
        return values
    xp, device = held
    return xp.asarray(np.asarray(values, dtype=np.float64), dtype=reference.dtype, device=device)


def _is_foreign_array(values):
    """Whether ``values`` is an array of an array-API library other than NumPy."""
    return not isinstance(values, np.ndarray | np.generic) and is_array_api_obj(values)


def to_host(values):
    """A NumPy copy of an array-API array (labels, weights: small); anything else unchanged."""
    if not _is_foreign_array(values):
        return values
    return move_to(values, xp=np, device="cpu")


def float_dtypes(xp, device):
    """The float types of ``device``, most precise first (float64 first where it exists)."""
    return tuple(d for d in supported_float_dtypes(xp, device) if d != getattr(xp, "float16", None))


def fitted_to_device(estimator, xp, device):
    """Move the fitted NumPy arrays of ``estimator`` to ``xp`` on ``device``.

    Every public fitted attribute (``name_``) that is a numeric ndarray is
    moved (floats in the device's most precise float type), except
    ``groups_``, the labels, which stay on the host as scikit-learn keeps
    ``classes_``.
    """
    dtype = float_dtypes(xp, device)[0]
    for name, value in list(vars(estimator).items()):
        if not name.endswith("_") or name.startswith("_") or name == "groups_":
            continue
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
            moved = move_to(np.ascontiguousarray(value), xp=xp, device=device)
            if value.dtype.kind == "f":
                moved = xp.astype(moved, dtype, copy=False)
            setattr(estimator, name, moved)


def refuse_array_api(estimator, xp, able):
    """The one error of an estimator that cannot fit on array-API input.

    ``able`` names the estimator classes that can (with :data:`ARRAY_API_CLASSES`).
    """
    able = sorted([*able, *ARRAY_API_CLASSES])
    return TypeError(
        f"{type(estimator).__name__} does not accept {xp.__name__.rsplit('.', 1)[-1]} arrays under "
        "array_api_dispatch=True: its solver reads the rows or iterates in NumPy. "
        f"These fit in any array-API namespace and device: {', '.join(able)}. "
        "Otherwise convert X to NumPy first (e.g. X.cpu().numpy() for torch) or fit "
        "with array_api_dispatch=False."
    )
