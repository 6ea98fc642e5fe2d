// Combination matrix: issue 6.
