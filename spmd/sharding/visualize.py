"""Pictures of shardings: the device grid of an array, drawn with rich (placeholder)."""


def visualize_sharding(shape, sharding, **kwargs):
    raise NotImplementedError


def visualize_array_sharding(x, **kwargs):
    raise NotImplementedError


def sharding_html(shape, dtype, sharding):
    raise NotImplementedError
