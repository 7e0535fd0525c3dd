import FlowProtocol
import Logging

/// Wraps service handlers so that each failed or refused call is logged: service, method and
/// outcome, never the arguments (they hold passwords, codes and tokens).
public enum LoggedServiceHandlers {
    public static func wrap(_ handlers: [String: ServiceHandler], logger: Logger?) -> [String: ServiceHandler] {
        guard let logger else { return handlers }
        return handlers.reduce(into: [:]) { logged, entry in
            let (service, handler) = entry
            logged[service] = { call in
                let reply = handler(call)
                if reply.hasError {
                    logger.warning("service call failed", metadata: [
                        "flowbus.service": "\(service)", "flowbus.method": "\(call.method)", "flowbus.error": "\(reply.error.message)",
                    ])
                } else if !reply.refusal.isEmpty {
                    logger.debug("service call refused", metadata: [
                        "flowbus.service": "\(service)", "flowbus.method": "\(call.method)", "flowbus.refusal": "\(reply.refusal)",
                    ])
                }
                return reply
            }
        }
    }
}
