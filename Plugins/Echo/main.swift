print("echo")
