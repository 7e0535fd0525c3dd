import FlowProtocol
import MessagePath

/// What fault rules aimed at a session or a method need from a request body: its Envelope's
/// session and the intent's action or the call's method (a service call's session is its
/// `session` argument, when it has one). The broker knows no payload; the host does.
enum FaultDetailsReader {
    static func details(_ body: [UInt8]) -> FaultDetails {
        guard let envelope = try? Envelope.decodeChecked(body) else { return FaultDetails() }
        var details = FaultDetails(session: envelope.session.isEmpty ? nil : envelope.session)
        if let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) {
            details.method = intent.action
        } else if let call = try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self) {
            details.method = call.method
        } else if let call = try? envelope.unwrap(Flowbus_V1_ServiceCall.self) {
            details.method = call.method
            if details.session == nil, let session = call.args["session"], !session.isEmpty { details.session = session }
        }
        return details
    }
}
