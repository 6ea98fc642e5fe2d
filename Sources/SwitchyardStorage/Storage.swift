// Storage protocol and SQLite backend: issue 3.
