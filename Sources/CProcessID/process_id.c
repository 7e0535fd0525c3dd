// getpid with the process id kept in memory, for every Flowbus executable (the host, the
// plugins, the CLI, the benchmarks and the tests all link it through ZeroMQ).
//
// libzmq checks that it was not forked on every command-mailbox look (signaler_t::wait and
// recv_failable call getpid), and glibc stopped keeping the id in memory in 2.25: each call is a
// system call. A journey of the sample app made some 3,000 of them, a third of its system calls, at
// about 0.6 us each on this project's virtual machines. Defined in the executable, this getpid
// comes before glibc's for every library the executable loads, libzmq among them, as glibc's own
// was before 2.25: the id is read once at start and again in the child of every fork() (the
// pthread_atfork handler). A child made without fork() (posix_spawn, vfork, a raw clone) that
// called getpid before exec would read its parent's id, as with glibc before 2.25; none of
// Flowbus's do.
#define _GNU_SOURCE
#include "process_id.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t kept_pid;
static atomic_bool counting;
static atomic_ulong calls;

static void keep_pid(void) {
    kept_pid = (pid_t)syscall(SYS_getpid);
}

// Libraries' constructors run before this one: until it has, getpid asks the kernel and keeps
// nothing (a write from a child sharing the parent's memory would change the parent's id).
__attribute__((constructor)) static void cprocessid_start(void) {
    keep_pid();
    pthread_atfork(NULL, NULL, keep_pid);
}

pid_t getpid(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    }
    pid_t kept = kept_pid;
    return kept != 0 ? kept : (pid_t)syscall(SYS_getpid);
}

const void *cprocessid_getpid_address(void) {
    return (const void *)&getpid;
}

pid_t cprocessid_kernel_pid(void) {
    return (pid_t)syscall(SYS_getpid);
}

void cprocessid_count_calls(bool on) {
    if (on) atomic_store(&calls, 0);
    atomic_store(&counting, on);
}

unsigned long cprocessid_calls(void) {
    return atomic_load(&calls);
}

int cprocessid_child_sees_own_pid(void) {
    int report[2];
    if (pipe(report) != 0) return -1;
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        int error = errno;
        close(report[0]);
        close(report[1]);
        errno = error;
        return -1;
    }
    if (child == 0) {
        // Only async-signal-safe calls here: the parent has other threads.
        close(report[0]);
        pid_t seen = getpid();
        char verdict = (seen == (pid_t)syscall(SYS_getpid) && seen != parent) ? 1 : 0;
        ssize_t written = write(report[1], &verdict, 1);
        _exit(written == 1 ? 0 : 1);
    }
    close(report[1]);
    char verdict = 0;
    ssize_t got;
    do {
        got = read(report[0], &verdict, 1);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (got != 1) {
        errno = EIO;
        return -1;
    }
    return verdict;
}
