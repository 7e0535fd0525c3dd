#define _GNU_SOURCE
#include "CFlowHost.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

struct cflowhost_report {
    int stage;
    int error;
};

/// Moves `fd` to a number above stdio, close-on-exec, so dup2 onto 0/1/2 never clobbers it.
static int cflowhost_above_stdio(int fd) {
    if (fd > 2) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int saved = errno;
    close(fd);
    errno = saved;
    return moved;
}

static void cflowhost_child_report(int report_fd, int stage, int error) {
    struct cflowhost_report report = { stage, error };
    ssize_t ignored = write(report_fd, &report, sizeof report);
    (void)ignored;
    _exit(127);
}

static void cflowhost_close_from_3(int keep, rlim_t limit) {
#ifdef SYS_close_range
    if (keep > 3 && syscall(SYS_close_range, 3u, (unsigned)(keep - 1), 0u) != 0) goto loop;
    if (syscall(SYS_close_range, (unsigned)(keep + 1), ~0u, 0u) == 0) return;
loop:
#endif
    for (rlim_t fd = 3; fd < limit; fd++) {
        if ((int)fd != keep) close((int)fd);
    }
}

/// Everything between fork and exec: async-signal-safe calls only.
static void cflowhost_child(const char *path, char *const argv[], char *const envp[], int log_fd,
                            int report_fd, pid_t parent, rlim_t fd_limit, int cpu) {
    setpgid(0, 0);
    // Pinned before exec: every thread the plugin makes inherits it. Best effort: the parent
    // reads the child's CPUs back and says so when this did not hold.
    if (cpu >= 0) (void)cflowhost_pin_thread(0, cpu);
    // Linux sends this when the parent *thread* that forked exits, hence the supervisor's own thread.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);

    // glibc refuses to touch its internal signals (32, 33); the kernel call does not. An all-zero
    // kernel sigaction is SIG_DFL with no flags and an empty mask on every architecture.
    unsigned long default_action[4] = { 0 };
    for (int signal_number = 1; signal_number < NSIG; signal_number++) {
        syscall(SYS_rt_sigaction, signal_number, default_action, NULL, _NSIG / 8);
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    // SIGUSR2 tells a plugin to read its fault order (ProcessFaultOrder). A plugin starts with it
    // ignored (an ignored signal stays ignored across exec), so one sent before the plugin has
    // set up its handler, or to a plugin that takes no orders, is lost rather than fatal.
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGUSR2, &ignore, NULL);

    if (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) cflowhost_child_report(report_fd, CFLOWHOST_STAGE_CHILD_SETUP, errno);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0) cflowhost_child_report(report_fd, CFLOWHOST_STAGE_CHILD_SETUP, errno);
    if (null_fd != 0 && dup2(null_fd, 0) < 0) cflowhost_child_report(report_fd, CFLOWHOST_STAGE_CHILD_SETUP, errno);
    cflowhost_close_from_3(report_fd, fd_limit);

    execve(path, argv, envp);
    cflowhost_child_report(report_fd, CFLOWHOST_STAGE_EXEC, errno);
}

