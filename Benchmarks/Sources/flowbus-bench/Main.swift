import Foundation
import Logging

@main
struct FlowbusBench {
    static func main() {
        // A party of like-floor's or journey-floor's raw baseline, started by this binary itself.
        if CommandLine.arguments.count > 1, CommandLine.arguments[1] == LikeFloor.partyFlag {
            LikeFloor.runParty(Array(CommandLine.arguments.dropFirst(2)))
        }
        if CommandLine.arguments.count > 1, CommandLine.arguments[1] == JourneyFloor.partyFlag {
            JourneyFloor.runParty(Array(CommandLine.arguments.dropFirst(2)))
        }
        let options: Options
        do {
            options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
        } catch {
            if let message = error.message {
                FileHandle.standardError.write(Data("flowbus-bench: \(message)\n\n\(Options.usage)\n".utf8))
                exit(64)
            }
            print(Options.usage)
            exit(0)
        }
        // The executable bootstraps logging once; warnings and worse go to stderr, never into the table.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let logger = Logger(label: "flowbus-bench")
        // A subscriber or peer that goes away must not kill the run with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)

        let started = Date()
        let loadBefore = Machine.loadAverage
        let revision = Machine.revision(of: options.repositoryPath)
        progress("flowbus-bench \(options.quick ? "(quick) " : "")on \(Machine.description), libzmq \(RawContext.version)")
        var rows: [ResultRow] = []
        func attempt(_ name: BenchmarkName, _ body: () throws(BenchError) -> [ResultRow]) {
            guard options.runs(name) else { return }
            do {
                rows += try body()
            } catch {
                progress("\(name.rawValue): FAILED: \(error)")
                rows.append(.failed(name.rawValue, error.description))
            }
        }
        attempt(.machine) { () throws(BenchError) in MachineCosts(options: options).run() }
        attempt(.mdpRoundTrip) { () throws(BenchError) in try MDPRoundTrip(options: options, logger: logger).run() }
        attempt(.mdpThroughput) { () throws(BenchError) in try MDPThroughput(options: options, logger: logger).run() }
        attempt(.grpc) { () throws(BenchError) in try GRPCBaseline(options: options, logger: logger).run() }
        attempt(.cloneRate) { () throws(BenchError) in try CloneRate(options: options, logger: logger).run() }
        attempt(.idleMemory) { () throws(BenchError) in IdleMemory(options: options).run() }
        attempt(.appJourney) { () throws(BenchError) in AppJourney(options: options, logger: logger).run() }
        attempt(.appMemory) { () throws(BenchError) in AppMemory(options: options, logger: logger).run() }
        attempt(.clientFanout) { () throws(BenchError) in ClientFanout(options: options, logger: logger).run() }
        attempt(.hostChurn) { () throws(BenchError) in try HostChurn(options: options).run() }
        attempt(.appStore) { () throws(BenchError) in try AppStoreBench(options: options).run() }
        attempt(.chaosCheck) { () throws(BenchError) in ChaosCheckBench(options: options).run() }
        attempt(.simScale) { () throws(BenchError) in SimScale(options: options).run() }

        let date = ISO8601DateFormatter().string(from: started)
        let load = "load average \(loadBefore) at start, \(Machine.loadAverage) at end"
        print("Flowbus benchmarks — \(date) — \(Machine.description), libzmq \(RawContext.version)\(options.quick ? " — QUICK run, rough figures" : "")")
        print("Flowbus \(revision); \(load) (other work on the machine moves every figure; compare Flowbus with the raw baseline of the same run)\n")
        print(Table.render(rows))
        if let path = options.jsonPath {
            let report = RunReport(
                date: date, revision: revision, machine: Machine.description, load: load, libzmq: RawContext.version, quick: options.quick, rows: rows)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            do {
                try encoder.encode(report).write(to: URL(fileURLWithPath: path))
                progress("results written to \(path)")
            } catch {
                progress("cannot write \(path): \(error)")
                exit(1)
            }
        }
        exit(rows.contains { $0.verdict == .failed } ? 1 : 0)
    }
}

enum Machine {
    /// "2 cores, <CPU model>".
    static var description: String {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        return "\(cores) cores, \(model)"
    }

    /// `git describe --always --dirty` of the measured tree ("-dirty": uncommitted changes were measured too).
    static func revision(of repository: String) -> String {
        let (status, output) = IdleMemory.execute("/usr/bin/env", ["git", "describe", "--always", "--dirty"], in: URL(fileURLWithPath: repository))
        return status == 0 ? output.trimmingCharacters(in: .whitespacesAndNewlines) : "unknown revision"
    }

    /// The 1-minute load average from /proc/loadavg.
    static var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").first.map(String.init) ?? "?"
    }
}
