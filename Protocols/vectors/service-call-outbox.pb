
outbox
emailana@example.com