#ifndef FLOWBUS_CSODIUM_SHIM_H
#define FLOWBUS_CSODIUM_SHIM_H
#include <sodium.h>
#endif
