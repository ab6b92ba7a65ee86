"""spmd.lax: operations below spmd.numpy: sharding constraints, collectives, dynamic slices,
loops, general contractions, convolutions, windowed reductions; spmd.lax.linalg:
decompositions and triangular solves."""

from spmd.lax import (
    collectives,
    control,
    convolution,
    elementwise,
    linalg,
    operators,
    resharding,
    slicing,
    special,
    windows,
)
from spmd.lax.collectives import *  # noqa: F403
from spmd.lax.control import *  # noqa: F403
from spmd.lax.convolution import *  # noqa: F403
from spmd.lax.elementwise import *  # noqa: F403
from spmd.lax.operators import *  # noqa: F403
from spmd.lax.resharding import *  # noqa: F403
from spmd.lax.slicing import *  # noqa: F403
from spmd.lax.special import *  # noqa: F403
from spmd.lax.windows import *  # noqa: F403

__all__ = [
    "linalg",
    *collectives.__all__,
    *control.__all__,
    *convolution.__all__,
    *elementwise.__all__,
    *operators.__all__,
    *resharding.__all__,
    *slicing.__all__,
    *special.__all__,
    *windows.__all__,
]
