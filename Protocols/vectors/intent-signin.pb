
signinlogIn
emailana@example.com
passwordcorrect horse 