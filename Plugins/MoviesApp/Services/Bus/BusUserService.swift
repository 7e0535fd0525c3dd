import FlowKit
import FlowProtocol

/// `UserService` over the bus: each method a call to `svc.users`.
public final class BusUserService: UserService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: AppServiceName.users)
    }

    public func register(_ registration: Registration) throws(ServiceFailure) -> Account {
        try channel.call("register", [
            "name": registration.name, "nickname": registration.nickname, "email": registration.email,
            "password": registration.password, "genres": registration.genres.joined(separator: ","),
        ], as: Account.self)
    }

    public func verify(email: String, token: String, session: String) throws(ServiceFailure) -> Account {
        try channel.call("verify", ["email": email, "token": token, "session": session], as: Account.self)
    }

    public func resendToken(email: String) throws(ServiceFailure) {
        _ = try channel.call("resendToken", ["email": email])
    }

    public func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Account {
        try channel.call("signIn", ["email": email, "password": password, "session": session], as: Account.self)
    }

    public func account(forSession session: String) throws(ServiceFailure) -> Account {
        try channel.call("account", ["session": session], as: Account.self)
    }

    public func signOut(session: String) throws(ServiceFailure) {
        _ = try channel.call("signOut", ["session": session])
    }

    public func changePassword(session: String, current: String, new: String) throws(ServiceFailure) {
        _ = try channel.call("changePassword", ["session": session, "current": current, "new": new])
    }

    public func requestPasswordReset(email: String) throws(ServiceFailure) {
        _ = try channel.call("requestPasswordReset", ["email": email])
    }

    public func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        _ = try channel.call("resetPassword", ["email": email, "code": code, "newPassword": newPassword])
    }
}
