// flagctl commands.
