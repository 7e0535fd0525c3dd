import Glibc

/// Where a fault rule applies: MDP requests by service name, workers' heartbeats by their
/// service name, or CHP writes by key prefix.
public enum FaultScope: String, Sendable, Codable, CaseIterable {
    case service
    case key
    /// The HEARTBEATs a worker of the service sends the broker: holding them makes the broker
    /// take a live worker for dead.
    case heartbeat
    /// Every command a worker of the service sends the broker (READY, REPLY, HEARTBEAT): with a
    /// peer, one side of a partition between a plugin and the host.
    case worker
    /// A plugin process killed or stopped by a plan: in the decision log only, never a rule's scope.
    case process
}

/// How long a delayed message waits: `base` milliseconds, plus a draw from the distribution
/// whose scale is `spread` (uniform in 0…spread, exponential of mean spread), plus a uniform
/// jitter in ±`jitter`; never less than zero.
public struct FaultDelay: Sendable, Codable, Equatable {
    public enum Distribution: String, Sendable, Codable, CaseIterable {
        case constant, uniform, exponential
    }

    public var distribution: Distribution
    public var base: Double
    public var spread: Double
    public var jitter: Double

    public init(_ distribution: Distribution = .constant, base: Double, spread: Double = 0, jitter: Double = 0) {
        self.distribution = distribution
        self.base = base
        self.spread = spread
        self.jitter = jitter
    }

    /// The delay for two unit draws `u` and `v` (0..<1): the same draws give the same delay.
    public func milliseconds(_ u: Double, _ v: Double) -> Double {
        var value = base
        switch distribution {
        case .constant: break
        case .uniform: value += u * spread
        // Capped at ten means, so one draw cannot hold a message for a minute.
        case .exponential: value += min(-spread * log1p(-u), spread * 10)
        }
        value += (v * 2 - 1) * jitter
        return max(0, value)
    }

    /// The longest delay this can give.
    public var maximum: Double {
        base + (distribution == .exponential ? spread * 10 : distribution == .uniform ? spread : 0) + jitter
    }
}

/// What a rule does to a message it matches and fires on.
public enum FaultAction: Sendable, Codable, Equatable {
    /// The message never arrives (for `.heartbeat`: the worker's heartbeat is held back).
    case drop
    /// The message arrives later.
    case delay(FaultDelay)
    /// The message arrives `copies` more times.
    case duplicate(copies: Int)
    /// The message is held back until up to `window` later messages of the rule have passed it.
    case reorder(window: Int)
    /// The message's body (MDP) or value (Clone) is cut to its first `bytes` bytes.
    case truncate(bytes: Int)
    /// `bytes` bytes of the body or value are flipped.
    case corrupt(bytes: Int)
    /// Clone only: after the write, subscribers are served the key's previous value again (under
    /// a new sequence number, as a lagging replica would serve it); the server's map keeps the
    /// new one, so a snapshot or the key's next write puts it right.
    case stale

    /// A word for logs and tables: `drop`, `delay`, `duplicate`…
    public var name: String {
        switch self {
        case .drop: "drop"
        case .delay: "delay"
        case .duplicate: "duplicate"
        case .reorder: "reorder"
        case .truncate: "truncate"
        case .corrupt: "corrupt"
        case .stale: "stale"
        }
    }
}

/// Lets a rule fire only once `count` messages matching it have passed: "after the 3rd `pay`".
public struct FaultTrigger: Sendable, Codable, Equatable {
    public var scope: FaultScope
    public var prefix: String
    /// The intent's action or the call's method, when the trigger counts only those.
    public var method: String?
    public var count: Int

    public init(scope: FaultScope = .service, prefix: String, method: String? = nil, count: Int) {
        self.scope = scope
        self.prefix = prefix
        self.method = method
        self.count = count
    }
}

/// One rule: an action on the messages of one scope whose subject (service name or key) starts
/// with `prefix`, narrowed by session, sending peer, method, position and trigger, on a `share`
/// of what is left.
public struct FaultRule: Sendable, Codable, Equatable, Identifiable {
    public var id: String
    public var scope: FaultScope
    public var prefix: String
    public var action: FaultAction
    /// The share of matching messages it fires on, 0…1, drawn from the seed (1: every one).
    public var share: Double
    /// Only messages of this session (Clone keys under `/s/<id>/`, MDP requests whose
    /// Envelope names it).
    public var session: String?
    /// Only messages from peers whose User-Id starts with this (`plugin:coord-home`, `client:`).
    public var peer: String?
    /// Only intents with this action, or calls with this method.
    public var method: String?
    /// The first `skip` matching messages pass untouched (`skip: 2, limit: 1`: the 3rd only).
    public var skip: Int
    /// It fires at most this many times, then lets everything pass.
    public var limit: Int?
    /// It fires only once this trigger has counted its messages.
    public var after: FaultTrigger?

