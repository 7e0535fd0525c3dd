flowbus.v1.Echo
hello"
cli-1-00010:echoH‡∆√û ú√]p“‰`