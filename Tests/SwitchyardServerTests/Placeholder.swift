// Server tests: see the suites in this folder.
