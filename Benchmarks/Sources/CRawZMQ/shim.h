#ifndef FLOWBUS_BENCH_CRAWZMQ_SHIM_H
#define FLOWBUS_BENCH_CRAWZMQ_SHIM_H
// libzmq's C API, for the baselines the benchmarks compare Flowbus against.
#include <zmq.h>
#include <sys/prctl.h>
#include <signal.h>

// Names the calling thread for perf and top (prctl is variadic, so Swift cannot call it).
static inline void CRawZMQ_nameThread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

// Asks the kernel to kill the calling process when the thread that started it ends: a
// benchmark's helper processes must not outlive an interrupted run.
static inline void CRawZMQ_dieWithParent(void) {
    prctl(PR_SET_PDEATHSIG, (unsigned long)SIGKILL, 0UL, 0UL, 0UL);
}
#endif
