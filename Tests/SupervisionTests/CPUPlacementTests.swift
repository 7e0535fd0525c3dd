import Foundation
import Glibc
import Testing
@testable import Supervision

@Suite struct CPUPlacementTests {
    @Test func theHostTakesTheFirstCPUAndThePluginsTheNextOnesInTurn() throws {
        let two = try #require(CPUPlacement(cpus: [0, 1]))
        #expect(two.hostCPU == 0)
        #expect((0..<5).map(two.cpu(ofInstance:)) == [1, 0, 1, 0, 1])
        let sparse = try #require(CPUPlacement(cpus: [2, 5, 7]))
        #expect(sparse.hostCPU == 2)
        #expect((0..<4).map(sparse.cpu(ofInstance:)) == [5, 7, 2, 5])
        let one = try #require(CPUPlacement(cpus: [3]))
        #expect(one.hostCPU == 3)
        #expect((0..<3).map(one.cpu(ofInstance:)) == [3, 3, 3])
        #expect(CPUPlacement(cpus: []) == nil)
    }

    @Test func aHostStartsFromTheCPUItsIndexPlacesAndThePluginsFollowIt() throws {
        let three = try #require(CPUPlacement(cpus: [2, 5, 7]))
        #expect(three.starting(at: 0).cpus == [2, 5, 7])
        #expect(three.starting(at: 4).cpus == [5, 7, 2])
        #expect(three.starting(at: 4).hostCPU == 5)
        #expect((0..<4).map(three.starting(at: 4).cpu(ofInstance:)) == [7, 2, 5, 7])
        #expect(three.starting(at: -1).cpus == [7, 2, 5])
        // Hosts with consecutive pids start on different CPUs.
        #expect(Set((100..<103).map { three.starting(at: $0).hostCPU }) == [2, 5, 7])
    }

    @Test func readsTheCPUsThisProcessMayUseAsTheKernelListsThem() throws {
        let plan = try #require(CPUPlacement.ofThisProcess())
        #expect(plan.cpus == expand(try allowedList(of: "self")))
    }

    /// Each replica on its CPU, and what it starts too (`cat` inherits it); a restarted one on the
    /// same CPU as before. The test process itself stays where it was.
    @Test func pinsEachPluginProcessToItsCPUAndKeepsItAcrossARestart() async throws {
        let plan = try #require(CPUPlacement.ofThisProcess())
        let directory = try TestDirectory()
        let manifest = Manifest(supervisor: fastSettings(), plugins: [reporter(directory, replicas: 3)], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, placement: plan, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        defer { supervisor.stop() }
        let first = await waitForLines(directory, "cpus", count: 3)
        let expected = (0..<3).map { plan.cpu(ofInstance: $0) }
        #expect(Set(first) == Set((0..<3).map { "reporter \($0) 1 \(expected[$0])" }), "\(first)")
        #expect(supervisor.status().map(\.cpu) == expected)
        for status in supervisor.status() {
            let pid = try #require(status.pid)
            #expect(expand(try allowedList(of: "\(pid)")) == [expected[status.replica]], "replica \(status.replica)")
        }

        try supervisor.kill(plugin: "reporter", replica: 1, signal: SIGKILL)
        let again = await waitForLines(directory, "cpus", count: 4)
        #expect(again.last == "reporter 1 2 \(expected[1])", "\(again)")
        #expect(supervisor.status().map(\.cpu) == expected)
        #expect(expand(try allowedList(of: "self")) == plan.cpus, "the supervising process is not pinned")
    }

    /// `flowbus up`'s default, auto: pinned on a host that may use two CPUs, shared on one or more.
    @Test func autoPlacementPinsOnlyOnTwoCPUs() {
        #expect(Placement.automatic(allowedCPUs: 2) == .pinned)
        for count in [1, 3, 4, 8, 64] {
            #expect(Placement.automatic(allowedCPUs: count) == .shared, "\(count) CPUs")
        }
    }

    /// Shared placement pins nothing: a plugin may run where this process may.
    @Test func sharedPlacementLeavesEveryCPUToThePlugins() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(supervisor: fastSettings(), plugins: [reporter(directory, replicas: 1)], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        defer { supervisor.stop() }
        let lines = await waitForLines(directory, "cpus", count: 1)
        #expect(lines == ["reporter 0 1 \(try allowedList(of: "self"))"])
        #expect(supervisor.status().map(\.cpu) == [nil])
    }

    /// Writes "plugin replica incarnation cpus" as the process it starts reads its CPUs, then sleeps.
    private func reporter(_ directory: TestDirectory, replicas: Int) -> PluginSpec {
        shellPlugin("reporter", """
            echo "$FLOWBUS_PLUGIN $FLOWBUS_REPLICA $FLOWBUS_INCARNATION $(grep Cpus_allowed_list /proc/self/status | cut -f2)" >> \(directory.file("cpus"))
            exec sleep 30
            """, replicas: replicas)
    }

    /// /proc/<pid>/status's Cpus_allowed_list, e.g. "0-1" or "3".
    private func allowedList(of pid: String) throws -> String {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        return line.split(separator: "\t").last.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
    }

    /// "0-2,5" → [0, 1, 2, 5].
    private func expand(_ list: String) -> [Int] {
        list.split(separator: ",").flatMap { range -> [Int] in
            let bounds = range.split(separator: "-").compactMap { Int($0) }
            guard let low = bounds.first else { return [] }
            return Array(low...(bounds.last ?? low))
        }
    }
}
