"""HTML for the web view: every value from a session passes `e` (control, bidi and
invisible characters made visible by values/visible.py, then HTML-escaped, quotes
included), so no stored string can open a tag, close one, or end an attribute.

Invariant: pages are built from these helpers only; a string reaches a page unescaped
only when it is a literal of this package (tags, our own numbers).
"""

import html
from collections.abc import Iterable
from urllib.parse import quote, urlencode

from gitsessions.values.visible import visible

CSS_PATH = "/assets/view.css"


def e(value: object) -> str:
    """`value` as text safe anywhere in HTML: in an element, or in a quoted attribute."""
    return html.escape(visible(str(value)), quote=True)


def href(path: str, **query: object) -> str:
    """A link to a page of this server, its query values URL-encoded, then escaped."""
    args = {k: str(v) for k, v in query.items() if v is not None and v != ""}
    url = quote(path, safe="/") + ("?" + urlencode(args) if args else "")
    return html.escape(url, quote=True)


def link(path: str, text: object, **query: object) -> str:
    return f'<a href="{href(path, **query)}">{e(text)}</a>'


def number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else e(value)


def table(headings: Iterable[str], rows: Iterable[Iterable[str]], css: str = "") -> str:
    """A table whose cells are already HTML (each built with `e`)."""
    head = "".join(f"<th>{e(h)}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{e(css)}"' if css else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def marked(text: str, marks: Iterable[tuple[int, int]]) -> str:
    """A search snippet with the query's words in <mark>: each piece escaped on its own."""
    out, at = [], 0
    for start, end in marks:
        out.append(e(text[at:start]) + "<mark>" + e(text[start:end]) + "</mark>")
        at = end
    return "".join(out) + e(text[at:])


CLOSING = "</main></body></html>\n"


def opening(title: str, css: str | None = None) -> str:
    """A page up to its content: the stylesheet linked (or, for a file of its own, `css`
    inline under a policy that allows no script), a bar back to the index."""
    if css is None:
        head = f'<link rel="stylesheet" href="{CSS_PATH}">'
        bar = '<nav class="bar"><a href="/">gitsessions</a></nav>'
    else:
        policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
        head = f'<meta http-equiv="Content-Security-Policy" content="{policy}"><style>{css}</style>'
        bar = '<nav class="bar"><span>gitsessions</span></nav>'
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="referrer" content="no-referrer">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">{head}'
        f"<title>{e(title)}</title></head><body>{bar}<main>"
    )


def page(title: str, body: str, css: str | None = None) -> str:
    """A whole page: `opening`, `body`, `CLOSING`."""
    return opening(title, css) + body + CLOSING
