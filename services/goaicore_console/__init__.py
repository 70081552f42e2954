"""The auditor's console: a read-only web view of the PostgreSQL projection.

Conversations listed and searched, each one's timeline in log order, its snapshot
as of any position (folded with the worker's own fold), verify with differences
side by side, dead letters, tokens and cost. Pages are rendered on the server
(Jinja2, every value escaped) with no script at all; the content security policy
forbids any. Run it with ``goaicore console``; it accepts the API's bearer tokens.
"""

from goaicore_console.main import main

__all__ = ["main"]
