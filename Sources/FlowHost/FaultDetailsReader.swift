import FlowProtocol
import MessagePath

/// What fault rules aimed at a session or a method need from a request body: its Envelope's
/// session and the intent's action or the call's method. The broker knows no payload; the host does.
enum FaultDetailsReader {
    static func details(_ body: [UInt8]) -> FaultDetails {
        guard let envelope = try? Envelope.decodeChecked(body) else { return FaultDetails() }
        var details = FaultDetails(session: envelope.session.isEmpty ? nil : envelope.session)
        if let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) {
            details.method = intent.action
        } else if let call = try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self) {
            details.method = call.method
        }
        return details
    }
}
