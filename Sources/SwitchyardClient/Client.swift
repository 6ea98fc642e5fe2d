// Client runtime: issue 5.
