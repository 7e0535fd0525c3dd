flowbus.v1.Echo
hello"
cli-1-0001:cliH€€θοΚΓ]σ“