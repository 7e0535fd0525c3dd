import FlowKit

/// `AccountService` over the bus: each method a call to `svc.accounts`.
public final class BusAccountService: AccountService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: PhotosServiceName.accounts)
    }

    public func register(name: String, email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account {
        try channel.call(
            "register", ["name": name, "email": email, "password": password, "session": session], as: Photos_V1_Account.self)
    }

    public func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account {
        try channel.call("signIn", ["email": email, "password": password, "session": session], as: Photos_V1_Account.self)
    }

    public func account(forSession session: String) throws(ServiceFailure) -> Photos_V1_Account {
        try channel.call("account", ["session": session], as: Photos_V1_Account.self)
    }

    public func signOut(session: String) throws(ServiceFailure) {
        _ = try channel.call("signOut", ["session": session])
    }

    public func requestPasswordReset(email: String) throws(ServiceFailure) {
        _ = try channel.call("requestPasswordReset", ["email": email])
    }

    public func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        _ = try channel.call("resetPassword", ["email": email, "code": code, "newPassword": newPassword])
    }
}
