// Placeholder until the module lands (issue 2 skeleton).
