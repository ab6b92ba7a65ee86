"""spmd.numpy: NumPy's array functions on spmd Arrays, eagerly or inside traced functions."""

from spmd.numpy.creation import *  # noqa: F403
from spmd.numpy.creation import __all__ as _creation
from spmd.numpy.elementwise import *  # noqa: F403
from spmd.numpy.elementwise import __all__ as _elementwise

__all__ = [*_creation, *_elementwise]
