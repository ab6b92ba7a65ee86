"""spmd.numpy: NumPy's array functions on spmd Arrays, eagerly or inside traced functions."""

from spmd.numpy import (
    binning,
    comparison,
    constants,
    creation,
    diagonals,
    elementwise,
    fft,  # noqa: F401  (spmd.numpy.fft, NumPy's fft module: an attribute, not in __all__)
    indexing,
    interchange,
    linalg,
    manipulation,
    padding,
    products,
    reductions,
    sets,
    shaping,
    sorting,
    stacking,
    statistics,
    updates,
)
from spmd.numpy.binning import *  # noqa: F403
from spmd.numpy.comparison import *  # noqa: F403
from spmd.numpy.constants import *  # noqa: F403
from spmd.numpy.creation import *  # noqa: F403
from spmd.numpy.diagonals import *  # noqa: F403
from spmd.numpy.elementwise import *  # noqa: F403
from spmd.numpy.indexing import *  # noqa: F403
from spmd.numpy.interchange import *  # noqa: F403
from spmd.numpy.linalg import *  # noqa: F403
from spmd.numpy.manipulation import *  # noqa: F403
from spmd.numpy.padding import *  # noqa: F403
from spmd.numpy.products import *  # noqa: F403
from spmd.numpy.reductions import *  # noqa: F403
from spmd.numpy.sets import *  # noqa: F403
from spmd.numpy.shaping import *  # noqa: F403
from spmd.numpy.sorting import *  # noqa: F403
from spmd.numpy.statistics import *  # noqa: F403
from spmd.numpy.updates import *  # noqa: F403

__all__ = [
    *binning.__all__,
    *comparison.__all__,
    *constants.__all__,
    *creation.__all__,
    *diagonals.__all__,
    *elementwise.__all__,
    *indexing.__all__,
    *interchange.__all__,
    *linalg.__all__,
    *manipulation.__all__,
    *padding.__all__,
    *products.__all__,
    *reductions.__all__,
    *sets.__all__,
    *shaping.__all__,
    *sorting.__all__,
    *statistics.__all__,
    *updates.__all__,
]

# Attributes (NumPy's own np.shape(x) on spmd values dispatches here) that join __all__ once
# the case table (tests/cases/) has rows for them.
empty_like = creation.empty_like
ndim, shape, size = shaping.ndim, shaping.shape, shaping.size
vdot = linalg.vdot
column_stack, dstack, hstack, vstack = (
    stacking.column_stack,
    stacking.dstack,
    stacking.hstack,
    stacking.vstack,
)
