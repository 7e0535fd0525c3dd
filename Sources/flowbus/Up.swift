import ArgumentParser
import FlowHost
import MessagePath
import Foundation
import Logging
import Supervision

struct Up: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Starts the host: broker, Clone server, and the manifest's plugins, supervised.",
        discussion: """
        Without --manifest, runs the manifest of --app, or of the default app of the package's \
        Plugins/apps.yaml. Endpoints default to ipc:// sockets in the run directory; --broker \
        tcp://127.0.0.1:5555 --clone tcp://127.0.0.1:5556 put the broker and the Clone server \
        (ports 5556, 5557, 5558) on TCP. Listening beyond loopback requires --curve-secret and \
        --allow. Stops on Ctrl-C, SIGTERM or `flowbus down`.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "The manifest (YAML). Default: the manifest of --app.")
    var manifest: String?

    @Option(name: .long, help: "The app to run, by its name in the package's Plugins/apps.yaml (default: $FLOWBUS_APP, else the registry's default app).")
    var app: String?

    @Flag(name: .long, help: "Run in the background; return once the host is ready.")
    var detach = false

    @Option(name: .long, help: "The broker's endpoint, e.g. tcp://127.0.0.1:5555.")
    var broker: String?

    @Option(name: .long, help: "The Clone server's base endpoint: tcp://HOST:P uses ports P, P+1, P+2.")
    var clone: String?

    @Option(name: .long, help: "The host's CURVE secret key file (from `flowbus keys --out NAME`).")
    var curveSecret: String?

    @Option(name: .long, help: "File of client public keys allowed to connect, one z85 key a line.")
    var allow: String?

    @Option(name: .long, help: "MDP heartbeat interval in milliseconds (broker and plugins).")
    var heartbeatMs: Int = 500

    @Option(name: .long, help: "Largest accepted message in bytes; larger ones are refused and counted.")
    var maxMessageBytes: Int = 1 << 20

    @Option(name: .long, help: "How long a request for a service with no worker waits before the UNKNOWN_SERVICE error, in milliseconds.")
    var requestExpiryMs: Int = 5000

    @Option(name: .long, help: "After traffic, how long the broker polls without sleeping before it blocks, in microseconds (0 turns it off; it saves a thread wake-up per message at the cost of that much CPU per burst).")
    var brokerBusyPollUs: Int = 50

    @Option(name: .long, help: "How much the broker may spin per message a spin catches, in what the sleep it saves costs it (measured). 1 spins only where spinning costs no more CPU than sleeping; higher pays CPU for lower latency; inf keeps every spin that catches one message in eight.")
    var brokerBusyPollBudget: Double = 1

    @Option(name: .long, help: "How many sessions' histories the host keeps for `flowbus trace` (about 7 KiB each for a short session; at most 100,000 events in all). 0 keeps none and records nothing.")
    var historySessions: Int = SessionHistoryLimits().sessions

    @Option(name: .long, help: "Closed mode: new tcp connections per second one client address may open, ten times that at once; past it they are refused and counted, and libzmq connects again by itself. 0: no limit.")
    var connectionRate: Int = 100

    @Option(name: .long, help: "Closed mode: snapshots per second one client may ask the Clone server for, four times that at once; past it they are dropped and counted. 0: no limit.")
    var snapshotRate: Int = 50

    @Option(name: .long, help: "Where the host and its plugins run: pinned (the host's threads on one CPU, each plugin process on one CPU, in turn over the CPUs the host may use: less CPU and latency per message on a small or virtual machine; no plugin uses more than one CPU), shared (the kernel places every thread) or auto (pinned when the host may use two CPUs, else shared). Default: $FLOWBUS_PLACEMENT, else auto.")
    var placement: String?

    @Flag(name: .long, help: "Open mode: every peer may register as a worker, call any service and read or write any key (for the zguide's reference peers on loopback). The default is closed: only the plugins this host launches serve and write state; clients send intents and read their own session.")
    var open = false

    func validate() throws {
        guard connectionRate >= 0, snapshotRate >= 0 else {
            throw ValidationError("--connection-rate and --snapshot-rate are per second, 0 (no limit) or more; got \(connectionRate) and \(snapshotRate)")
        }
        guard (0...1_000_000).contains(historySessions) else {
            throw ValidationError("--history-sessions must be from 0 (keep no history) to 1000000; got \(historySessions)")
        }
        guard (0...100_000).contains(brokerBusyPollUs) else {
            throw ValidationError("--broker-busy-poll-us must be from 0 to 100000 microseconds; got \(brokerBusyPollUs)")
        }
        guard brokerBusyPollBudget > 0, !brokerBusyPollBudget.isNaN else {
            throw ValidationError("--broker-busy-poll-budget must be above 0 (1 spins only where it costs no more CPU than sleeping, inf for every spin that catches); got \(brokerBusyPollBudget). To turn spinning off, use --broker-busy-poll-us 0")
        }
        guard heartbeatMs >= 10 else { throw ValidationError("--heartbeat-ms must be at least 10; got \(heartbeatMs)") }
        guard requestExpiryMs >= 10 else { throw ValidationError("--request-expiry-ms must be at least 10; got \(requestExpiryMs)") }
        guard maxMessageBytes >= 1024 else { throw ValidationError("--max-message-bytes must be at least 1024; got \(maxMessageBytes)") }
        guard (curveSecret == nil) == (allow == nil) else {
            throw ValidationError("CURVE needs both --curve-secret FILE and --allow FILE (make keys with `flowbus keys --out NAME`)")
        }
        if let manifest, !FileManager.default.isReadableFile(atPath: manifest) {
            throw ValidationError("cannot read the manifest \(manifest); give the path of a YAML manifest, or omit --manifest for the default app's")
        }
        _ = try chosenPlacement()
        if manifest != nil, app != nil {
            throw ValidationError("--manifest and --app both say what to run; give one of them")
        }
    }

    func run() throws {
        if !detach { StopSignals.install() }  // already done by Entry; kept for callers of Up directly
        var configuration = try hostConfiguration()
        try configuration.validateExposure()
        // What to run is read after the endpoints are judged safe, so an exposure error comes first.
        let url = try manifest.map { URL(fileURLWithPath: $0).standardizedFileURL } ?? AppChoice.manifest(app: app)
        configuration.manifestYAML = try String(contentsOf: url, encoding: .utf8)
        configuration.manifestDirectory = url.deletingLastPathComponent()
        if detach {
            try Detached.start(arguments: CommandLine.arguments.filter { $0 != "--detach" }, runDirectory: configuration.runDirectory)
            return
        }
        global.bootstrapLogging()
        var logger = Logger(label: "flowbus.host")
        logger[metadataKey: "flowbus.pid"] = "\(getpid())"
        let host = Host(configuration: configuration, logger: logger)
        try host.run { descriptor in
            if descriptor.access == .open {
                print("flowbus host: OPEN MODE — any peer that can connect may serve, call any service and write any key; drop --open to close the bus")
            }
            print("flowbus host \(descriptor.pid) ready — broker \(descriptor.endpoints.broker), clone \(descriptor.endpoints.cloneSnapshot) (run directory \(descriptor.runDirectory)); Ctrl-C or `flowbus down` stops it")
            fflush(nil)
        }
    }

    private func hostConfiguration() throws -> HostConfiguration {
        var configuration = HostConfiguration(runDirectory: global.runDirectory)
        configuration.brokerEndpoint = broker
        configuration.cloneBase = clone
        configuration.curveSecretPath = curveSecret
        configuration.allowListPath = allow
        configuration.heartbeatInterval = .milliseconds(heartbeatMs)
        configuration.maxMessageBytes = maxMessageBytes
        configuration.unknownServiceExpiry = .milliseconds(requestExpiryMs)
        configuration.brokerBusyPoll = .microseconds(brokerBusyPollUs)
        configuration.brokerBusyPollBudget = brokerBusyPollBudget
        configuration.historyLimits.sessions = historySessions
        configuration.openAccess = open
        configuration.connectionRate = connectionRate == 0 ? .unlimited : RateLimit(perSecond: Double(connectionRate), burst: Double(connectionRate * 10))
        configuration.snapshotRate = snapshotRate == 0 ? .unlimited : RateLimit(perSecond: Double(snapshotRate), burst: Double(snapshotRate * 4))
        configuration.pluginSearchPath = [ExecutablePath.directory]
        configuration.placement = try chosenPlacement()
        return configuration
    }

    /// --placement, else $FLOWBUS_PLACEMENT, else auto.
    private func chosenPlacement() throws -> Placement {
        let fromEnvironment = ProcessInfo.processInfo.environment["FLOWBUS_PLACEMENT"].flatMap { $0.isEmpty ? nil : $0 }
        guard let text = placement ?? fromEnvironment else { return .auto }
        guard let chosen = Placement(rawValue: text) else {
            let source = placement != nil ? "--placement" : "FLOWBUS_PLACEMENT"
            throw ValidationError("\(source) must be auto (pinned when the host may use two CPUs, else shared; the default), shared (the kernel places every thread) or pinned (the host and each plugin process on one CPU each); got \(text)")
        }
        return chosen
    }
}

/// Which app `flowbus up` and `flowbus demo` run when no manifest is given: `--app`, else
/// `$FLOWBUS_APP`, else the default of the package's app registry (Plugins/apps.yaml).
enum AppChoice {
    static func manifest(app: String?) throws -> URL {
        let registry = try AppRegistry.locate(executableDirectory: ExecutablePath.directory)
        let chosen = app ?? ProcessInfo.processInfo.environment["FLOWBUS_APP"].flatMap { $0.isEmpty ? nil : $0 }
        return try registry.manifest(for: chosen)
    }
}

enum ExecutablePath {
    /// The folder this flowbus binary is in: plugins built beside it are found there first.
    static var directory: String {
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: path).deletingLastPathComponent().path
    }

    static var path: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
