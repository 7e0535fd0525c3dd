@testable import FlowClient
import Clone
import FlowProtocol
import Synchronization
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

@Suite("Session view of coordinator records")
struct SessionStoreCoordinatorTests {
    func update(_ instance: Flowbus_V1_CoordinatorInstance?, sequence: UInt64, keyVersion: UInt64) throws -> CloneUpdate {
        let key = "/c/auth/s1"
        guard let instance else { return CloneUpdate(key: key, value: [], sequence: sequence, isDelete: true, fromSnapshot: false) }
        let bytes = try Envelope.wrapping(instance, session: "s1", writer: "coord-auth/0", incarnation: 1, keyVersion: keyVersion).encoded()
        return CloneUpdate(key: key, value: bytes, sequence: sequence, isDelete: false, fromSnapshot: false)
    }

    /// A flow finished while calls it sent wait for answers keeps its record, marked released:
    /// the view takes it for gone at once, and its later delete changes nothing more.
    @Test func aReleasedRecordIsNoLongerALiveCoordinator() throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        var live = Flowbus_V1_CoordinatorInstance()
        live.coordinator = "auth"
        live.children = ["signup"]
        store.apply(try update(live, sequence: 1, keyVersion: 1))
        #expect(store.view.coordinators.keys.sorted() == ["auth"])

        var released = Flowbus_V1_CoordinatorInstance()
        released.coordinator = "auth"
        released.released = true
        released.pending = [Flowbus_V1_PendingCall()]
        store.apply(try update(released, sequence: 2, keyVersion: 2))
        #expect(store.view.coordinators.isEmpty)
        store.apply(try update(nil, sequence: 3, keyVersion: 0))
        #expect(store.view.coordinators.isEmpty)

        let liveness = store.events().compactMap { event -> Bool? in
            if case .coordinator(name: "auth", let isLive) = event.kind { return isLive }
            return nil
        }
        #expect(liveness == [true, false], "one start, one end: \(liveness)")
    }
}

@Suite("Session view of a state written again for an appear")
struct SessionStoreAppearRecordTests {
    func update(appearKey: String, version: UInt64, sequence: UInt64) throws -> CloneUpdate {
        var state = Flowbus_V1_ViewState()
        state.screenVersion = version
        state.screenID = "signin"
        state.appearKey = appearKey
        let bytes = try Envelope.wrapping(state, session: "s1", writer: "vm-signin/0", incarnation: 1, keyVersion: version).encoded()
        return CloneUpdate(key: "/s/s1/vm/signin", value: bytes, sequence: sequence, isDelete: false, fromSnapshot: false)
    }

    /// An `appear` that changed nothing writes the state again at the same version with its key:
    /// the view takes it (the screen is this appearance's), though its key_version is not above
    /// the last; an older copy served again at that version is still dropped as a duplicate.
    @Test func theRewriteCarryingALaterAppearIsTakenAnOlderCopyIsNot() throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        store.apply(try update(appearKey: "appear/s1/signin/1", version: 1, sequence: 1))
        store.apply(try update(appearKey: "appear/s1/signin/6", version: 1, sequence: 2))
        #expect(store.view.states["signin"]?.state.appearKey == "appear/s1/signin/6")
        store.apply(try update(appearKey: "appear/s1/signin/1", version: 1, sequence: 3))
        #expect(store.view.states["signin"]?.state.appearKey == "appear/s1/signin/6")
        #expect(store.view.duplicateValues == 1)
    }
}

@Suite("Session views yielded only where a predicate holds")
struct SessionStoreFilteredViewsTests {
    func state(_ phase: Flowbus_V1_ViewState.Phase, _ version: UInt64, _ sequence: UInt64) throws -> CloneUpdate {
        var state = Flowbus_V1_ViewState()
        state.screenVersion = version
        state.screenID = "details"
        state.phase = phase
        let bytes = try Envelope.wrapping(state, session: "s1", writer: "vm-details/0", incarnation: 1, keyVersion: version).encoded()
        return CloneUpdate(key: "/s/s1/vm/details", value: bytes, sequence: sequence, isDelete: false, fromSnapshot: false)
    }

