@testable import FlowClient
import FlowProtocol
import Testing

@Suite("Session event log")
struct SessionStoreTests {
    /// The log keeps the newest `maxEvents`, in order, however far past its limit it went (it
    /// is trimmed in batches, so its array may briefly hold more).
    @Test(arguments: [1, 5, 64, 65, 95, 96, 97, 200, 1000])
    func keepsTheNewestEventsInOrder(appended: Int) throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        for index in 1...appended {
            store.note(.intent(action: "a\(index)", service: "vm.x", version: 0, idempotencyKey: "k\(index)"), writer: "test")
        }
        let kept = min(appended, 64)
        let all = store.events()
        #expect(all.map(\.index) == Array((appended - kept + 1)...appended))
        #expect(store.events(last: 10).map(\.index) == Array((appended - min(10, kept) + 1)...appended))
        #expect(store.events(last: 500).count == kept)
    }
}
