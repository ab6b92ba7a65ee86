"""Pictures of shardings: exact uncolored text (JAX's layout), captions, colors and HTML."""

import io

import numpy as np
import pytest
from rich.console import Console

import spmd
from spmd import NamedSharding, P, device_put
from spmd.sharding.visualize import (
    sharding_html,
    sharding_picture,
    visualize_array_sharding,
    visualize_sharding,
)


@pytest.fixture(autouse=True)
def plain_stdout(monkeypatch):
    """Let rich see what it sees in CI: a captured stdout that is no terminal."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def drawn(capsys, shape, sharding, **kwargs) -> str:
    visualize_sharding(shape, sharding, **kwargs)
    return capsys.readouterr().out


def test_1d_array_split_eight_ways_is_one_row_of_eight_boxes(capsys):
    mesh = spmd.make_mesh((8,), ("x",))
    assert drawn(capsys, (8,), NamedSharding(mesh, P("x"))) == (
        "┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐\n"
        "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n"
        "└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘\n"
    )


GRID_2X4 = """\
┌──────────┬──────────┬──────────┬──────────┐
│          │          │          │          │
│  CPU 0   │  CPU 1   │  CPU 2   │  CPU 3   │
│          │          │          │          │
│          │          │          │          │
├──────────┼──────────┼──────────┼──────────┤
│          │          │          │          │
│  CPU 4   │  CPU 5   │  CPU 6   │  CPU 7   │
│          │          │          │          │
│          │          │          │          │
└──────────┴──────────┴──────────┴──────────┘
"""


def test_2d_array_split_over_both_mesh_axes_is_a_2x4_grid(capsys, mesh):
    assert drawn(capsys, (4, 8), NamedSharding(mesh, P("x", "y"))) == GRID_2X4


def test_use_color_false_draws_the_same_borders(capsys, mesh):
    assert drawn(capsys, (4, 8), NamedSharding(mesh, P("x", "y")), use_color=False) == GRID_2X4


def test_visualize_array_sharding_draws_the_arrays_sharding(capsys, mesh):
    x = device_put(np.zeros((4, 8), np.float32), NamedSharding(mesh, P("x", "y")))
    visualize_array_sharding(x)
    assert capsys.readouterr().out == GRID_2X4


def test_replicated_array_is_one_box_naming_every_device(capsys, mesh):
    assert drawn(capsys, (4, 8), NamedSharding(mesh, P())) == (
        "┌────────────────────────────────────────────────┐\n"
        "│                                                │\n"
        "│                                                │\n"
        "│                                                │\n"
        "│                                                │\n"
        "│              CPU 0,1,2,3,4,5,6,7               │\n"
        "│                                                │\n"
        "│                                                │\n"
        "│                                                │\n"
        "│                                                │\n"
        "└────────────────────────────────────────────────┘\n"
    )


def test_array_replicated_over_one_mesh_axis_lists_both_holders(capsys, mesh):
    # rows split over 'y' (4 ways); every block is repeated along 'x' (devices i and i + 4)
    assert drawn(capsys, (8, 4), NamedSharding(mesh, P("y"))) == (
        "┌──────────┐\n"
        "│ CPU 0,4  │\n"
        "├──────────┤\n"
        "│ CPU 1,5  │\n"
        "├──────────┤\n"
        "│ CPU 2,6  │\n"
        "├──────────┤\n"
        "│ CPU 3,7  │\n"
        "└──────────┘\n"
    )


def test_uneven_blocks_get_proportional_cells_and_empty_shards_are_listed(capsys, mesh):
    # rows 5 = 3 + 2 (6 and 4 lines high); columns 6 = 2 + 2 + 2 + 0 (devices 3 and 7 empty)
    assert drawn(capsys, (5, 6), NamedSharding(mesh, P("x", "y"))) == (
        "┌────────┬────────┬────────┐\n"
        "│        │        │        │\n"
        "│        │        │        │\n"
        "│ CPU 0  │ CPU 1  │ CPU 2  │\n"
        "│        │        │        │\n"
        "│        │        │        │\n"
        "├────────┼────────┼────────┤\n"
        "│        │        │        │\n"
        "│ CPU 4  │ CPU 5  │ CPU 6  │\n"
        "│        │        │        │\n"
        "└────────┴────────┴────────┘\n"
        "empty shards: CPU 3, CPU 7\n"
    )


def test_array_with_a_zero_size_dimension_is_one_line(capsys, mesh):
    assert drawn(capsys, (0, 8), NamedSharding(mesh, P("x", "y"))) == (
        "empty array of shape (0, 8): every shard is empty (CPU 0,1,2,3,4,5,6,7)\n"
    )


def test_scalar_is_one_cell_as_wide_as_its_label(capsys, mesh):
    assert drawn(capsys, (), NamedSharding(mesh, P())) == (
        "┌─────────────────────┐\n│ CPU 0,1,2,3,4,5,6,7 │\n└─────────────────────┘\n"
    )


def test_3d_array_draws_one_titled_grid_per_leading_block(capsys, mesh):
    assert drawn(capsys, (4, 4, 8), NamedSharding(mesh, P("x", None, "y"))) == (
        "[0:2, :, :]\n"
        "┌───────┬───────┬───────┬───────┐\n"
        "│       │       │       │       │\n"
        "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n"
        "│       │       │       │       │\n"
        "└───────┴───────┴───────┴───────┘\n"
        "\n"
        "[2:4, :, :]\n"
        "┌───────┬───────┬───────┬───────┐\n"
        "│       │       │       │       │\n"
        "│ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n"
        "│       │       │       │       │\n"
        "└───────┴───────┴───────┴───────┘\n"
    )


def test_3d_array_with_unsplit_leading_dimension_is_one_grid_with_replicas(capsys, mesh):
    out = drawn(capsys, (3, 4, 8), NamedSharding(mesh, P(None, None, "y")))
    assert out.splitlines()[0] == "[:, :, :]"
    assert out.count("[") == 1
    assert [line.split("│")[1:-1] for line in out.splitlines() if "CPU" in line] == [
        ["CPU 0,4", "CPU 1,5", "CPU 2,6", "CPU 3,7"]
    ]


def test_4d_array_titles_give_every_leading_dimension(capsys, mesh):
    out = drawn(capsys, (2, 3, 4, 8), NamedSharding(mesh, P("x", "y")))
    titles = [line for line in out.splitlines() if line.startswith("[")]
    assert titles == [
        "[0:1, 0:1, :, :]",
        "[0:1, 1:2, :, :]",
        "[0:1, 2:3, :, :]",
        "[1:2, 0:1, :, :]",
        "[1:2, 1:2, :, :]",
        "[1:2, 2:3, :, :]",
    ]
    assert out.splitlines()[-1] == "empty shards: CPU 3, CPU 7"


def test_host_memory_is_captioned(capsys, mesh):
    out = drawn(capsys, (8,), NamedSharding(mesh, P(("x", "y")), memory_kind="pinned_host"))
    assert out.splitlines()[-1] == "memory: pinned_host"
    assert "memory:" not in drawn(capsys, (8,), NamedSharding(mesh, P(("x", "y"))))


def render_colored(renderable) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor")
    console.print(renderable)
    return console.file.getvalue()


def test_colored_picture_has_backgrounds_and_no_borders(mesh):
    out = render_colored(sharding_picture((4, 8), NamedSharding(mesh, P("x", "y"))))
    assert "┌" not in out and "│" not in out
    assert "\x1b[" in out and "48;2;57;59;121" in out  # tab20b's first color, #393b79, as bg
    for i in range(8):
        assert f"CPU {i}" in out


def test_colored_cells_take_a_margin_where_the_borders_were(mesh):
    console = Console(
        file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True
    )
    console.print(sharding_picture((4, 8), NamedSharding(mesh, P("x", "y"))))
    blank, row = " " * 48, "   CPU {}       CPU {}       CPU {}       CPU {}    "
    cell_row = [blank, blank, row, blank, blank, blank]  # 6 lines of 4 cells, each 12 wide
    assert console.export_text().splitlines() == [
        *(line.format(0, 1, 2, 3) for line in cell_row),
        *(line.format(4, 5, 6, 7) for line in cell_row),
    ]


def test_color_map_picks_the_cell_colors(mesh):
    picture = sharding_picture((8,), NamedSharding(mesh, P("x")), color_map=lambda v: (1, 0, 0))
    assert "48;2;255;0;0" in render_colored(picture)  # red background


def test_sharding_html_has_caption_labels_and_colors(mesh):
    html = sharding_html((4, 8), np.float32, NamedSharding(mesh, P("x", "y")))
    assert html.startswith("<!DOCTYPE html>")
    assert "f32[4,8]</span> NamedSharding(mesh=Mesh(&#x27;x&#x27;: 2, &#x27;y&#x27;: 4), " in html
    assert "spec=P(&#x27;x&#x27;, &#x27;y&#x27;))" in html
    assert "background-color: #393b79" in html
    for i in range(8):
        assert f"CPU {i}" in html


def test_array_repr_html_is_the_sharding_picture(mesh):
    x = device_put(np.zeros((5, 6), np.int32), NamedSharding(mesh, P("x", "y")))
    html = x._repr_html_()
    assert "i32[5,6]" in html
    assert "empty shards: CPU 3, CPU 7" in html


def test_wide_arrays_shrink_to_fit_and_keep_every_label(capsys):
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    for shape, spec in [((4, 64), P(None, ("x", "y"))), ((2, 512), P("x", "y"))]:
        visualize_sharding(shape, NamedSharding(mesh, spec))
        lines = capsys.readouterr().out.splitlines()
        assert max(len(line) for line in lines) <= 80
        for i in range(8):
            assert any(f"CPU {i} " in line for line in lines), (shape, i)
