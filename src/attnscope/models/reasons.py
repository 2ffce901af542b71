"""An error's message as a value of another keyed error, in that error's language.

A reader that wraps an error (``raise error(ModelLoadError, "errors.models_source_why",
source=cfg_file, why=reason(e))``) passes :func:`reason`: where the wrapped error carries a key,
the command line writes it in ``--lang`` too; a library's own words (an OSError, a JSON decoder's
message) stay as written.
"""

from __future__ import annotations

from typing import Union

from ..i18n import Msg


def reason(e: BaseException) -> Union[Msg, str]:
    """``e``'s message: a :class:`Msg` of its key and values where it has a key (its English
    rendering is ``str(e)``), else ``str(e)``."""
    key = getattr(e, "key", None)
    return Msg(key, **getattr(e, "values", {})) if key else str(e)


__all__ = ["reason"]
