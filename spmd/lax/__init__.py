"""spmd.lax: operations below spmd.numpy: sharding constraints, collectives, dynamic slices,
loops, general contractions, convolutions, windowed reductions; spmd.lax.linalg:
decompositions and triangular solves."""

from spmd.lax import (
    arithmetic,
    collectives,
    control,
    convolution,
    creation,
    cumulative,
    elementwise,
    linalg,
    operators,
    padding,
    reductions,
    resharding,
    slicing,
    sorting,
    special,
    windows,
)
from spmd.lax.arithmetic import *  # noqa: F403
from spmd.lax.collectives import *  # noqa: F403
from spmd.lax.control import *  # noqa: F403
from spmd.lax.convolution import *  # noqa: F403
from spmd.lax.creation import *  # noqa: F403
from spmd.lax.cumulative import *  # noqa: F403
from spmd.lax.elementwise import *  # noqa: F403
from spmd.lax.operators import *  # noqa: F403
from spmd.lax.padding import *  # noqa: F403
from spmd.lax.reductions import *  # noqa: F403
from spmd.lax.resharding import *  # noqa: F403
from spmd.lax.slicing import *  # noqa: F403
from spmd.lax.sorting import *  # noqa: F403
from spmd.lax.special import *  # noqa: F403
from spmd.lax.windows import *  # noqa: F403

__all__ = [
    "linalg",
    *arithmetic.__all__,
    *collectives.__all__,
    *control.__all__,
    *convolution.__all__,
    *creation.__all__,
    *cumulative.__all__,
    *elementwise.__all__,
    *operators.__all__,
    *padding.__all__,
    *reductions.__all__,
    *resharding.__all__,
    *slicing.__all__,
    *sorting.__all__,
    *special.__all__,
    *windows.__all__,
]
