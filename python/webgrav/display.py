"""Pictures of a simulation in Jupyter: PNGs drawn offscreen by webgrav's
own renderer (the page's shader and camera), shown inline through
IPython's rich display (``_repr_png_``) or saved to a file. The
interactive view (the web app in an iframe) is ``viewer.py``'s."""


class Picture:
    """A PNG image; Jupyter shows it inline."""

    def __init__(self, png):
        self.png = bytes(png)

    def _repr_png_(self):
        return self.png

    def save(self, path):
        """Writes the PNG to ``path``."""
        with open(path, "wb") as f:
            f.write(self.png)

    def __repr__(self):
        return f"<webgrav.Picture: PNG of {len(self.png)} bytes>"


def in_notebook():
    """Whether an IPython kernel (Jupyter) or shell is running us."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def in_kernel():
    """Whether a Jupyter kernel runs us (a frontend that can show HTML),
    not a terminal IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


def show(picture):
    """Displays ``picture`` in IPython and returns None; elsewhere returns
    it (to save)."""
    if in_notebook():
        from IPython.display import display

        display(picture)
        return None
    return picture
