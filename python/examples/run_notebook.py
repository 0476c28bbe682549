"""Executes a notebook with nbclient (as CI does) and fails on the first
cell that raises: python run_notebook.py NOTEBOOK [--timeout SECONDS]."""

import argparse
import pathlib

import nbclient
import nbformat


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebook", type=pathlib.Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args()
    nb = nbformat.read(args.notebook, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=args.timeout, kernel_name="python3",
        resources={"metadata": {"path": str(args.notebook.parent)}},
    ).execute()
    images = sum(
        "image/png" in out.get("data", {})
        for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    print(f"{args.notebook}: {len(nb.cells)} cells ran, {images} images")


if __name__ == "__main__":
    main()
