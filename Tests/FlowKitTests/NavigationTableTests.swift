@testable import FlowKit
import FlowProtocol
import Testing

/// The navigation owner's table of every session's navigation (issue 16: memory per session).
@Suite("The navigation owner's table")
struct NavigationTableTests {
    static func navigation(session: Int, details: Int = 0) throws -> Navigation {
        var navigation = Navigation()
        var signIn = Screen.make("signin", owner: "auth")
        signIn.title = "Sign in"
        signIn.viewModel = "vm.signin"
        _ = try navigation.apply([.setRoot([signIn])])
        for movie in 0..<details {
            _ = try navigation.apply([.push(.make("details", id: "details-movie-\(movie)", owner: "home", params: ["item": "movie:\(movie)"]))])
        }
        navigation.version = UInt64(session)
        navigation.topAppearKey = "appear/session\(session)/signin/1"
        navigation.appliedKeys = ["coord-auth/0/1/\(session)-4601-42E5-96BF-8BFDAB9B279F"]
        return navigation
    }

    @Test("every session's navigation reads back as it was written, most of them held packed")
    func readBack() throws {
        var table = NavigationTable()
        var written: [SessionID: Navigation] = [:]
        for index in 0..<200 {
            let session = try SessionID("session\(index)")
            let navigation = try Self.navigation(session: index, details: index % 3)
            table[session] = navigation
            written[session] = navigation
        }
        for (session, navigation) in written {
            #expect(table[session] == navigation)
            #expect(table.version(of: session) == navigation.version)
        }
        #expect(table.count == 200)
        #expect(Dictionary(uniqueKeysWithValues: table.all.map { ($0.session, $0.navigation) }) == written)
        let held = table.heldBytes
        // The last sessions changed are held as they are until others change after them.
        #expect(held.packed >= 190 - NavigationTable.hotLimit, "\(held.packed) of 200 navigations packed")
        #expect(held.packed <= 200 - NavigationTable.hotLimit, "\(held.packed) of 200 navigations packed")
        #expect(held.bytes * 3 < held.whole, "\(held.whole) bytes held as \(held.bytes)")
        table[try SessionID("session0")] = nil
        #expect(table[try SessionID("session0")] == nil)
        #expect(table.count == 199)
    }

    @Test("a session navigated again and again is held as it is, and packed once others change after it")
    func hotSessions() throws {
        var table = NavigationTable()
        let busy = try SessionID("busy")
        for index in 0..<40 {
            let session = try SessionID("session\(index)")
            table[session] = try Self.navigation(session: index)
        }
        let packedBefore = table.heldBytes.packed
        for version in 1...50 {
            table[busy] = try Self.navigation(session: version, details: version % 4)
            #expect(table[busy] == (try Self.navigation(session: version, details: version % 4)))
        }
        // Its fifty changes packed one navigation: the oldest of the hot ones, which its first
        // change pushed out; none of its own.
        #expect(table.heldBytes.packed == packedBefore + 1 && !table.isPacked(busy))
        for index in 40..<(40 + NavigationTable.hotLimit) {
            table[try SessionID("session\(index)")] = try Self.navigation(session: index)
        }
        #expect(table[busy] == (try Self.navigation(session: 50, details: 2)))
        #expect(table.isPacked(busy), "the busy session is packed once \(NavigationTable.hotLimit) others changed after it")
        #expect(table.heldBytes.packed >= packedBefore + NavigationTable.hotLimit - 1, "the busy session and those before it are packed by now")
        // Deleted, it leaves the hot ones: a session changed after it is not packed early.
        table[busy] = nil
        #expect(table[busy] == nil && table.count == 40 + NavigationTable.hotLimit)
    }
}

/// The owner's session records, kept encoded without the session's id.
@Suite("The navigation owner's session records")
struct SessionRecordsTests {
    @Test("a record reads back as it was written, its session's id from the table's key")
    func readBack() throws {
        var records = SessionRecords()
        var record = Flowbus_V1_SessionRecord()
        record.session = "abc"
        record.user = "jô@example.com"
        record.flow = "main"
        record.open = true
        record.openedAtUnixNanos = 1_795_898_951_479_735_920
        record.idleLimitSeconds = 3600
        let session = try SessionID("abc")
        records[session] = record
        #expect(records[session] == record)
        #expect(records[try SessionID("other")] == nil)
        record.open = false
        record.closedReason = "logged out"
        records[session] = record
        #expect(records[session] == record)
        #expect(records.count == 1)
        records[session] = nil
        #expect(records[session] == nil && records.count == 0)
    }
}

/// The versions a coordinator last acted on, per session and watched screen.
@Suite("A coordinator's handled versions")
struct HandledVersionsTests {
    @Test("versions by screen come back as a table; a coordinator watching no screen keeps nothing")
    func versions() throws {
        let screens = ["signin", "forgotpassword", "resetpassword"]
        var handled = HandledVersions()
        let session = try SessionID("s1")
        #expect(handled.version(of: session, screen: 0) == 0 && handled.table(of: session, screens: screens) == nil)
        handled.set(session, ["signin": 3, "gone": 9], screens: screens)
        #expect(handled.table(of: session, screens: screens) == ["signin": 3, "forgotpassword": 0, "resetpassword": 0])
        handled.setVersion(5, of: session, screen: 2, screens: screens)
        #expect(handled.version(of: session, screen: 2) == 5 && handled.version(of: session, screen: 0) == 3)
        let other = try SessionID("s2")
        handled.setVersion(1, of: other, screen: 1, screens: screens)
        #expect(handled.table(of: other, screens: screens) == ["signin": 0, "forgotpassword": 1, "resetpassword": 0])
        handled.remove(session)
        #expect(handled.table(of: session, screens: screens) == nil)
        var none = HandledVersions()
        none.set(session, [:], screens: [])
        #expect(none.table(of: session, screens: []) == nil)
    }
}
