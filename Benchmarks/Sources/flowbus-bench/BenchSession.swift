import FlowClient
import Foundation
import Logging

extension AppHost {
    /// Opens a session on the app for a benchmark client and waits until it shows SignIn. The
    /// event log is kept short: only a failure's diff reads it, and trimming a long one costs the client.
    static func openSession(_ endpoints: BusEndpoints, name: String, timeout: Duration, logger: Logger) async throws(BenchError) -> SessionClient {
        var options = SessionClientOptions()
        options.name = name
        options.maxEvents = 200
        let client: SessionClient
        do {
            client = try await SessionClient.open(endpoints, options: options, logger: logger)
        } catch {
            throw BenchError("cannot open a session on the app: \(error)")
        }
        do {
            try await client.expect(Expectation(screen: "signin"), timeout: timeout)
        } catch {
            client.stop()
            throw BenchError("the new session never showed SignIn: \(error)")
        }
        return client
    }
}
