#ifndef FLOWBUS_BENCH_CRAWZMQ_SHIM_H
#define FLOWBUS_BENCH_CRAWZMQ_SHIM_H
// libzmq's C API, for the baselines the benchmarks compare Flowbus against.
#include <zmq.h>
#include <sys/prctl.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#include <sys/syscall.h>

// Names the calling thread for perf and top (prctl is variadic, so Swift cannot call it).
static inline void CRawZMQ_nameThread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

// Pins the calling thread to `cpu` alone: 0, or the errno. sched_setaffinity(2) through
// syscall(2), as glibc's wrapper and CPU_SET need _GNU_SOURCE, which a module's header cannot set.
static inline int CRawZMQ_pinThread(int cpu) {
    unsigned long mask[16] = {0};
    const int bits = (int)(8 * sizeof(unsigned long));
    if (cpu < 0 || cpu >= 16 * bits) return EINVAL;
    mask[cpu / bits] = 1UL << (cpu % bits);
    return syscall(SYS_sched_setaffinity, 0, sizeof mask, mask) == 0 ? 0 : errno;
}

// The CPUs the calling thread may run on (its affinity: taskset, a cgroup's cpuset), ascending:
// stores up to `capacity` of them and returns how many there are, or minus the errno.
static inline int CRawZMQ_allowedCPUs(int *cpus, int capacity) {
    unsigned long mask[16] = {0};
    const int bits = (int)(8 * sizeof(unsigned long));
    if (syscall(SYS_sched_getaffinity, 0, sizeof mask, mask) < 0) return -errno;
    int count = 0;
    for (int cpu = 0; cpu < 16 * bits; cpu++) {
        if (mask[cpu / bits] & (1UL << (cpu % bits))) {
            if (count < capacity) cpus[count] = cpu;
            count++;
        }
    }
    return count;
}

// Asks the kernel to kill the calling process when the thread that started it ends: a
// benchmark's helper processes must not outlive an interrupted run.
static inline void CRawZMQ_dieWithParent(void) {
    prctl(PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0UL, 0UL, 0UL);
}

// Callgrind's client requests, for Benchmarks/scripts/instructions: zero the counts where a
// measured phase starts, dump them where it ends, under a label. Outside valgrind each is a few
// instructions that do nothing; without valgrind's headers at build time, nothing at all.
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
static inline void CRawZMQ_instructionsZero(void) { CALLGRIND_ZERO_STATS; }
static inline void CRawZMQ_instructionsDump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
static inline int CRawZMQ_underValgrind(void) { return RUNNING_ON_VALGRIND ? 1 : 0; }
#else
static inline void CRawZMQ_instructionsZero(void) {}
static inline void CRawZMQ_instructionsDump(const char *label) { (void)label; }
static inline int CRawZMQ_underValgrind(void) { return 0; }
#endif
#endif
