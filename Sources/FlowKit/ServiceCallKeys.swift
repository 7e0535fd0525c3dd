/// The idempotency keys of the service calls a view model makes while it handles an action.
///
/// Inside an action (`during(action:)`), a call's key is made of the action's (the view model's
/// service, the session and the action's idempotency key) and of the call itself: its service,
/// method, a hash of its arguments, and how many same calls the action made before it. So when
/// the action runs again — its process was killed in the middle and the client's retry (same
/// key) reached the new one — each call carries the key it had the first time, and the service
/// answers what it answered then instead of doing it twice (a Like is a toggle: done twice, it
/// is undone). Calls a new process makes that the first did not (what an adapter had cached)
/// get keys of their own and change nothing. Outside an action (a call made at start, or an
/// action without a key) the transport's own keys are used.
public enum ServiceCallKeys {
    /// One action's calls, counted. Used by the one thread that handles the action.
    final class Scope: @unchecked Sendable {
        let base: String
        /// The session the action is for: its calls carry it (`Envelope.session`), so the host's
        /// trace shows them in that session's timeline.
        let session: String
        /// How many calls of each kind (service, method, arguments) the action made.
        var made: [String: Int] = [:]

        init(base: String, session: String) {
            self.base = base
            self.session = session
        }
    }

    @TaskLocal static var scope: Scope?

    /// Runs `body` (one action's handling) with its service calls keyed from `base` and marked
    /// with `session`; an empty base leaves the calls to their transport's keys.
    public static func during<T, E: Error>(action base: String, session: String = "", _ body: () throws(E) -> T) throws(E) -> T {
        guard !base.isEmpty || !session.isEmpty else { return try body() }
        let outcome: Result<T, E> = $scope.withValue(Scope(base: base, session: session)) {
            do throws(E) { return .success(try body()) } catch { return .failure(error) }
        }
        return try outcome.get()
    }

    /// The base of an action's call keys: the view model's service, the session and the action's key.
    public static func base(service: String, session: String, key: String) -> String {
        key.isEmpty ? "" : "\(service)/\(session)/\(key)"
    }

    /// The key of a service call: the action's key for it inside an action, else `fallback()`.
    public static func next(service: String, method: String, args: [String: String], orElse fallback: () -> String) -> String {
        guard let scope, !scope.base.isEmpty else { return fallback() }
        let call = "\(service)/\(method)/\(hash(args))"
        let count = scope.made[call, default: 0] + 1
        scope.made[call] = count
        return "\(scope.base)/\(call)#\(count)"
    }

    /// The session of the action being handled on this thread, empty outside one.
    public static var session: String { scope?.session ?? "" }

    /// FNV-1a over the arguments sorted by name: the same in every process (unlike `Hasher`).
    static func hash(_ args: [String: String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (name, value) in args.sorted(by: { $0.key < $1.key }) {
            for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            hash = (hash ^ 0x3D) &* 0x100_0000_01b3
            for byte in value.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            hash = (hash ^ 0x0A) &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
