#ifndef FLOWBUS_CZEROMQ_SHIM_H
#define FLOWBUS_CZEROMQ_SHIM_H
#include <zmq.h>
#endif
