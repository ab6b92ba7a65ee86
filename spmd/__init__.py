"""spmd: write array code for one device, run it over many (SPMD parallelism on NumPy)."""

from spmd import (
    debug,
    distributed,
    lax,
    multihost_utils,
    nn,
    numpy,
    random,
    sharding,
    test_util,
    tree_util,
)
from spmd.config import config
from spmd.core.trace import EvalTrace, TracerBoolConversionError, UnexpectedTracerError
from spmd.errors import (
    AxisNameError,
    ConfigError,
    DistributedError,
    ShapeError,
    ShardingError,
    SpmdError,
    SpmdMemoryError,
    SpmdOverflowError,
    SpmdTypeError,
    SpmdValueError,
    SpmdZeroDivisionError,
    TaskError,
)
from spmd.lax.resharding import reshard
from spmd.numpy import methods as _methods
from spmd.prims.indexing import SpmdIndexError
from spmd.runtime import eager as _eager
from spmd.runtime.array import Array, Shard
from spmd.runtime.construct import (
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from spmd.runtime.put import device_get, device_put
from spmd.sharding import (
    Mesh,
    NamedSharding,
    P,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    make_mesh,
    set_mesh,
    use_mesh,
)
from spmd.sharding.device import (
    CpuDevice,
    Device,
    device_count,
    devices,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)
from spmd.transforms import remat_policies as checkpoint_policies
from spmd.transforms.autodiff import grad, jvp, value_and_grad, vjp
from spmd.transforms.closure_convert import closure_convert
from spmd.transforms.custom_derivatives import custom_jvp, custom_vjp
from spmd.transforms.eval_shape import ShapeDtypeStruct, eval_shape
from spmd.transforms.jacobians import hessian, jacfwd, jacrev, linear_transpose, linearize
from spmd.transforms.jit import jit, make_jaxpr
from spmd.transforms.pmap import pmap
from spmd.transforms.remat import checkpoint, remat
from spmd.transforms.shard_map import shard_map, smap
from spmd.transforms.shards import num_shards, pmap_shards, shard, stack
from spmd.transforms.tasks import run_tasks, shard_tasks
from spmd.transforms.typeof import typeof
from spmd.transforms.vmap import vmap
from spmd.tree_util import tree_map  # JAX's old top-level alias, which tutorials still use

__version__ = "0.1.0"

# The layers meet here, so that none imports one above it: values outside any trace are
# evaluated by runtime/, which runs sharded operands through jit; the operators and methods
# that Arrays and tracers share (core's ArrayMethods) are spmd.numpy's.
EvalTrace.evaluate = staticmethod(_eager.run_eagerly)
_eager.compile_function = jit
_methods.install()

__all__ = [
    "Array",
    "AxisNameError",
    "ConfigError",
    "CpuDevice",
    "Device",
    "DistributedError",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "ShapeDtypeStruct",
    "ShapeError",
    "Shard",
    "Sharding",
    "ShardingError",
    "SingleDeviceSharding",
    "SpmdError",
    "SpmdIndexError",
    "SpmdMemoryError",
    "SpmdOverflowError",
    "SpmdTypeError",
    "SpmdValueError",
    "SpmdZeroDivisionError",
    "TaskError",
    "TracerBoolConversionError",
    "UnexpectedTracerError",
    "checkpoint",
    "checkpoint_policies",
    "closure_convert",
    "config",
    "custom_jvp",
    "custom_vjp",
    "debug",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "distributed",
    "eval_shape",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linear_transpose",
    "linearize",
    "local_device_count",
    "local_devices",
    "make_array_from_callback",
    "make_array_from_process_local_data",
    "make_array_from_single_device_arrays",
    "make_jaxpr",
    "make_mesh",
    "multihost_utils",
    "nn",
    "num_shards",
    "numpy",
    "pmap",
    "pmap_shards",
    "process_count",
    "process_index",
    "random",
    "remat",
    "reshard",
    "run_tasks",
    "set_mesh",
    "shard",
    "shard_map",
    "shard_tasks",
    "sharding",
    "smap",
    "stack",
    "test_util",
    "tree_map",
    "tree_util",
    "typeof",
    "use_mesh",
    "value_and_grad",
    "vjp",
    "vmap",
]
