import FlowProtocol
import Majordomo
import ZeroMQ

/// The Error envelopes the broker sends a client in place of a reply it cannot give
/// (Protocols/README.md, "Limits" and "Unknown services").
enum ErrorReplies {
    static func body(for rejection: BrokerRejection) -> [Frame]? {
        let service = rejection.serviceName
        let frame: Frame
        switch rejection.reason {
        case .oversize:
            frame = ErrorReply.frame(
                .messageTooLarge, message: "the request to \(service) is larger than the bus accepts (\(rejection.detail))",
                hint: "send less per request, or start the host with a larger --max-message-bytes", writer: "broker")
        case .oversizeReply:
            frame = ErrorReply.frame(
                .messageTooLarge, message: "the reply of \(service) was larger than the bus accepts (\(rejection.detail))",
                hint: "the service must answer with less, or the host needs a larger --max-message-bytes", writer: "broker")
        case .expired:
            frame = ErrorReply.frame(
                .unknownService, message: "no worker for service \(service) registered in time (\(rejection.detail))",
                hint: "check the service name; `flowbus ps` lists the services that have workers", writer: "broker")
        case .queueFull:
            frame = ErrorReply.frame(
                .unavailable, message: "the queue of service \(service) is full (\(rejection.detail))",
                hint: "retry later; its workers are not keeping up or none are running (`flowbus ps`)", writer: "broker")
        case .forbidden:
            frame = ErrorReply.frame(
                .forbidden, message: "the bus refused the request to \(service): \(rejection.detail)",
                hint: "clients send intents to vm.* and coord.*; a plugin's own services are for the host's plugins (Protocols/README.md, \"Who may do what\")", writer: "broker")
        case .malformed:
            // Worded as a worker words a request with several body frames (FlowKit's EnvelopeService).
            frame = ErrorReply.frame(
                .malformed, message: "the request had 0 body frames; a Flowbus request is exactly one Envelope frame",
                hint: "send one serialized flowbus.v1.Envelope after the service name (Protocols/README.md §2)", writer: "broker")
        }
        return [frame]
    }
}
