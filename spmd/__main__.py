"""Command line: ``python -m spmd demo`` runs a short tour on the default devices."""

import argparse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m spmd", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="a short tour: devices, a mesh, sharded arrays, pictures")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from spmd.demo import run

        run()


if __name__ == "__main__":
    main()
