import FlowProtocol
import Foundation
import SwiftProtobuf

/// How a run across machines is held together, over the bus itself: the coordinator (`flowbus
/// sim PLAN --agents N`, on the host's machine) serves the MDP service `sim.control` and writes
/// the run's plan and progress under `/sim/<run>/` in Clone; agents (`flowbus sim-agent`, on
/// other machines, CURVE clients of the host) call the service to join, read the plan and the
/// start instant from Clone, play their share of the users, report progress once a second and
/// send their histograms when done. Bodies are JSON; a request is `[method, body]`, a reply
/// `["ok", body]` or `["error", sentence]`.
public enum SimControl {
    public static let service = "sim.control"

    public enum Method: String, Sendable {
        case join, progress, report
    }

    public static func subtree(_ run: String) -> String { "/sim/\(run)/" }
    public static func planKey(_ run: String) -> String { "/sim/\(run)/plan" }
    public static func startKey(_ run: String) -> String { "/sim/\(run)/start" }
    public static func progressKey(_ run: String, agent: Int) -> String { "/sim/\(run)/progress/\(agent)" }

    /// `/sim/<run>/plan`: all an agent needs to play the same plan as the others.
    public struct RunPlan: Codable, Sendable, Equatable {
        public var run: String
        /// The plan's YAML and its journeys' texts, by the path the plan names them with.
        public var text: String
        public var scripts: [String: String]
        public var seed: UInt64
        public var agents: Int
    }

    /// `/sim/<run>/start`: when every agent starts its clock (Unix time, milliseconds), once all joined.
    public struct RunStart: Codable, Sendable, Equatable {
        public var at: Int64
    }

    public struct Join: Codable, Sendable {
        /// The agent's own id: a join sent again (MDP retries) gets the same place.
        public var agent: String
        /// Where it runs, for the coordinator's lines (its host name).
        public var name: String
    }

    public struct Joined: Codable, Sendable {
        public var run: String
        /// Plays users `index`, `index + of`, `index + 2·of`… of the plan.
        public var index: Int
        public var of: Int
    }

    /// Once a second from each agent; the coordinator writes it to `/sim/<run>/progress/<index>`.
    public struct Progress: Codable, Sendable, Equatable {
        public var index: Int
        public var running: Int
        public var intentsLastSecond: Int
        public var errors: Int
        public var journeysCompleted: Int
        public var journeysFailed: Int
        /// Absent from an agent built before 2026-12-03, whose `journeysFailed` counts these too.
        public var journeysTimedOut: Int?
        public var stepP99: Double
    }

    /// An agent's whole measurement, merged exactly by the coordinator.
    public struct Report: Codable, Sendable {
        public var index: Int
        public var name: String
        public var metrics: SimMetrics.Snapshot
        public var usersStarted: Int
        public var simulator: SimResult.SimulatorFigures
        /// How long its run lasted, from the common start to its last journey's end.
        public var seconds: Double
    }

    public static let ok = Array("ok".utf8)
    public static let error = Array("error".utf8)

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    public static func encode(_ value: some Encodable) -> [UInt8] {
        // Plain structs of strings and numbers: encoding cannot fail.
        (try? Array(encoder.encode(value))) ?? []
    }

    public static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws(SimControlError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw SimControlError("a \(type) that is not valid JSON of its kind (\(error)); are the coordinator and the agent the same version of flowbus?")
        }
    }

    /// The body of a reply, or the coordinator's refusal thrown.
    public static func body(of reply: [[UInt8]], method: Method) throws(SimControlError) -> [UInt8] {
        // The broker answers for the service when it cannot (no coordinator yet, not allowed).
        if reply.count == 1, let envelope = try? Envelope.decodeChecked(reply[0]), envelope.kind == WireError.protoMessageName,
           let wire = try? WireError(serializedBytes: envelope.payload) {
            throw SimControlError(
                "the broker answered \(method.rawValue) for sim.control: \(wire.message); \(wire.hint)", refusal: wire.code == .forbidden)
        }
        guard reply.count == 2 else { throw SimControlError("sim.control answered \(method.rawValue) with \(reply.count) frames, not 2: is something else serving sim.control?") }
        if reply[0] == error {
            throw SimControlError("the run's coordinator refused \(method.rawValue): \(String(decoding: reply[1], as: UTF8.self))", refusal: true)
        }
        guard reply[0] == ok else { throw SimControlError("sim.control answered \(method.rawValue) with neither ok nor error: is something else serving sim.control?") }
        return reply[1]
    }
}

public struct SimControlError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// Said by the coordinator or the broker, and asking again will not change it (as opposed
    /// to no answer yet).
    public let isRefusal: Bool

    public init(_ description: String, refusal: Bool = false) {
        self.description = description
        isRefusal = refusal
    }
}
