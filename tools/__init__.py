"""Development tools of this repository (not part of the package): the documentation site's
mkdocs hooks (``make docs``)."""
