flowbus.v1.IntentF
signinlogIn
emailana@example.com
passwordcorrect horse "terminal-7-0042*abc:
terminal-7HÄ®æ©¶ ú√]*5Ø