print("flagsd: issue 3")
