import FlowKit
import Foundation
import Testing

/// An action's service calls are keyed from the action's own key, the same in every process.
@Suite("Service-call keys")
struct ServiceCallKeysTests {
    static func keys(base: String, _ calls: [(String, String, [String: String])]) -> [String] {
        ServiceCallKeys.during(action: base) {
            calls.map { ServiceCallKeys.next(service: $0.0, method: $0.1, args: $0.2) { "fallback" } }
        }
    }

    @Test func theSameActionMakesTheSameKeysAndAnotherActionOthers() {
        let base = ServiceCallKeys.base(service: "vm.details", session: "s1", key: "k1")
        let calls: [(String, String, [String: String])] = [
            ("svc.users", "account", ["session": "s1"]), ("svc.movies", "like", ["id": "movie:19", "user": "a@b"]),
            ("svc.movies", "like", ["id": "movie:19", "user": "a@b"]),
        ]
        let first = Self.keys(base: base, calls)
        #expect(first == Self.keys(base: base, calls))
        #expect(Set(first).count == 3, "two same calls in one action got one key: \(first)")
        // A call the first run did not make (an adapter had cached it) leaves the others' keys as they were.
        let rerun = Self.keys(base: base, Array(calls.dropFirst()))
        #expect(rerun == Array(first.dropFirst()))
        let other = Self.keys(base: ServiceCallKeys.base(service: "vm.details", session: "s1", key: "k2"), calls)
        #expect(Set(other).isDisjoint(with: first))
        let otherSession = Self.keys(base: ServiceCallKeys.base(service: "vm.details", session: "s2", key: "k1"), calls)
        #expect(Set(otherSession).isDisjoint(with: first))
    }

    @Test func outsideAnActionOrWithoutAKeyTheTransportsOwnKeyIsUsed() {
        #expect(ServiceCallKeys.next(service: "svc.users", method: "account", args: [:]) { "own" } == "own")
        #expect(Self.keys(base: ServiceCallKeys.base(service: "vm.x", session: "s", key: ""), [("svc.a", "m", [:])]) == ["fallback"])
    }

    @Test func anActionsCallsCarryItsSessionWithOrWithoutAKey() {
        #expect(ServiceCallKeys.session == "")
        ServiceCallKeys.during(action: ServiceCallKeys.base(service: "vm.x", session: "s9", key: "k"), session: "s9") {
            #expect(ServiceCallKeys.session == "s9")
        }
        // Without a key the transport's own keys are used, and the session still goes with the calls.
        ServiceCallKeys.during(action: "", session: "s9") {
            #expect(ServiceCallKeys.session == "s9")
            #expect(ServiceCallKeys.next(service: "svc.a", method: "m", args: [:]) { "own" } == "own")
        }
        #expect(ServiceCallKeys.session == "")
    }

    @Test func keysHoldOnAnyThread() {
        let base = ServiceCallKeys.base(service: "vm.home", session: "s", key: "k")
        let here = Self.keys(base: base, [("svc.a", "m", ["x": "1"])])
        let box = ThreadResult()
        let thread = Thread { box.value = Self.keys(base: base, [("svc.a", "m", ["x": "1"])]) ; box.done.signal() }
        thread.start()
        box.done.wait()
        #expect(box.value == here)
    }
}

final class ThreadResult: @unchecked Sendable {
    var value: [String] = []
    let done = DispatchSemaphore(value: 0)
}
