"""Progress bars that read well where they are written: redrawn in place on a terminal; written to anything
else (a file, a pipe, CI's log, ``nohup``), where each redraw would be one more chunk of the file, a plain line at
most every :data:`PLAIN_EVERY` seconds (``POKEBENCH_PROGRESS_EVERY`` sets it) and one at the end."""

from __future__ import annotations

import os
import sys
from typing import Any

from tqdm import tqdm

__all__ = ["PLAIN_EVERY", "PlainLines", "plain_every", "progress_bar"]

#: Seconds between two progress lines when the bar is not written to a terminal.
PLAIN_EVERY = 30.0


def plain_every() -> float:
    """:data:`PLAIN_EVERY`, or the seconds ``POKEBENCH_PROGRESS_EVERY`` gives (a number of seconds)."""
    text = os.environ.get("POKEBENCH_PROGRESS_EVERY")
    try:
        return max(0.0, float(text)) if text else PLAIN_EVERY
    except ValueError:
        raise ValueError(f"POKEBENCH_PROGRESS_EVERY must be a number of seconds (e.g. 30), not {text!r}; "
                         "unset it for the default") from None


class PlainLines(tqdm):
    """tqdm for a file or a pipe: each display a line of its own ending in a newline (no carriage returns, no
    bar drawn in characters; tqdm's figures as on a terminal), at most one every `every` seconds, and the last
    one when it closes. The rate is this start's mean (tqdm's smoothing off): tqdm smooths over the items between
    its own update lines, and lines written at a redraw are not among them, so a smoothed rate counted the items
    of many lines over the time since the last one."""

    def __init__(self, *args: Any, every: float, **kwargs: Any) -> None:
        super().__init__(*args, mininterval=every, miniters=1, smoothing=0, leave=False, dynamic_ncols=False,
                         ncols=None,
                         bar_format="{desc}: {percentage:3.0f}% | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
                                    "{rate_fmt}{postfix}]", **kwargs)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if msg is None:  # tqdm's own line ('' is its "clear the line", which a file needs not)
            self.fp.write(f"{self}\n")
            self.fp.flush()
            self.last_print_t = self._time()  # tqdm counts from its own updates' lines only, not a refresh's
        return msg is None

    def due(self) -> bool:
        """Whether a line written now keeps to the interval."""
        return self._time() - self.last_print_t >= self.mininterval  # tqdm's own clock and last line

    def close(self) -> None:
        if not self.disable:  # the last line: where the run ended
            self.refresh()
        super().close()


def progress_bar(total: int, desc: str, unit: str, initial: int = 0, disable: bool = False) -> tqdm:
    """A bar on standard error: tqdm's own on a terminal, :class:`PlainLines` elsewhere. Set its text with
    ``set_postfix(..., refresh=False)`` before ``update``: a refresh of :class:`PlainLines` is a line."""
    if sys.stderr.isatty():
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, dynamic_ncols=True, disable=disable)
    return PlainLines(total=total, initial=initial, desc=desc, unit=unit, every=plain_every(), disable=disable)
