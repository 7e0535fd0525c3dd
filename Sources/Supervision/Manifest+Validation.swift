import FlowbusEnvironment

extension Manifest {
    /// Variables every child gets from the supervisor; a manifest may not set them.
    static let reservedEnvironment: Set<String> = [BusVariables.plugin, BusVariables.replica, BusVariables.incarnation]
    static let maximumReplicas = 256

    func validate() throws(ManifestError) {
        try supervisor.validate()
        var firstUse: [String: Int] = [:]
        for (index, plugin) in plugins.enumerated() {
            let place = "plugins[\(index)]"
            try plugin.validate(at: place)
            if let earlier = firstUse[plugin.name] {
                throw ManifestError(
                    location: "\(place).name",
                    problem: "`\(plugin.name)` is already the name of plugins[\(earlier)]",
                    remedy: "give each plugin its own name; use `replicas` to run several copies of one"
                )
            }
            firstUse[plugin.name] = index
        }
    }
}

extension SupervisorSettings {
    func validate() throws(ManifestError) {
        if intensity < 0 {
            throw ManifestError(location: "supervisor.intensity", problem: "is negative (\(intensity))",
                                remedy: "use 0 or more: the restarts allowed within `period`")
        }
        if period <= .zero {
            throw ManifestError(location: "supervisor.period", problem: "must be longer than zero",
                                remedy: "use the window restarts are counted in, such as 10s")
        }
        if backoff.max < backoff.initial {
            throw ManifestError(
                location: "supervisor.backoff.max",
                problem: "\(DurationText.format(backoff.max)) is shorter than initial (\(DurationText.format(backoff.initial)))",
                remedy: "make max at least as long as initial"
            )
        }
    }
}

extension PluginSpec {
    func validate(at place: String) throws(ManifestError) {
        if name.isEmpty || !name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) {
            throw ManifestError(location: "\(place).name", problem: "`\(name)` is not a valid plugin name",
                                remedy: "use lowercase letters, digits and dashes, such as `checkout-vm`")
        }
        if command.trimmingWhitespace().isEmpty {
            throw ManifestError(location: "\(place).command", problem: "is empty (plugin \(name))",
                                remedy: "give the executable to run: absolute, relative to the manifest's folder, or a name on the search path")
        }
        if !(1...Manifest.maximumReplicas).contains(replicas) {
            throw ManifestError(location: "\(place).replicas", problem: "\(replicas) is out of range (plugin \(name))",
                                remedy: "run between 1 and \(Manifest.maximumReplicas); remove the plugin to run none")
        }
        for key in env.keys.sorted() {
            if key.isEmpty || key.contains("=") {
                throw ManifestError(location: "\(place).env", problem: "`\(key)` is not a valid variable name (plugin \(name))",
                                    remedy: "use a non-empty name without `=`")
            }
            if Manifest.reservedEnvironment.contains(key) {
                throw ManifestError(location: "\(place).env.\(key)", problem: "is set by the supervisor (plugin \(name))",
                                    remedy: "remove it; every child gets FLOWBUS_PLUGIN, FLOWBUS_REPLICA and FLOWBUS_INCARNATION")
            }
        }
        let texts = [command] + args + env.keys + env.values
        if texts.contains(where: { $0.contains("\0") }) {
            throw ManifestError(location: place, problem: "a command, argument or variable contains a NUL character (plugin \(name))",
                                remedy: "remove the NUL; the operating system cannot pass it")
        }
    }
}
