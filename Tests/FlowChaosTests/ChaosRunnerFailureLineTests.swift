@testable import FlowChaos
import Testing

/// A failed journey's line in `flowbus chaos run`'s progress names the expectation's rows that did
/// not hold, however many rows held before them.
@Suite("Chaos run: a failed journey's line")
struct ChaosRunnerFailureLineTests {
    @Test func keepsTheRowsThatDidNotHold() {
        let failure = """
            step 29 (line 29, expect) failed: session raufd85jjy: waited 40.0 seconds for screen signin, user (signed out), coordinators [app, auth], which did not happen
                            expected | actual
              screen        signin | signin
              user          (signed out) | (signed out)
            ✗ coordinators  [app, auth] | [app, auth, main]
              phase         - | success
            last events: …
            """
        let line = ChaosRunner.failureLine(failure)
        #expect(line.hasPrefix("step 29 (line 29, expect) failed"), "\(line)")
        #expect(line.contains("✗ coordinators  [app, auth] | [app, auth, main]"), "\(line)")
        #expect(!line.contains("screen        signin"), "\(line)")
        #expect(!line.contains("\n"))
    }

    @Test func withoutMarkedRowsKeepsTheFirstLines() {
        let line = ChaosRunner.failureLine("the session did not open\nbroker ipc:///x/broker.ipc did not answer\nthird\nfourth")
        #expect(line == "the session did not open / broker ipc:///x/broker.ipc did not answer / third")
        #expect(ChaosRunner.failureLine(nil) == "no reason recorded")
    }
}
