#ifndef CFLOWHOST_H
#define CFLOWHOST_H

#include <sys/types.h>

/// The step of `cflowhost_spawn` that failed, so the caller can say what went wrong.
typedef enum {
    CFLOWHOST_STAGE_NONE = 0,
    CFLOWHOST_STAGE_PIPE = 1,
    CFLOWHOST_STAGE_OPEN_LOG = 2,
    CFLOWHOST_STAGE_FORK = 3,
    CFLOWHOST_STAGE_CHILD_SETUP = 4,
    CFLOWHOST_STAGE_EXEC = 5,
} cflowhost_stage;

/// Forks and execs `path` with `argv` and `envp` (both NULL-terminated) in its own process group,
/// stdin from /dev/null, stdout and stderr appended to `log_path`, default signal mask and
/// dispositions, no other inherited fd, and SIGKILL delivered when the forking thread dies.
/// With `cpu` >= 0 the child is pinned to that CPU before exec (best effort: read it back with
/// `cflowhost_allowed_cpus`); -1 leaves it where the kernel puts it.
/// Returns 0 and stores the child's pid, or returns an errno and stores the failed stage.
/// Call it only from a long-lived thread: PR_SET_PDEATHSIG fires when the forking *thread* exits.
int cflowhost_spawn(const char *path, char *const argv[], char *const envp[], const char *log_path,
                    int cpu, pid_t *pid_out, int *stage_out);

/// kill(2): returns 0 or the errno.
int cflowhost_kill(pid_t pid, int signal);

/// waitpid(pid, WNOHANG), retrying EINTR: returns the pid when it exited (status stored),
/// 0 while it runs, or minus the errno.
pid_t cflowhost_reap(pid_t pid, int *status_out);

/// pidfd_open(2): a descriptor that polls readable once the process has exited (it does not
/// reap it); minus the errno when the kernel has none (before Linux 5.3) or refuses.
int cflowhost_pidfd_open(pid_t pid);

/// An eventfd, non-blocking and close-on-exec, for waking a poll from another thread; minus the
/// errno on failure.
int cflowhost_wake_fd(void);

/// The wait status macros, which Swift cannot import.
int cflowhost_exited(int status);
int cflowhost_exit_status(int status);
int cflowhost_signaled(int status);
int cflowhost_term_signal(int status);

/// glibc's malloc_trim(0): hands every free page of every malloc arena back to the system.
/// Returns 1 when memory was released.
int cflowhost_malloc_trim(void);

/// Bytes malloc holds free in its arenas (mallinfo2's fordblks): freed, not yet reused.
unsigned long long cflowhost_heap_free_bytes(void);

/// The CPUs `pid` (0: this thread) may run on, ascending: stores up to `capacity` of them and
/// returns how many there are, or minus the errno.
int cflowhost_allowed_cpus(pid_t pid, int *cpus_out, int capacity);

/// sched_setaffinity of one thread (a tid; 0: this one) to `cpu` alone: 0 or the errno.
int cflowhost_pin_thread(pid_t tid, int cpu);

/// Pins every thread of this process to `cpu` (threads made later inherit it from theirs):
/// 0, or the errno of a thread that could not be pinned.
int cflowhost_pin_process(int cpu);

#endif
