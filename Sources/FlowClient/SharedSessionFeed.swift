import Clone
import FlowProtocol
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// One Clone agent that follows every session (`/s/`), every coordinator instance (`/c/`) and the
/// apps' schemas, and hands each update to the session client it belongs to.
///
/// A session client alone has an agent of its own (two sockets and a thread); thousands of
/// simulated sessions in one process share this one instead, with a request pool
/// (`BusConnection(lanes:)`): the cost of a session is then its view and its event log.
public final class SharedSessionFeed: Sendable {
    public let endpoints: BusEndpoints
    let agent: CloneAgent
    private let router = Router()
    /// The agent handing each change to its session's store, on its thread.
    private let dispatching: Mutex<CloneObservation?>

    /// The sessions followed, behind a lock that the agent's thread takes to hand changes over.
    final class Router: Sendable {
        let table = Mutex<Table>(Table())
    }

    struct Registration {
        let store: SessionStore
        /// Per key, the Clone sequence last handed over: a value seeded at registration is not
        /// handed over again (older) when its update comes through the stream afterwards.
        var sequences: [String: UInt64] = [:]
    }

    struct Table {
        var sessions: [String: Registration] = [:]
        var updates = 0
        var unclaimed = 0
        /// The keys the agent holds, by session (`/s/<id>/…`, `/c/<name>/<id>`), and the schema
        /// keys: registering a session reads its own keys, not the whole store (10,000 sessions
        /// hold hundreds of thousands of keys).
        var keys: [String: Set<String>] = [:]
        var schemaKeys: Set<String> = []

        mutating func index(_ key: String, deleted: Bool) {
            if key.hasPrefix(CloneSubtree.schemas.text) {
                if deleted { schemaKeys.remove(key) } else { schemaKeys.insert(key) }
                return
            }
            guard let session = SharedSessionFeed.session(ofKey: key) else { return }
            if deleted {
                keys[session]?.remove(key)
                if keys[session]?.isEmpty == true { keys[session] = nil }
            } else {
                keys[session, default: []].insert(key)
            }
        }
    }

    /// Connects and waits for the snapshot of every subtree.
    public init(
        endpoints: BusEndpoints, context: ZMQContext, syncTimeout: Duration = .seconds(10), serverTimeout: Duration = .seconds(3),
        logger: Logger = Logger(label: "flowbus.client")
    ) async throws(SessionClientError) {
        self.endpoints = endpoints
        var configuration = CloneAgentConfiguration(subtrees: [
            CloneSubtree.allSessions.text, CloneSubtree.allCoordinators.text, CloneSubtree.schemas.text,
        ])
        configuration.serverTimeout = serverTimeout
        do {
            // On a closed host only its own plugins and tools read every session: the server
            // refuses anyone else, and the refusal is thrown below.
            configuration.curve = try endpoints.curve()
            agent = try CloneAgent(context: context, endpoints: endpoints.clone, configuration: configuration, logger: logger)
        } catch let error as SessionClientError {
            throw error
        } catch {
            throw .cannotConnect(endpoint: endpoints.clone.snapshot, reason: "\(error)")
        }
        let router = self.router
        dispatching = Mutex(agent.observe(prefix: "", includeCurrent: false) { update in
            Self.dispatch(update, table: router.table)
        })
        guard await agent.waitUntilSynced(timeout: syncTimeout) else {
            stop()
            throw .noSnapshot(endpoint: endpoints.clone.snapshot, timeout: syncTimeout)
        }
        if let refusal = agent.refusal {
            stop()
            throw .readRefused(session: refusal.subtree, reason: refusal.reason)
        }
        // What came before the stream began (the stream indexes the rest, and these again).
        let held = agent.entries()
        router.table.withLock { table in
            for entry in held { table.index(entry.key, deleted: false) }
        }
    }

    /// Updates handed over so far, and those that belonged to no session followed here.
    public var counts: (updates: Int, unclaimed: Int) { router.table.withLock { ($0.updates, $0.unclaimed) } }

    /// Sessions followed now.
    public var sessionsFollowed: Int { router.table.withLock { $0.sessions.count } }

    public var isSynced: Bool { agent.isSynced }

    public var statistics: CloneAgentStatistics { agent.statistics }

    /// Starts handing `session`'s updates to `store`, beginning with what the agent holds now.
    func register(_ store: SessionStore) {
        let session = store.session.text
        router.table.withLock { table in
            table.sessions[session] = Registration(store: store)
            var registration = table.sessions[session]!
            let keys = table.schemaKeys.sorted() + (table.keys[session] ?? []).sorted()
            for key in keys {
                guard let entry = agent.get(key) else { continue }
                registration.sequences[entry.key] = entry.sequence
                store.apply(CloneUpdate(key: entry.key, value: entry.value, sequence: entry.sequence, properties: entry.properties,
                                        uuid: entry.uuid, isDelete: false, fromSnapshot: true))
            }
            table.sessions[session] = registration
        }
    }

    func unregister(_ session: String) {
        router.table.withLock { _ = $0.sessions.removeValue(forKey: session) }
    }

    private static func dispatch(_ update: CloneUpdate, table: borrowing Mutex<Table>) {
        table.withLock { table in
            table.updates += 1
            table.index(update.key, deleted: update.isDelete)
            if update.key.hasPrefix(CloneSubtree.schemas.text) {
                for registration in table.sessions.values { registration.store.apply(update) }
                return
            }
            guard let session = session(ofKey: update.key), var registration = table.sessions[session] else {
                table.unclaimed += 1
                return
            }
            if let last = registration.sequences[update.key], update.sequence <= last, !update.fromSnapshot { return }
            registration.sequences[update.key] = update.sequence
            registration.store.apply(update)
            table.sessions[session] = registration
        }
    }

    /// The session of `/s/<id>/…` or `/c/<coordinator>/<id>`, else nil.
    static func session(ofKey key: String) -> String? {
        let parts = key.utf8.split(separator: UInt8(ascii: "/"), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[0].isEmpty else { return nil }
        if parts[1].elementsEqual("s".utf8) { return String(decoding: parts[2], as: UTF8.self) }
        if parts[1].elementsEqual("c".utf8), parts.count >= 4 { return String(decoding: parts[3], as: UTF8.self) }
        return nil
    }

    public func stop() {
        agent.stop()
        dispatching.withLock { $0?.cancel() }
    }
}
