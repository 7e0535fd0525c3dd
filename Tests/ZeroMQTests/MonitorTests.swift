import Testing
@testable import ZeroMQ

@Suite struct MonitorTests {
    let context = try! ZMQContext()

    @Test func monitorSeesListeningAndAccepted() throws {
        let endpoint = ipcEndpoint()
        let server = try ZMQSocket(context: context, type: .router)
        let monitor = try SocketMonitor(server, events: [.listening, .accepted])
        try server.bind(endpoint)
        let listening = try #require(try monitor.nextEvent(timeout: .seconds(5)))
        #expect(listening.event == .listening)
        #expect(listening.endpoint == endpoint)

        let client = try ZMQSocket(context: context, type: .dealer)
        try client.connect(endpoint)
        let accepted = try #require(try monitor.nextEvent(timeout: .seconds(5)))
        #expect(accepted.event == .accepted)
        #expect(accepted.description.contains("accepted"))
    }
}
