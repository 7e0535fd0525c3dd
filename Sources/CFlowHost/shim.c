int cflowhost_placeholder(void) { return 0; }
