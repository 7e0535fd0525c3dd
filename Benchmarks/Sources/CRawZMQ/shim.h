#ifndef FLOWBUS_BENCH_CRAWZMQ_SHIM_H
#define FLOWBUS_BENCH_CRAWZMQ_SHIM_H
// libzmq's C API, for the baselines the benchmarks compare Flowbus against.
#include <zmq.h>
#include <sys/prctl.h>
#include <signal.h>
#include <unistd.h>

// Names the calling thread for perf and top (prctl is variadic, so Swift cannot call it).
static inline void CRawZMQ_nameThread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
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
