"""Reading ``visualize_array_sharding`` drawings back as grids of device labels."""

import re

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def device_grids(text: str) -> list[list[list[str]]]:
    """The device labels of each drawing in ``text``: one list of rows per picture, each row
    the labels of the boxes on one text line, left to right."""
    pictures, rows = [], None
    for line in ANSI.sub("", text).splitlines():
        if line.startswith("┌"):
            rows = []
        elif line.startswith("└"):
            pictures.append(rows)
            rows = None
        elif rows is not None and "CPU" in line:
            rows.append([cell.strip() for cell in line.strip().strip("│").split("│")])
    return pictures
