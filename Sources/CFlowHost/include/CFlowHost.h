#ifndef CFLOWHOST_H
#define CFLOWHOST_H
int cflowhost_placeholder(void);
#endif