int cflowhost_spawn(const char *path, char *const argv[], char *const envp[], const char *log_path,
                    int cpu, pid_t *pid_out, int *stage_out) {
    *pid_out = 0;
    *stage_out = CFLOWHOST_STAGE_NONE;

    int report_pipe[2];
    if (pipe2(report_pipe, O_CLOEXEC) != 0) {
        *stage_out = CFLOWHOST_STAGE_PIPE;
        return errno;
    }
    report_pipe[0] = cflowhost_above_stdio(report_pipe[0]);
    report_pipe[1] = cflowhost_above_stdio(report_pipe[1]);
    if (report_pipe[0] < 0 || report_pipe[1] < 0) {
        int error = errno;
        if (report_pipe[0] >= 0) close(report_pipe[0]);
        if (report_pipe[1] >= 0) close(report_pipe[1]);
        *stage_out = CFLOWHOST_STAGE_PIPE;
        return error;
    }

    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd >= 0) log_fd = cflowhost_above_stdio(log_fd);
    if (log_fd < 0) {
        int error = errno;
        close(report_pipe[0]);
        close(report_pipe[1]);
        *stage_out = CFLOWHOST_STAGE_OPEN_LOG;
        return error;
    }

    struct rlimit limits;
    rlim_t fd_limit = 1024;
    if (getrlimit(RLIMIT_NOFILE, &limits) == 0 && limits.rlim_cur != RLIM_INFINITY) fd_limit = limits.rlim_cur;
    pid_t parent = getpid();

    // Signals stay blocked across fork so the child cannot run an inherited handler before resetting it.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t pid = fork();
    if (pid == 0) cflowhost_child(path, argv, envp, log_fd, report_pipe[1], parent, fd_limit, cpu);
    int fork_error = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);

    close(report_pipe[1]);
    close(log_fd);
    if (pid < 0) {
        close(report_pipe[0]);
        *stage_out = CFLOWHOST_STAGE_FORK;
        return fork_error;
    }
    // Also set from this side, so the group exists before anyone signals it.
    setpgid(pid, pid);

    struct cflowhost_report report;
    ssize_t got;
    do {
        got = read(report_pipe[0], &report, sizeof report);
    } while (got < 0 && errno == EINTR);
    close(report_pipe[0]);

    if (got == (ssize_t)sizeof report) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        *stage_out = report.stage;
        return report.error;
    }
    *pid_out = pid;
    return 0;
}

int cflowhost_kill(pid_t pid, int signal) {
    return kill(pid, signal) == 0 ? 0 : errno;
}

pid_t cflowhost_reap(pid_t pid, int *status_out) {
    pid_t result;
    do {
        result = waitpid(pid, status_out, WNOHANG);
    } while (result < 0 && errno == EINTR);
    return result < 0 ? -errno : result;
}

int cflowhost_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    long fd = syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) return -errno;
    if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) != 0) {
        int error = errno;
        close((int)fd);
        return -error;
    }
    return (int)fd;
#else
    (void)pid;
    return -ENOSYS;
#endif
}

int cflowhost_wake_fd(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int cflowhost_exited(int status) { return WIFEXITED(status); }
int cflowhost_exit_status(int status) { return WEXITSTATUS(status); }
int cflowhost_signaled(int status) { return WIFSIGNALED(status); }
int cflowhost_term_signal(int status) { return WTERMSIG(status); }

int cflowhost_malloc_trim(void) {
    return malloc_trim(0);
}

unsigned long long cflowhost_heap_free_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return (unsigned long long)info.fordblks;
}

int cflowhost_allowed_cpus(pid_t pid, int *cpus_out, int capacity) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(pid, sizeof set, &set) != 0) return -errno;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        if (count < capacity) cpus_out[count] = cpu;
        count++;
    }
    return count;
}

int cflowhost_pin_thread(pid_t tid, int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(tid, sizeof one, &one) == 0 ? 0 : errno;
}

int cflowhost_pin_process(int cpu) {
    // Twice over the task list: a thread made while the first pass ran may have been made by
    // a thread not pinned yet; after the second, every thread that exists was pinned, and
    // threads made later inherit from a pinned one.
    int result = 0;
    for (int pass = 0; pass < 2; pass++) {
        DIR *tasks = opendir("/proc/self/task");
        if (tasks == NULL) return errno;
        struct dirent *entry;
        while ((entry = readdir(tasks)) != NULL) {
            if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
            int error = cflowhost_pin_thread((pid_t)atoi(entry->d_name), cpu);
            // A thread that ended since the list was read is gone, not a failure.
            if (error != 0 && error != ESRCH) result = error;
        }
        closedir(tasks);
    }
    return result;
}
