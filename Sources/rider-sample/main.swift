print("rider-sample: issue 5")