    /// The predicate is asked of each view as the store applies it, on the applying thread, and
    /// the stream gets only the views it held for: a task reading it wakes for those, not for
    /// every update of the session (loading, then success, then a later loading).
    @Test func onlyTheViewsThePredicateHoldsForAreYieldedAndItIsAskedAsTheyAreApplied() async throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        let asked = Mutex<[UInt64]>([])
        let views = store.views(where: { view in
            let state = view.states["details"]
            asked.withLock { $0.append(state?.screenVersion ?? 0) }
            return state?.phase == .success
        })
        // Asked of the current view at once (no state yet): not yielded.
        #expect(asked.withLock { $0 } == [0])
        store.apply(try state(.loading, 1, 1))
        #expect(asked.withLock { $0 } == [0, 1], "asked while apply ran, before it returned")
        store.apply(try state(.success, 2, 2))
        store.apply(try state(.loading, 3, 3))
        store.apply(try state(.success, 4, 4))
        store.finish()
        var yielded: [UInt64] = []
        for await view in views { yielded.append(view.states["details"]?.screenVersion ?? 0) }
        #expect(yielded == [2, 4])
        #expect(asked.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    /// Without a predicate every view comes, the current one first.
    @Test func everyViewComesWithoutAPredicate() async throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        let views = store.views()
        store.apply(try state(.loading, 1, 1))
        store.apply(try state(.success, 2, 2))
        store.finish()
        var yielded: [UInt64] = []
        for await view in views { yielded.append(view.states["details"]?.screenVersion ?? 0) }
        #expect(yielded == [0, 1, 2])
    }
}

@Suite("Session watches: a look at each view as it is applied")
struct SessionStoreWatchTests {
    let update = SessionStoreFilteredViewsTests().state

    /// A watch looks at the current view, then at each later one as `apply` runs, until its look
    /// returns true: the views after that are not looked at, and it does not end again.
    @Test func aWatchLooksUntilItsLookSaysDone() throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        let looked = Mutex<[UInt64]>([])
        let ended = Atomic<Int>(0)
        _ = store.watch({ view in
            let version = view.states["details"]?.screenVersion ?? 0
            looked.withLock { $0.append(version) }
            return version == 2
        }, ended: { ended.add(1, ordering: .relaxed) })
        #expect(looked.withLock { $0 } == [0])
        store.apply(try update(.loading, 1, 1))
        #expect(looked.withLock { $0 } == [0, 1], "looked at as apply ran")
        store.apply(try update(.success, 2, 2))
        store.apply(try update(.loading, 3, 3))
        store.finish()
        #expect(looked.withLock { $0 } == [0, 1, 2])
        #expect(ended.load(ordering: .relaxed) == 0, "done by its look, it does not end again")
        #expect(store.state.withLock { $0.listeners.isEmpty })
    }

    /// Stopped by the function `watch` returned, a watch looks no more; one still watching when
    /// the store finishes (the client stopped) ends, once.
    @Test func aWatchStopsWhenToldAndEndsWithTheStore() throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        let first = Atomic<Int>(0)
        let stop = store.watch({ _ in
            first.add(1, ordering: .relaxed)
            return false
        }, ended: { Issue.record("a stopped watch does not end") })
        stop()
        store.apply(try update(.loading, 1, 1))
        #expect(first.load(ordering: .relaxed) == 1, "the current view only")
        stop()

        let second = Atomic<Int>(0)
        let ended = Atomic<Int>(0)
        _ = store.watch({ _ in
            second.add(1, ordering: .relaxed)
            return false
        }, ended: { ended.add(1, ordering: .relaxed) })
        store.apply(try update(.success, 2, 2))
        store.finish()
        store.finish()
        #expect(second.load(ordering: .relaxed) == 2)
        #expect(ended.load(ordering: .relaxed) == 1)
    }

    /// A watch or a stream begun after the store finished (the client stopped) gets the last
    /// view and ends at once: nobody waits for views that will never come.
    @Test func aWatchOrStreamBegunAfterTheStoreFinishedEndsAtOnce() async throws {
        let store = SessionStore(session: try SessionID("s1"), maxEvents: 64)
        store.apply(try update(.success, 2, 2))
        store.finish()
        let looked = Atomic<Int>(0)
        let ended = Atomic<Int>(0)
        _ = store.watch({ view in
            #expect(view.states["details"]?.screenVersion == 2)
            looked.add(1, ordering: .relaxed)
            return false
        }, ended: { ended.add(1, ordering: .relaxed) })
        #expect(looked.load(ordering: .relaxed) == 1)
        #expect(ended.load(ordering: .relaxed) == 1)
        var yielded: [UInt64] = []
        for await view in store.views() { yielded.append(view.states["details"]?.screenVersion ?? 0) }
        #expect(yielded == [2])
        #expect(store.state.withLock { $0.listeners.isEmpty })
    }
}
