#ifndef FLOWBUS_BENCH_CRAWZMQ_SHIM_H
#define FLOWBUS_BENCH_CRAWZMQ_SHIM_H
// libzmq's C API, for the baselines the benchmarks compare Flowbus against.
#include <zmq.h>
#endif
