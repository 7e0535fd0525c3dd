import Clone
import FlowProtocol
import Foundation
import SwiftProtobuf
import Logging
import ZeroMQ

/// One live session as `flowbus sessions` lists it.
public struct SessionSummary: Sendable, Equatable, Codable {
    public var session: String
    public var screen: String?
    public var tab: String?
    public var modal: String?
    public var stack: [String]
    public var navigationVersion: UInt64
    public var user: String
    public var flow: String
    public var openedAt: Date?
    /// Clients following this session (terminal clients, observers, scripts): the host counts
    /// them (`flowbus sessions` asks it); nil when not asked.
    public var clients: Int?
}

/// One live coordinator instance as `flowbus ps --sessions` lists it.
public struct CoordinatorInstanceSummary: Sendable, Equatable, Codable {
    public var coordinator: String
    public var session: String
    public var parent: String
    public var children: [String]
    public var incarnation: UInt64
    public var startedAt: Date?
}

/// A one-off snapshot of every session (`/s/`) and coordinator instance (`/c/`) on the bus.
public struct BusSnapshot: Sendable {
    public var sessions: [SessionSummary]
    public var instances: [CoordinatorInstanceSummary]

    /// Takes the Clone snapshot of `/s/` and `/c/` and stops; throws when the server does not answer.
    public static func take(_ endpoints: BusEndpoints, timeout: Duration = .seconds(5), logger: Logger = Logger(label: "flowbus.client")) async throws(SessionClientError) -> BusSnapshot {
        BusSnapshot(entries: try await entries(endpoints, subtrees: [CloneSubtree.allSessions.text, CloneSubtree.allCoordinators.text], timeout: timeout, logger: logger))
    }

    /// The apps' published payload schemas (`/schema/<package>`), by package.
    public static func schemas(_ endpoints: BusEndpoints, timeout: Duration = .seconds(5), logger: Logger = Logger(label: "flowbus.client")) async throws(SessionClientError) -> [String: AppSchema] {
        var schemas: [String: AppSchema] = [:]
        for entry in try await entries(endpoints, subtrees: [CloneSubtree.schemas.text], timeout: timeout, logger: logger) {
            if let schema = AppSchema.published(key: entry.key, value: entry.value) { schemas[schema.package] = schema }
        }
        return schemas
    }

    /// The keys that hold a value under `subtrees`, from one snapshot.
    public static func keys(_ endpoints: BusEndpoints, subtrees: [String], timeout: Duration = .seconds(5),
                            logger: Logger = Logger(label: "flowbus.client")) async throws(SessionClientError) -> [String] {
        try await entries(endpoints, subtrees: subtrees, timeout: timeout, logger: logger).filter { !$0.value.isEmpty }.map(\.key)
    }

    /// Every entry under `subtrees`, from one snapshot.
    static func entries(_ endpoints: BusEndpoints, subtrees: [String], timeout: Duration, logger: Logger) async throws(SessionClientError) -> [CloneEntry] {
        var configuration = CloneAgentConfiguration(subtrees: subtrees)
        configuration.serverTimeout = timeout
        let agent: CloneAgent
        do {
            configuration.curve = try endpoints.curve()
            let context = try ZMQContext()
            agent = try CloneAgent(context: context, endpoints: endpoints.clone, configuration: configuration, logger: logger)
        } catch let error as SessionClientError {
            throw error
        } catch {
            throw .cannotConnect(endpoint: endpoints.clone.snapshot, reason: "\(error)")
        }
        defer { agent.stop() }
        guard await agent.waitUntilSynced(timeout: timeout) else { throw .noSnapshot(endpoint: endpoints.clone.snapshot, timeout: timeout) }
        return subtrees.flatMap { agent.entries(prefix: $0) }
    }

    /// Builds the summaries from Clone entries (keys `/s/<id>/nav`, `/s/<id>/meta`, `/c/<name>/<id>`).
    public init(entries: [CloneEntry]) {
        var views: [String: SessionView] = [:]
        var instances: [CoordinatorInstanceSummary] = []
        for entry in entries where !entry.value.isEmpty {
            let parts = entry.key.split(separator: "/").map(String.init)
            guard parts.count == 3, let envelope = try? Envelope.decodeChecked(entry.value) else { continue }
            switch (parts[0], parts[2]) {
            case ("s", "nav"):
                views[parts[1], default: SessionView(session: parts[1])].navigation = try? envelope.unwrap(Flowbus_V1_Navigation.self)
            case ("s", "meta"):
                views[parts[1], default: SessionView(session: parts[1])].record = try? envelope.unwrap(Flowbus_V1_SessionRecord.self)
            case ("c", _):
                guard let instance = try? envelope.unwrap(Flowbus_V1_CoordinatorInstance.self), !instance.released else { continue }
                instances.append(CoordinatorInstanceSummary(
                    coordinator: parts[1], session: parts[2], parent: instance.parent, children: instance.children,
                    incarnation: instance.incarnation, startedAt: Self.date(instance.startedAtUnixNanos)))
            default: continue
            }
        }
        sessions = views.values.map { view in
            SessionSummary(
                session: view.session, screen: view.screen, tab: view.tab, modal: view.modal?.kind, stack: view.stack,
                navigationVersion: view.navigationVersion, user: view.record?.user ?? "", flow: view.record?.flow ?? "",
                openedAt: Self.date(view.record?.openedAtUnixNanos ?? 0))
        }.sorted { ($0.openedAt ?? .distantPast, $0.session) < ($1.openedAt ?? .distantPast, $1.session) }
        self.instances = instances.sorted { ($0.session, $0.coordinator) < ($1.session, $1.coordinator) }
    }

    static func date(_ nanos: Int64) -> Date? {
        nanos > 0 ? Date(timeIntervalSince1970: Double(nanos) / 1e9) : nil
    }
}
