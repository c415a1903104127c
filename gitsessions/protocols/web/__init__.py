"""The store as a local, read-only web view (`gitsessions view`): server-rendered pages
of the sessions, served on 127.0.0.1 to the one browser holding the URL's token.

Owns: the HTTP server and its door (token, Host header, security headers), the pages
(index and search, a session, a turn, a compaction) and the one-file export.
Never: writes to the store, runs a script from a session (every stored string is escaped
through `markup.e`; pages carry no script and a Content-Security-Policy that allows none),
reads the environment or prints (the CLI hands it a `source.Source`), or reads a whole
long session for one page (each page reads a bounded range).
"""
