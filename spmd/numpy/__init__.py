"""spmd.numpy: NumPy's array functions on spmd Arrays, eagerly or inside traced functions."""

from spmd.numpy import creation, elementwise, indexing, linalg, reductions, shape
from spmd.numpy.creation import *  # noqa: F403
from spmd.numpy.elementwise import *  # noqa: F403
from spmd.numpy.indexing import *  # noqa: F403
from spmd.numpy.linalg import *  # noqa: F403
from spmd.numpy.reductions import *  # noqa: F403
from spmd.numpy.shape import *  # noqa: F403

__all__ = [
    *creation.__all__,
    *elementwise.__all__,
    *indexing.__all__,
    *linalg.__all__,
    *reductions.__all__,
    *shape.__all__,
]
