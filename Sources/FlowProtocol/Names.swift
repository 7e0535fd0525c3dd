/// Short names for the wire types every Flowbus process handles.
/// The app payloads keep their generated `Flowbus_V1_` names so they never clash with FlowKit's own types.
public typealias Envelope = Flowbus_V1_Envelope
/// The `flowbus.v1.Error` payload; `Error` alone would shadow Swift's protocol.
public typealias WireError = Flowbus_V1_Error
public typealias ErrorCode = Flowbus_V1_ErrorCode
