"""The mkdocs hooks of ``make docs`` (``mkdocs.yml``): the README is the site's home page.

The guides live in ``docs/`` and link each other relatively, as GitHub shows them; the README
links them as ``docs/<page>.md``. On the site the README becomes ``index.md``, its links into
``docs/`` lose that prefix, links to ``README.md`` go to the home page, and links to files of the
repository outside ``docs/`` (``examples/``, ``tests/``, ...) point at ``repo_url`` when
``mkdocs.yml`` sets one, else become their text.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```[^\n]*$", flags=re.MULTILINE | re.DOTALL)


def on_files(files: Files, config: Any) -> Files:
    """Add the README as the site's ``index.md``.

    Parameters
    ----------
    files:
        The files of ``docs_dir``.
    config:
        The mkdocs configuration.

    Returns
    -------
    Files
        ``files`` with ``index.md`` added.
    """
    readme = Path(config.config_file_path).parent / "README.md"
    files.append(File.generated(config, "index.md", content=readme.read_text()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Rewrite a page's relative links for the site (outside code blocks).

    Parameters
    ----------
    markdown:
        The page's markdown.
    page:
        The page; ``page.file.src_uri`` is its path in ``docs_dir``.
    config:
        The mkdocs configuration (``repo_url``).
    files:
        The site's files.

    Returns
    -------
    str
        The markdown with its links rewritten.
    """
    src = page.file.src_uri
    # where the page's links are relative to, from the repository's root
    base = "" if src == "index.md" else posixpath.dirname(posixpath.join("docs", src))
    here = posixpath.dirname(src)

    def link(match: re.Match[str]) -> str:
        bang, label, target = match.groups()
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return match.group(0)
        path, hash_, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(base, path))
        if resolved == "README.md":
            new = posixpath.relpath("index.md", here or ".")
        elif resolved.startswith("docs/"):
            new = posixpath.relpath(resolved.removeprefix("docs/"), here or ".")
        elif config.repo_url:
            new = f"{config.repo_url.rstrip('/')}/blob/main/{resolved}"
        else:
            return label
        return f"{bang}[{label}]({new}{hash_}{anchor})"

    parts, last = [], 0
    for fence in FENCE.finditer(markdown):
        parts.append(LINK.sub(link, markdown[last : fence.start()]))
        parts.append(fence.group(0))
        last = fence.end()
    parts.append(LINK.sub(link, markdown[last:]))
    return "".join(parts)
