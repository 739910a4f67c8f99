"""Development tools of this repository (not part of the package): the documentation site's
mkdocs hooks (``make docs``) and the generator of the guides' options tables
(``python -m tools.docs_options``)."""