    public init(
        id: String, scope: FaultScope, prefix: String, action: FaultAction, share: Double = 1,
        session: String? = nil, peer: String? = nil, method: String? = nil, skip: Int = 0, limit: Int? = nil,
        after: FaultTrigger? = nil
    ) {
        self.id = id
        self.scope = scope
        self.prefix = prefix
        self.action = action
        self.share = share
        self.session = session
        self.peer = peer
        self.method = method
        self.skip = skip
        self.limit = limit
        self.after = after
    }

    enum CodingKeys: String, CodingKey {
        case id, scope, prefix, action, share, session, peer, method, skip, limit, after
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(String.self, forKey: .id),
            scope: try container.decode(FaultScope.self, forKey: .scope),
            prefix: try container.decodeIfPresent(String.self, forKey: .prefix) ?? "",
            action: try container.decode(FaultAction.self, forKey: .action),
            share: try container.decodeIfPresent(Double.self, forKey: .share) ?? 1,
            session: try container.decodeIfPresent(String.self, forKey: .session),
            peer: try container.decodeIfPresent(String.self, forKey: .peer),
            method: try container.decodeIfPresent(String.self, forKey: .method),
            skip: try container.decodeIfPresent(Int.self, forKey: .skip) ?? 0,
            limit: try container.decodeIfPresent(Int.self, forKey: .limit),
            after: try container.decodeIfPresent(FaultTrigger.self, forKey: .after))
    }

    /// Throws what is wrong with the rule, in words a person can act on.
    public func validate() throws(FaultRuleError) {
        guard !id.isEmpty else { throw .emptyID }
        guard (0...1).contains(share) else { throw .invalidShare(share) }
        guard skip >= 0, (limit ?? 1) >= 1, (after?.count ?? 1) >= 1 else { throw .invalidCount(id) }
        switch action {
        case .drop:
            break
        case .delay(let delay):
            guard delay.base >= 0, delay.spread >= 0, delay.jitter >= 0, delay.maximum <= 60_000 else { throw .invalidDelay(delay) }
        case .duplicate(let copies):
            guard (1...16).contains(copies) else { throw .invalidAmount(id, "duplicate copies", copies, 1...16) }
        case .reorder(let window):
            guard (1...64).contains(window) else { throw .invalidAmount(id, "reorder window", window, 1...64) }
        case .truncate(let bytes):
            // A Clone value cut to nothing would be a delete, which carries no check to tell it by.
            let least = scope == .key ? 1 : 0
            guard bytes >= least else { throw .invalidAmount(id, "truncate bytes", bytes, least...Int.max) }
        case .corrupt(let bytes):
            guard (1...4096).contains(bytes) else { throw .invalidAmount(id, "corrupt bytes", bytes, 1...4096) }
        case .stale:
            guard scope == .key else { throw .staleOnlyForKeys(id) }
        }
        if scope == .heartbeat || scope == .worker, action != .drop {
            throw .heartbeatsOnlyHeld(id)
        }
        if scope == .process { throw .processIsNoRule(id) }
    }
}

public enum FaultRuleError: Error, CustomStringConvertible, Equatable {
    case invalidShare(Double)
    case emptyID
    case invalidCount(String)
    case invalidDelay(FaultDelay)
    case invalidAmount(String, String, Int, ClosedRange<Int>)
    case heartbeatsOnlyHeld(String)
    case processIsNoRule(String)
    case staleOnlyForKeys(String)

    public var description: String {
        switch self {
        case .invalidShare(let share):
            "a share is a number from 0 to 1 (0.25 acts on a quarter of the messages); got \(share)"
        case .emptyID:
            "a fault rule needs an id, so that it can be listed and removed later"
        case .invalidCount(let id):
            "rule \(id): skip must be 0 or more, limit and after.count 1 or more"
        case .invalidDelay(let delay):
            "a delay's base, spread and jitter are milliseconds of 0 or more, at most 60 s in all; got base \(delay.base), spread \(delay.spread), jitter \(delay.jitter)"
        case .invalidAmount(let id, let what, let value, let range):
            "rule \(id): \(what) must be from \(range.lowerBound) to \(range.upperBound == Int.max ? "any" : String(range.upperBound)); got \(value)"
        case .heartbeatsOnlyHeld(let id):
            "rule \(id): heartbeats and worker commands can only be held back (action drop); to slow a worker's requests, use scope service"
        case .processIsNoRule(let id):
            "rule \(id): processes are killed and stopped by a plan's kill and stop events, not by a rule"
        case .staleOnlyForKeys(let id):
            "rule \(id): only Clone values can be served stale; aim it with a key prefix (`--key /s/`)"
        }
    }
}
