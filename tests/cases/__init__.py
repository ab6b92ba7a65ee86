"""The case table: every public spmd.numpy and spmd.nn function, and spmd.lax's control flow, with
the inputs it is checked on.

Each row (a :class:`Case`) is plain data: ``fn(m, *arrays)`` runs with ``m = numpy`` (the oracle)
or ``m = spmd.numpy``, keyword arguments baked in; ``shapes`` gives one shape per array argument;
``dtypes`` the dtypes the row runs on; ``domain`` what values the inputs hold. A row with
``error`` says spmd raises that error (eagerly and at trace time) for an input NumPy rejects too.

``tests/test_cases.py`` runs every row eagerly and under ``spmd.jit``; ``make_inputs`` and
``assert_matches`` are here so other tests (sharded runs, random programs) can reuse the rows.
"""

from tests.cases.comparison import _comparison, _padding
from tests.cases.contraction import _contraction
from tests.cases.control import LAX_CONTROL_FLOW, NUMPY_LAX, _control
from tests.cases.convolution import _convolution
from tests.cases.creation import _creation
from tests.cases.data_dependent import _data_dependent
from tests.cases.diagonals import _diagonals
from tests.cases.elementwise import _elementwise
from tests.cases.fft import _fft
from tests.cases.indexing import _indexing, random_index
from tests.cases.interchange import _interchange
from tests.cases.lax_arithmetic import _lax_arithmetic
from tests.cases.lax_elementwise import _lax_elementwise
from tests.cases.lax_linalg import _lax_linalg
from tests.cases.lax_operators import _lax_operators
from tests.cases.lax_reductions import _lax_reductions
from tests.cases.linalg import LINALG, _linalg
from tests.cases.linalg_compositions import _linalg_compositions
from tests.cases.manipulation import _manipulation
from tests.cases.nn import NUMPY_NN, _nn
from tests.cases.reductions import _reductions
from tests.cases.select import DISCONTINUOUS, KNOWN_BUGS, cases_for, shape_preserving
from tests.cases.sets_and_bins import _sets_and_bins
from tests.cases.shape import _shape
from tests.cases.sorting import _sorting
from tests.cases.special import _special
from tests.cases.statistics import _products, _statistics
from tests.cases.table import (
    BOOL,
    CASES,
    DOMAINS,
    DTYPES,
    FAMILIES,
    FLOATS,
    INTS,
    NO_DTYPE,
    NUMBERS,
    RTOL,
    SHAPES,
    Case,
    assert_matches,
    make_input,
    make_inputs,
    numpy_result,
)
from tests.cases.windows import _windows

# The rows, family by family, in this order (the modules' imports above are sorted by name).
_elementwise()
_reductions()
_shape()
_contraction()
_indexing()
_creation()
_nn()
_comparison()
_padding()
_sorting()
_diagonals()
_manipulation()
_control()
_statistics()
_products()
_sets_and_bins()
_fft()
_special()
_linalg()
_convolution()
_windows()
_lax_linalg()
_linalg_compositions()
_lax_elementwise()
_data_dependent()
_interchange()
_lax_arithmetic()
_lax_operators()
_lax_reductions()

__all__ = [
    "BOOL",
    "CASES",
    "DISCONTINUOUS",
    "DOMAINS",
    "DTYPES",
    "FAMILIES",
    "FLOATS",
    "INTS",
    "KNOWN_BUGS",
    "LAX_CONTROL_FLOW",
    "LINALG",
    "NO_DTYPE",
    "NUMBERS",
    "NUMPY_LAX",
    "NUMPY_NN",
    "RTOL",
    "SHAPES",
    "Case",
    "assert_matches",
    "cases_for",
    "make_input",
    "make_inputs",
    "numpy_result",
    "random_index",
    "shape_preserving",
]
