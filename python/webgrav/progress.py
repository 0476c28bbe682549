"""A progress bar for ``Simulation.evolve`` on a terminal: steps done of
how many and steps per second, redrawn at most ten times a second (the
native module calls it after every batch of steps, with the GIL)."""

import sys
import time


class ProgressBar:
    WIDTH = 30

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.drawn = 0.0
        self.shown = False

    @staticmethod
    def wanted(stream=None):
        """Whether ``stream`` (default stderr) is a terminal."""
        stream = stream if stream is not None else sys.stderr
        try:
            return stream.isatty()
        except (AttributeError, ValueError):
            return False

    def __call__(self, done, of):
        now = time.perf_counter()
        if now - self.drawn < 0.1 and done != of:
            return
        self.drawn = now
        rate = done / max(now - self.start, 1e-9)
        if of:
            filled = int(self.WIDTH * done / of)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"\r[{bar}] {done}/{of} steps, {rate:.1f} steps/s"
        else:
            # Hermite: block steps, with no count known ahead.
            text = f"\r{done} block steps, {rate:.1f}/s"
        self.stream.write(text)
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self.stream.write("\r" + " " * (self.WIDTH + 40) + "\r")
            self.stream.flush()
