"""Pictures of shardings: which devices hold which block of an array, drawn with rich."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from rich import box
from rich.align import Align
from rich.color import Color as RichColor
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.style import Style
from rich.table import Table
from rich.text import Text

from spmd.errors import aval_str, shape_str
from spmd.sharding.device import Device
from spmd.sharding.named import Sharding

Color = tuple[float, ...] | str  # RGB(A) floats in [0, 1], or a rich color ('#5254a3', 'red')
ColorMap = Callable[[float], Color]
Interval = tuple[int, int]  # (start, stop) along one dimension
Blocks = dict[tuple[Interval, ...], list[Device]]  # block bounds → the devices holding it

# matplotlib's 'tab20b', the colormap JAX draws with (without depending on matplotlib).
_TAB20B = (
    "#393b79", "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b",
    "#cedb9c", "#8c6d31", "#bd9e39", "#e7ba52", "#e7cb94", "#843c39", "#ad494a",
    "#d6616b", "#e7969c", "#7b4173", "#a55194", "#ce6dbd", "#de9ed6",
)  # fmt: skip
_HEIGHT_TO_WIDTH = 2.5  # a terminal cell is about 2.5 times as tall as it is wide


def _tab20b(value: float) -> str:
    return _TAB20B[min(int(value * len(_TAB20B)), len(_TAB20B) - 1)]


def _colors(color_map: ColorMap, count: int) -> Iterator[str]:
    """``count`` colors of ``color_map``, stepping half-way round so neighbours differ (as JAX)."""
    values, index = np.linspace(0, 1, count), 0
    for _ in range(count):
        color = color_map(float(values[index]))
        if not isinstance(color, str):
            color = "#" + "".join(f"{int(c * 255):02X}" for c in color[:3])
        yield color
        index = (index + count // 2 + (count % 2 == 0)) % count


def _cell(label: str, height: int, width: int, color: str | None) -> Padding:
    """A block's cell: ``label`` centred in ``height`` lines of ``width`` columns (borders in)."""
    left, extra = divmod(width - len(label) - 2, 2)
    top, extra_rows = divmod(height - 2, 2)
    padding = [top, left + extra, top + extra_rows, left]
    style = Style()
    if color is not None:
        padding = [p + 1 for p in padding]  # no borders: the colored margin takes their place
        r, g, b = RichColor.parse(color).get_truecolor()
        text = "#000000" if r * 0.299 + g * 0.587 + b * 0.114 > 186 else "#ffffff"
        style = Style(bgcolor=color, color=text)
    padding = [max(p, 0) for p in padding]
    return Padding(Align(label, "center", vertical="middle"), tuple(padding), style=style)


def _table(rows: list[list[Padding]], use_color: bool) -> Table:
    table = Table(
        show_header=False,
        show_lines=not use_color,
        padding=0,
        highlight=not use_color,
        pad_edge=False,
        box=None if use_color else box.SQUARE,
    )
    for row in rows:
        table.add_row(*row)
    return table


def _label(devices: Sequence[Device]) -> str:
    """``CPU 0,4``: the kind of device, then the ids of all devices holding one block."""
    return f"{devices[0].platform.upper()} " + ",".join(str(d.id) for d in sorted(devices))


def _names(devices: Sequence[Device]) -> str:
    return ", ".join(d.label for d in sorted(devices))


def _blocks(shape: tuple[int, ...], sharding: Sharding) -> tuple[Blocks, list[Device]]:
    """The non-empty blocks of ``shape`` with their devices, and the devices of empty blocks."""
    blocks: Blocks = {}
    empty = []
    for device, index in sharding.devices_indices_map(shape).items():
        bounds = tuple(s.indices(n)[:2] for s, n in zip(index, shape, strict=True))
        if any(stop <= start for start, stop in bounds):
            empty.append(device)
        else:
            blocks.setdefault(bounds, []).append(device)
    return blocks, empty


