// The run directory, the host's announcement and the FLOWBUS_* variables live in
// FlowbusEnvironment (clients and plugins read them without the host); FlowHost's users keep
// seeing them here.
@_exported import FlowbusEnvironment
