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
        }
    }

    static func text(_ milliseconds: Int64) -> String {
        milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }

    /// A partition between `plugin` and the host: what the plugin sends (requests, Clone writes)
    /// is lost, and so is every command its workers send the broker (heartbeats, replies, READY),
    /// so the broker soon takes them for dead and sends them nothing more.
    static func partition(_ plugin: String, id: String) -> Fault {
        let peer = "plugin:\(plugin)/"
        return .rules([
            FaultRule(id: "\(id)-requests", scope: .service, prefix: "", action: .drop, peer: peer),
            FaultRule(id: "\(id)-writes", scope: .key, prefix: "", action: .drop, peer: peer),
            FaultRule(id: "\(id)-workers", scope: .worker, prefix: "", action: .drop, peer: peer),
        ])
    }
}