def _grid(
    blocks: Blocks,
    shape: tuple[int, ...],
    base_height: int,
    color_map: ColorMap | None,
    min_width: int,
    max_width: int,
) -> Table:
    """JAX's picture of a 1-D or 2-D ``shape``: cells sized in proportion to their blocks."""
    flat = len(shape) == 1
    if flat:  # one row of height 1
        blocks = {((0, 1), *key): devices for key, devices in blocks.items()}
    base_width = int(base_height * (1 if flat else shape[1]) / shape[0])
    rows = sorted({key[0] for key in blocks})  # distinct block bounds, so uneven blocks work
    cols = sorted({key[1] for key in blocks})
    colors = _colors(color_map, len(rows) * len(cols)) if color_map else None
    labels = {key: _label(devices) for key, devices in blocks.items()}
    widths = [
        min(
            max(int((c[1] - c[0]) / shape[-1] * base_width * _HEIGHT_TO_WIDTH), min_width),
            max_width,
        )
        for c in cols
    ]
    room = max_width + len(cols) - 1  # a width counts both borders; neighbours share one
    if sum(widths) > room:  # shrink to fit (JAX lets rich squeeze the labels out instead)
        needed = [max(len(labels.get((r, c), "")) + 4 for r in rows) for c in cols]
        widths = [max(n, w * room // sum(widths)) for n, w in zip(needed, widths, strict=True)]
    table_rows = []
    for r in rows:
        cells = []
        for c, width in zip(cols, widths, strict=True):
            height = 1 if flat else int((r[1] - r[0]) / shape[0] * base_height)
            color = next(colors) if colors else None
            cells.append(_cell(labels.get((r, c), ""), height, width, color))
        table_rows.append(cells)
    return _table(table_rows, color_map is not None)


def _title(lead: tuple[Interval, ...], shape: tuple[int, ...]) -> str:
    """``[0:2, :, :]``: the leading-dimension block a grid of the last two dimensions shows."""
    sizes = shape[: len(lead)]
    parts = [":" if (a, b) == (0, n) else f"{a}:{b}" for (a, b), n in zip(lead, sizes, strict=True)]
    return "[" + ", ".join([*parts, ":", ":"]) + "]"


def sharding_picture(
    shape: Sequence[int],
    sharding: Sharding,
    *,
    use_color: bool = True,
    scale: float = 1.0,
    min_width: int = 9,
    max_width: int = 80,
    color_map: ColorMap | None = None,
) -> RenderableType:
    """The picture ``visualize_sharding`` prints, as a rich renderable to embed elsewhere.

    Example: ``rich.print(sharding_picture((4, 8), NamedSharding(mesh, P('x', 'y'))))``.
    """
    shape = tuple(int(d) for d in shape)
    blocks, empty = _blocks(shape, sharding)
    colors = (color_map or _tab20b) if use_color else None
    parts: list[RenderableType] = []
    if not blocks:
        held = f"every shard is empty ({_label(empty)})"
        parts.append(Text(f"empty array of shape {shape_str(shape)}: {held}"))
    elif not shape:  # a scalar: one cell, as wide as its label
        label = _label(blocks[()])
        color = next(_colors(colors, 1)) if colors else None
        parts.append(_table([[_cell(label, 1, len(label) + 4, color)]], colors is not None))
    elif len(shape) <= 2:
        parts.append(_grid(blocks, shape, int(10 * scale), colors, min_width, max_width))
    else:  # one small grid of the last two dimensions per block of the leading ones
        lead = len(shape) - 2
        for i, key in enumerate(sorted({key[:lead] for key in blocks})):
            grid = {k[lead:]: devices for k, devices in blocks.items() if k[:lead] == key}
            title = Text(_title(key, shape), style="bold")
            table = _grid(grid, shape[lead:], int(4 * scale), colors, min_width, max_width)
            parts += [Text(""), title, table] if i else [title, table]
    if blocks and empty:
        parts.append(Text(f"empty shards: {_names(empty)}"))
    if sharding.memory_kind != "device":
        parts.append(Text(f"memory: {sharding.memory_kind}"))
    return Group(*parts)


def visualize_sharding(
    shape: Sequence[int],
    sharding: Sharding,
    *,
    use_color: bool = True,
    max_width: int = 80,
    **options,
) -> None:
    """Print which devices hold which block of an array of ``shape`` laid out by ``sharding``.

    Colors are used only where the terminal shows them; otherwise cells get borders. Other
    options (``scale``, ``min_width``, ``color_map``) are those of ``sharding_picture``.
    Example: ``visualize_sharding((4, 8), NamedSharding(mesh, P('x', 'y')))`` draws a 2×4
    grid of cells labelled ``CPU 0`` … ``CPU 7``.
    """
    console = Console(width=max_width)
    use_color = use_color and console.color_system is not None
    console.print(
        sharding_picture(shape, sharding, use_color=use_color, max_width=max_width, **options)
    )


def visualize_array_sharding(arr: Any, **kwargs) -> None:
    """Print the sharding of the array ``arr``; options as for ``visualize_sharding``.

    Example: ``visualize_array_sharding(spmd.device_put(x, NamedSharding(mesh, P('x'))))``.
    """
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def sharding_html(shape: Sequence[int], dtype, sharding: Sharding) -> str:
    """HTML of a caption (aval and sharding) and the colored picture, for ``_repr_html_``.

    Example: ``sharding_html((4, 8), np.float32, sharding)`` starts its text with
    ``f32[4,8] NamedSharding(mesh=Mesh('x': 2, 'y': 4), spec=P('x', 'y'))``.
    """
    console = Console(
        record=True, file=io.StringIO(), width=80, force_terminal=True, color_system="truecolor"
    )
    described = re.sub(r", memory_kind=\w+", "", repr(sharding)).replace("PartitionSpec(", "P(")
    console.print(Text.assemble((aval_str(shape, dtype), "bold"), " ", described))
    console.print(sharding_picture(shape, sharding))
    return console.export_html(inline_styles=True)
