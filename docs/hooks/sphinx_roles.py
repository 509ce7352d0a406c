"""MkDocs hook: show the Sphinx roles of numpydoc docstrings as plain code in the API pages.

Docstrings cross-reference with Sphinx roles (:func:`resolve`, :class:`~pkg.Model`), which
mkdocstrings renders as Markdown: the role's name would show as text before the code. This drops
it, and a leading ``~``, leaving the code span.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:func|meth|class|mod|attr|obj|data|exc):<code>~?")


def on_page_content(html: str, **_: object) -> str:
    return ROLE.sub("<code>", html)
