flowbus.v1.Echo
hello:futureH€€θοΚΓ]IνPΗ