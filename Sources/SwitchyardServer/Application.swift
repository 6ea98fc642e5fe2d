// flagsd application: issue 3.
