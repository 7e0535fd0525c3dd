import MessagePath

/// What to inject and when, from a seed: a timeline of fault rules switched on and off, plugin
/// processes killed or stopped, and partitions between a plugin and the host. Written as YAML
/// (`FaultPlan.parse`), played by the host (`flowbus fault plan FILE`, `flowbus chaos run`).
public struct FaultPlan: Codable, Sendable, Equatable {
    public var name: String
    public var seed: UInt64
    /// How long a run of the plan lasts when the runner is not told (`duration:`), in milliseconds;
    /// by default until its last event ends.
    public var durationMilliseconds: Int64?
    /// Sorted by time.
    public var events: [FaultPlanEvent]

    public init(name: String, seed: UInt64, durationMilliseconds: Int64? = nil, events: [FaultPlanEvent]) {
        self.name = name
        self.seed = seed
        self.durationMilliseconds = durationMilliseconds
        self.events = events.sorted { $0.atMilliseconds < $1.atMilliseconds }
    }

    /// When the last event ends (an open-ended one counts from its start).
    public var lastEventEndMilliseconds: Int64 {
        events.map { $0.atMilliseconds + ($0.durationMilliseconds ?? 0) }.max() ?? 0
    }

    /// The same plan with fewer events: for shrinking a failing run.
    public func keeping(_ indices: some Sequence<Int>) -> FaultPlan {
        var plan = self
        plan.events = indices.sorted().map { events[$0] }
        return plan
    }
}

/// One entry of a plan's timeline.
public struct FaultPlanEvent: Codable, Sendable, Equatable {
    public enum Fault: Codable, Sendable, Equatable {
        /// Rules installed at the event's time and removed when it ends (a partition is three).
        case rules([FaultRule])
        /// SIGKILL of a plugin's instance (the supervisor restarts it).
        case kill(plugin: String, replica: Int)
        /// SIGSTOP of a plugin's instance, SIGCONT when the event ends.
        case stop(plugin: String, replica: Int)
        /// SIGKILL of the instance whose worker last answered a request to a service starting with
        /// `service` in `session` (nil: in any session), as the host's history says.
        case killServing(service: String, session: String?)
        /// SIGSTOP of that instance, SIGCONT when the event ends.
        case stopServing(service: String, session: String?)
        /// A plugin's clock skewed (one replica, or every one when nil), put right when the event ends.
        case clock(plugin: String, replica: Int?, skew: ClockSkew)
        /// A partition between a plugin (every replica) and the host: what the plugin sends is lost
        /// (`toHost`), what the host sends it is lost (`fromHost`), or both. `id` names its rules.
        case partition(plugin: String, direction: PartitionDirection, id: String)
    }

    /// Which way a partition cuts.
    public enum PartitionDirection: String, Codable, Sendable, CaseIterable {
        /// What the plugin sends (requests, replies, heartbeats, Clone writes) is lost at the host.
        case toHost = "to-host"
        /// What the host sends the plugin (requests, replies, heartbeats, Clone updates) is lost in
        /// the plugin, which the host tells with a fault order (`ProcessFaultOrder`).
        case fromHost = "from-host"
        case both
    }

    public var atMilliseconds: Int64
    /// Nil: until the plan's run ends.
    public var durationMilliseconds: Int64?
    public var fault: Fault

    public init(atMilliseconds: Int64, durationMilliseconds: Int64? = nil, fault: Fault) {
        self.atMilliseconds = atMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.fault = fault
    }

    /// One line for people: `at 2s for 5s: stop vm-details/0`.
    public var summary: String {
        let when = "at \(Self.text(atMilliseconds))" + (durationMilliseconds.map { " for \(Self.text($0))" } ?? "")
        switch fault {
        case .rules(let rules):
            return when + ": " + rules.map { rule in
                "\(rule.action.name) \(rule.scope.rawValue) \(rule.prefix.isEmpty ? "*" : rule.prefix)"
                    + (rule.share < 1 ? " share \(rule.share)" : "") + (rule.peer.map { " from \($0)" } ?? "")
                    + (rule.session.map { " session \($0)" } ?? "") + (rule.method.map { " method \($0)" } ?? "")
            }.joined(separator: ", ")
        case .kill(let plugin, let replica): return when + ": kill \(plugin)/\(replica)"
        case .stop(let plugin, let replica): return when + ": stop \(plugin)/\(replica)"
        case .killServing(let service, let session): return when + ": kill " + Self.serving(service, session)
        case .stopServing(let service, let session): return when + ": stop " + Self.serving(service, session)
        case .clock(let plugin, let replica, let skew):
            return when + ": clock of \(plugin)\(replica.map { "/\($0)" } ?? "") " + Self.text(skew)
        case .partition(let plugin, let direction, _):
            return when + ": partition \(plugin) \(direction.rawValue)"
        }
    }

    static func text(_ milliseconds: Int64) -> String {
        if milliseconds != 0, milliseconds % 3_600_000 == 0 { return "\(milliseconds / 3_600_000)h" }
        if milliseconds != 0, milliseconds % 60_000 == 0 { return "\(milliseconds / 60_000)m" }
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }

    /// `+30s`, `-500ms rate 2`.
    static func text(_ skew: ClockSkew) -> String {
        (skew.offsetMilliseconds < 0 ? "-" : "+") + text(abs(skew.offsetMilliseconds)) + (skew.rate == 1 ? "" : " rate \(skew.rate)")
    }

    static func serving(_ service: String, _ session: String?) -> String {
        "the one serving \(service)" + (session.map { " in session \($0)" } ?? "")
    }

    /// Lasts until the run ends (a kill is over once done).
    public var isOpenEnded: Bool {
        switch fault {
        case .kill, .killServing: false
        default: durationMilliseconds == nil
        }
    }

    /// The plugins an event names (none for one aimed at whatever serves a session).
    public var plugin: String? {
        switch fault {
        case .kill(let plugin, _), .stop(let plugin, _), .clock(let plugin, _, _), .partition(let plugin, _, _): plugin
        case .rules, .killServing, .stopServing: nil
        }
    }

    /// The host's side of a partition from `plugin` to the host: what the plugin sends (requests,
    /// Clone writes) is lost, and so is every command its workers send the broker (heartbeats,
    /// replies, READY), so the broker soon takes them for dead and sends them nothing more.
    static func partitionRules(_ plugin: String, id: String) -> [FaultRule] {
        let peer = "plugin:\(plugin)/"
        return [
            FaultRule(id: "\(id)-requests", scope: .service, prefix: "", action: .drop, peer: peer),
            FaultRule(id: "\(id)-writes", scope: .key, prefix: "", action: .drop, peer: peer),
            FaultRule(id: "\(id)-workers", scope: .worker, prefix: "", action: .drop, peer: peer),
        ]
    }
}
