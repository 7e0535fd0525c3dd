#ifndef FLOWBUS_CPROCESSID_H
#define FLOWBUS_CPROCESSID_H
#include <stdbool.h>
#include <sys/types.h>

/// The address of the `getpid` this target defines, to compare with what the dynamic linker
/// resolves `getpid` to (dlsym(RTLD_DEFAULT, "getpid")): equal when libzmq's calls reach it.
const void *cprocessid_getpid_address(void);

/// The process id as the kernel says it now (the system call, no cache).
pid_t cprocessid_kernel_pid(void);

/// Counts calls to `getpid` while on (tests: that libzmq's calls come here).
void cprocessid_count_calls(bool on);
unsigned long cprocessid_calls(void);

/// Forks; the child compares `getpid()` with the kernel's answer and with its parent's id and
/// reports through a pipe. 1: the child saw its own id; 0: it saw another; -1: the fork or the
/// pipe failed (errno set).
int cprocessid_child_sees_own_pid(void);

#endif
