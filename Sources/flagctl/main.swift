print("flagctl")
