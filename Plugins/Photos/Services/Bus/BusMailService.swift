import FlowKit
import FlowProtocol

/// `MailService` over the bus (`svc.mail`).
public final class BusMailService: MailService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: PhotosServiceName.mail)
    }

    public func send(_ mail: Mail) throws(ServiceFailure) {
        _ = try channel.call("send", ["to": mail.to, "subject": mail.subject, "body": mail.body])
    }

    public func outbox(email: String) throws(ServiceFailure) -> [Mail] {
        let result = try channel.call("outbox", ["email": email]).result
        guard let count = Int(result["count"] ?? "") else {
            throw .unavailable("svc.mail outbox answered no count; check that the services run the same version as this plugin")
        }
        return (0..<count).map { index in
            Mail(to: result["mail.\(index).to"] ?? email, subject: result["mail.\(index).subject"] ?? "", body: result["mail.\(index).body"] ?? "",
                 code: result["mail.\(index).code"])
        }
    }
}
