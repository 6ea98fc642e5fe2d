// Plugin framework: issue 5.
