/// The manifest's YAML shape: snake_case keys, durations as text, unknown keys refused.
struct ManifestDocument: Codable {
    var app: AppInfo?
    var supervisor: SupervisorSettings
    var plugins: [PluginSpec]

    enum CodingKeys: String, CodingKey, CaseIterable {
        case app, supervisor, plugins
    }

    init(app: AppInfo? = nil, supervisor: SupervisorSettings, plugins: [PluginSpec]) {
        self.app = app
        self.supervisor = supervisor
        self.plugins = plugins
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.strictContainer(keyedBy: CodingKeys.self)
        app = try container.decodeIfPresent(AppInfo.self, forKey: .app)
        supervisor = try container.decodeIfPresent(SupervisorSettings.self, forKey: .supervisor) ?? SupervisorSettings()
        plugins = try container.decode([PluginSpec].self, forKey: .plugins)
    }
}

extension SupervisorSettings: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case intensity, period, backoff, liveness
        case shutdownTimeout = "shutdown_timeout"
        case logLimit = "log_limit_bytes"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.strictContainer(keyedBy: CodingKeys.self)
        let defaults = SupervisorSettings()
        intensity = try container.decodeIfPresent(Int.self, forKey: .intensity) ?? defaults.intensity
        period = try container.decodeDurationIfPresent(forKey: .period) ?? defaults.period
        backoff = try container.decodeIfPresent(Backoff.self, forKey: .backoff) ?? defaults.backoff
        shutdownTimeout = try container.decodeDurationIfPresent(forKey: .shutdownTimeout) ?? defaults.shutdownTimeout
        liveness = try container.decodeDurationIfPresent(forKey: .liveness) ?? defaults.liveness
        logLimit = try container.decodeIfPresent(Int.self, forKey: .logLimit) ?? defaults.logLimit
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(intensity, forKey: .intensity)
        try container.encode(DurationText.format(period), forKey: .period)
        try container.encode(backoff, forKey: .backoff)
        try container.encode(DurationText.format(shutdownTimeout), forKey: .shutdownTimeout)
        try container.encode(DurationText.format(liveness), forKey: .liveness)
        try container.encode(logLimit, forKey: .logLimit)
    }
}

extension Backoff: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case initial, max
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.strictContainer(keyedBy: CodingKeys.self)
        let defaults = Backoff()
        initial = try container.decodeDurationIfPresent(forKey: .initial) ?? defaults.initial
        max = try container.decodeDurationIfPresent(forKey: .max) ?? defaults.max
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(DurationText.format(initial), forKey: .initial)
        try container.encode(DurationText.format(max), forKey: .max)
    }
}

extension PluginSpec: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, command, args, env, restart, replicas, liveness
        case shutdownTimeout = "shutdown_timeout"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.strictContainer(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        command = try container.decode(String.self, forKey: .command)
        args = try container.decodeIfPresent([String].self, forKey: .args) ?? []
        env = try container.decodeIfPresent([String: String].self, forKey: .env) ?? [:]
        restart = try container.decodeRestartPolicyIfPresent(forKey: .restart) ?? .permanent
        replicas = try container.decodeIfPresent(Int.self, forKey: .replicas) ?? 1
        shutdownTimeout = try container.decodeDurationIfPresent(forKey: .shutdownTimeout)
        liveness = try container.decodeDurationIfPresent(forKey: .liveness)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(command, forKey: .command)
        if !args.isEmpty { try container.encode(args, forKey: .args) }
        if !env.isEmpty { try container.encode(env, forKey: .env) }
        try container.encode(restart, forKey: .restart)
        try container.encode(replicas, forKey: .replicas)
        try container.encodeIfPresent(shutdownTimeout.map(DurationText.format), forKey: .shutdownTimeout)
        try container.encodeIfPresent(liveness.map(DurationText.format), forKey: .liveness)
    }
}

/// Any key, so a mapping's keys can be listed before they are decoded.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// A keyed container that refuses keys the type does not know, naming the first one.
    func strictContainer<Key: CodingKey & CaseIterable>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let known = Key.allCases.map(\.stringValue)
        for key in try container(keyedBy: AnyKey.self).allKeys where !known.contains(key.stringValue) {
            throw ManifestError.at(
                codingPath + [key],
                problem: "unknown key `\(key.stringValue)`",
                remedy: "remove it or fix its spelling; the keys allowed here are \(known.joined(separator: ", "))"
            )
        }
        return try container(keyedBy: type)
    }
}

extension KeyedDecodingContainer {
    func decodeDurationIfPresent(forKey key: Key) throws -> Duration? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let duration = DurationText.parse(text) else {
            throw ManifestError.at(codingPath + [key], problem: "`\(text)` is not a duration", remedy: DurationText.hint)
        }
        return duration
    }

    func decodeRestartPolicyIfPresent(forKey key: Key) throws -> RestartPolicy? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let policy = RestartPolicy(rawValue: text) else {
            let choices = RestartPolicy.allCases.map(\.rawValue).joined(separator: ", ")
            throw ManifestError.at(codingPath + [key], problem: "unknown restart policy `\(text)`", remedy: "use one of \(choices)")
        }
        return policy
    }
}
