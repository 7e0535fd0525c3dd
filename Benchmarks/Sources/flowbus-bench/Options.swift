import Foundation
import Majordomo

/// The command line: `flowbus-bench [--quick] [--only NAME[,NAME...]] [--json FILE] [--repo PATH] [--skip-build]`.
struct Options {
    var quick = false
    var only: Set<String> = []
    var jsonPath: String?
    var repositoryPath: String
    var skipBuild = false
    /// For profiling one configuration: worker counts of mdp-throughput, subscriber counts of clone-rate.
    var workerCounts = [1, 2, 4]
    /// mdp-throughput: lanes per worker thread beside the plain one-worker-per-thread runs.
    var laneCounts = [1, 16]
    /// mdp-throughput: worker credits (Flowbus's READY extension) beside the plain credit-1 runs.
    var credits = [1, 128]
    /// mdp-rtt and mdp-throughput: the broker's busy-poll window in µs; nil keeps the broker's default.
    var busyPollMicroseconds: Int?
    /// mdp-rtt and mdp-throughput: the broker's spin budget (`BrokerConfiguration.busyPollBudget`); nil keeps its default.
    var busyPollBudget: Double?
    var subscriberCounts = [1, 10]
    /// client-fanout: read-only followers attached to the driver's session.
    var clientCounts = [1, 10]
    /// For profiling Flowbus alone: no raw baselines, no raw-SUB variant of clone-rate.
    var flowbusOnly = false

    static let usage = """
    usage: swift run -c release --package-path Benchmarks flowbus-bench [options]

      --quick          a short smoke run (fewer iterations; figures are rough)
      --only NAMES     run only these benchmarks, comma-separated: \(BenchmarkName.allCases.map(\.rawValue).joined(separator: ", "))
      --json FILE      also write the results as JSON to FILE
      --repo PATH      the Flowbus repository (default: the parent of Benchmarks/)
      --skip-build     idle-memory, app-journey, app-memory: use the binaries already in Benchmarks/.build-flowbus instead of building them;
                       grpc: use Benchmarks/GRPCBaseline/.build/release/grpc-baseline instead of building it
      --workers LIST   mdp-throughput worker counts (default 1,2,4)
      --lanes LIST     mdp-throughput MDP worker lanes per worker thread (default 1,16)
      --credits LIST   mdp-throughput worker credits, requests a worker takes at once (default 1,128)
      --busy-poll US   mdp-rtt, mdp-throughput, grpc: the broker's busy-poll window in µs (default: the broker's own, 50; 0 turns it off)
      --busy-poll-budget X  the same: spin time the broker accepts per message caught, in sleeps' CPU (default 1; inf: every spin that catches)
      --subscribers LIST  clone-rate subscriber counts (default 1,10)
      --clients LIST   client-fanout follower counts, besides the driver (default 1,10)
      --flowbus-only   skip the raw baselines (for profiling Flowbus alone; the table has no ratios)
      --help           this text

    Progress goes to stderr; the table of results to stdout.
    """

    /// Parses `arguments` (without the program name); throws a message for the person who typed them.
    init(arguments: [String]) throws(UsageError) {
        repositoryPath = Self.defaultRepositoryPath
        var index = 0
        func value(of flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                throw UsageError("\(flag) needs a value")
            }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--quick": quick = true
            case "--skip-build": skipBuild = true
            case "--flowbus-only": flowbusOnly = true
            case "--workers": workerCounts = try Self.counts(try value(of: argument), argument)
            case "--lanes": laneCounts = try Self.counts(try value(of: argument), argument)
            case "--busy-poll":
                let text = try value(of: argument)
                guard let microseconds = Int(text), (0...100_000).contains(microseconds) else {
                    throw UsageError("--busy-poll takes microseconds from 0 to 100000, e.g. 50 (0 turns it off); got '\(text)'")
                }
                busyPollMicroseconds = microseconds
            case "--busy-poll-budget":
                let text = try value(of: argument)
                guard let budget = Double(text), budget > 0 else {
                    throw UsageError("--busy-poll-budget takes a number above 0, e.g. 1 (spin only where it costs no more CPU than sleeping) or inf; got '\(text)'")
                }
                busyPollBudget = budget
            case "--credits": credits = try Self.counts(try value(of: argument), argument, upTo: 1024, example: "1,128")
            case "--subscribers": subscriberCounts = try Self.counts(try value(of: argument), argument)
            case "--clients": clientCounts = try Self.counts(try value(of: argument), argument)
            case "--json": jsonPath = try value(of: argument)
            case "--repo": repositoryPath = try value(of: argument)
            case "--only":
                for name in try value(of: argument).split(separator: ",") {
                    guard let known = BenchmarkName(rawValue: String(name)) else {
                        throw UsageError("unknown benchmark '\(name)'; choose from \(BenchmarkName.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    only.insert(known.rawValue)
                }
            case "--help", "-h": throw UsageError(nil)
            default: throw UsageError("unknown option '\(argument)'")
            }
            index += 1
        }
    }

    private static func counts(_ text: String, _ flag: String, upTo limit: Int = 64, example: String = "1,2,4") throws(UsageError) -> [Int] {
        let counts = text.split(separator: ",").compactMap { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 >= 1 && $0 <= limit }) else {
            throw UsageError("\(flag) takes a comma-separated list of counts from 1 to \(limit), e.g. \(example)")
        }
        return counts
    }

    func runs(_ name: BenchmarkName) -> Bool {
        only.isEmpty || only.contains(name.rawValue)
    }

    /// Benchmarks/Sources/flowbus-bench/Options.swift → the repository three folders above Benchmarks/.
    static var defaultRepositoryPath: String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }
}

struct UsageError: Error {
    /// nil: the person asked for help.
    let message: String?
    init(_ message: String?) { self.message = message }
}

enum BenchmarkName: String, CaseIterable, Sendable {
    /// The machine's price for a system call and a thread's wake-up, first in a run (`MachineCosts`).
    case machine = "machine"
    case mdpRoundTrip = "mdp-rtt"
    case mdpThroughput = "mdp-throughput"
    /// gRPC Swift (Benchmarks/GRPCBaseline, a package of its own) against Flowbus MDP in the same run.
    case grpc = "grpc"
    case cloneRate = "clone-rate"
    case idleMemory = "idle-memory"
    case appJourney = "app-journey"
    case appMemory = "app-memory"
    case clientFanout = "client-fanout"
    case hostChurn = "host-churn"
    case appStore = "app-store"
    case chaosCheck = "chaos-check"
    case simScale = "sim-scale"
}

extension Options {
    /// The broker's configuration for mdp-rtt and mdp-throughput: its defaults, or the busy-poll
    /// window given on the command line (`busyPoll` overrides `--busy-poll`).
    func brokerConfiguration(busyPoll: Duration? = nil, budget: Double? = nil) -> BrokerConfiguration {
        var configuration = BrokerConfiguration()
        if let budget = budget ?? busyPollBudget { configuration.busyPollBudget = budget }
        if let busyPoll {
            configuration.busyPoll = busyPoll
        } else if let busyPollMicroseconds {
            configuration.busyPoll = .microseconds(busyPollMicroseconds)
        }
        return configuration
    }
}
