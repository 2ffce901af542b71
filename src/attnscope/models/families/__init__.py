"""One module per model family: each builds its :class:`~attnscope.models.registry.Family` and
registers it on import. :mod:`attnscope.models.registry` imports every module of this folder
(``pkgutil.iter_modules``) the first time a family is looked up, so a new family is one file here."""
