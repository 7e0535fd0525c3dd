import FlowbusTesting
import Foundation
import Testing

/// `flowbus client` refuses a bad option before it reaches anything, saying what is wrong with it.
@Suite("Client options")
struct ClientOptionsTests {
    @Test("--size says which of rows and columns is wrong, and notices them swapped",
          arguments: [
              ("80x24", ["24 columns wide", "at least 30", "did you mean 24x80?"]),
              ("24by80", ["is not ROWSxCOLUMNS", "24x80"]),
              ("5x80", ["5 rows tall", "at least 8"]),
          ])
    func sizeProblemsAreNamed(size: String, expected: [String]) async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let run = try await FlowbusProcesses.run(flowbus, ["client", "--script", "/nonexistent.yaml", "--size", size, "--run-dir", "/tmp/fbc-none"])
        #expect(run.status != 0)
        for text in expected { #expect(run.output.contains(text), "\(run.output)") }
    }
}
