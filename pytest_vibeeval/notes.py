"""What the plugin says about its own run (a suite-like file it left out, answers it did not cache,
a missing timeout backstop) goes to pytest's warnings summary, and never becomes an error."""

from __future__ import annotations

import warnings


def note(warning: Warning, stacklevel: int = 1) -> None:
    """Issue ``warning`` (``stacklevel`` as for :func:`warnings.warn`, from the caller). Where a
    filter turns warnings into errors (``-W error``, ``filterwarnings = error``) it is shown all the
    same: raised, it would fail the collection or the eval it came from, or the session, with a
    traceback of the plugin's. A filter that ignores it still does."""
    try:
        warnings.warn(warning, stacklevel=stacklevel + 1)
    except Warning as raised:
        if raised is not warning:
            raise
        with warnings.catch_warnings():
            warnings.simplefilter("always", type(warning))
            warnings.warn(warning, stacklevel=stacklevel + 1)
