import Majordomo
import Testing
import ZeroMQ

@Suite("Broker over CURVE")
struct CurveTests {
    @Test func allowedKeysAreServedAndOthersAreNot() async throws {
        let server = try CurveKeyPair.generate()
        let allowed = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let context = try ZMQContext()
        let authenticator = ZAPAuthenticator(context: context, allowedClientKeys: [allowed.publicKey])
        try authenticator.start()
        defer { authenticator.stop() }
        var configuration = fastBrokerConfiguration()
        configuration.curveSecretKey = server.secretKey
        configuration.zapDomain = "flowbus"
        let broker = try MajordomoBroker.start(context: context, configuration: configuration, endpoints: ["tcp://127.0.0.1:*"], logger: quietLogger)
        defer { broker.stop() }
        let endpoint = broker.endpoints[0]

        var workerConfiguration = fastWorkerConfiguration(routingID: "secure/1/1")
        workerConfiguration.curveServerKey = server.publicKey
        workerConfiguration.curveKeyPair = allowed
        let worker = WorkerRunner(context: context, endpoint: endpoint, service: "secure", configuration: workerConfiguration)
        defer { worker.stop() }
        #expect(try await eventually { broker.statistics.workersPerService["secure"] == 1 })

        let reply = try await onThread {
            try MajordomoClient(
                context: context, endpoint: endpoint,
                configuration: ClientConfiguration(timeout: .seconds(2), tries: 1, curveServerKey: server.publicKey, curveKeyPair: allowed),
                logger: quietLogger
            ).request(service: "secure", body: frames("sealed"))
        }
        #expect(reply == frames("sealed"))

        await #expect(throws: MajordomoClientError.self) {
            try await onThread {
                try MajordomoClient(
                    context: context, endpoint: endpoint,
                    configuration: ClientConfiguration(timeout: .milliseconds(300), tries: 1, curveServerKey: server.publicKey, curveKeyPair: stranger),
                    logger: quietLogger
                ).request(service: "secure", body: frames("let me in"))
            }
        }
        #expect(authenticator.decisions.denied >= 1)
        #expect(broker.statistics.requests == 1)
    }
}
