import Clone
import Dispatch
import FlowProtocol
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// The plugin's whole life: read settings, join the bus, serve until SIGTERM, leave cleanly.
/// Outside main.swift on purpose: top-level code there is main-actor isolated, and the
/// signal handlers run on a dispatch queue.
enum EchoPlugin {
    static func run() -> Int32 {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }

        let settings: PluginSettings
        do {
            settings = try PluginSettings.fromEnvironment()
        } catch {
            FileHandle.standardError.write(Data("flowbus-echo: \(error)\n".utf8))
            return 2
        }

        var logger = Logger(label: "flowbus.plugin.echo")
        logger[metadataKey: "flowbus.plugin"] = "\(settings.plugin)"
        logger[metadataKey: "flowbus.replica"] = "\(settings.replica)"
        logger[metadataKey: "flowbus.pid"] = "\(getpid())"

        let stopping = Atomic<Bool>(false)
        // The host's fault orders come with SIGUSR2 (FlowKit's plugins take them in); this plugin,
        // built on the bus libraries alone, does not, and must not die of one.
        signal(SIGUSR2, SIG_IGN)
        let signalSources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stopping.store(true, ordering: .relaxed) }
            source.resume()
            return source
        }

        do {
            let context = try ZMQContext()
            var agentConfiguration = CloneAgentConfiguration(subtrees: ["/demo/echo/"])
            agentConfiguration.curve = settings.curve
            let agent = try CloneAgent(context: context, endpoints: settings.clone, configuration: agentConfiguration, logger: logger)
            let statusKey = "/demo/echo/\(settings.replica)"
            let writer = "\(settings.plugin)/\(getpid())"
            func publish(_ text: String) {
                var echo = Flowbus_V1_Echo()
                echo.text = text
                guard let envelope = try? Envelope.wrapping(echo, writer: writer, incarnation: settings.incarnation),
                      let bytes = try? envelope.encoded() else { return }
                _ = try? agent.set(key: statusKey, value: bytes)
            }
            publish("ready: pid \(getpid()), incarnation \(settings.incarnation)")

            var workerConfiguration = WorkerConfiguration()
            workerConfiguration.heartbeatInterval = settings.heartbeat
            workerConfiguration.routingID = "\(settings.plugin)/\(getpid())/1"
            workerConfiguration.credit = settings.credit
            if let curve = settings.curve {
                workerConfiguration.curveServerKey = curve.serverKey
                workerConfiguration.curveKeyPair = curve.keyPair
            }
            let worker = try MajordomoWorkerLanes(
                context: context, endpoint: settings.broker, service: "flowbus.echo", count: settings.lanes,
                configuration: workerConfiguration, logger: logger)
            logger.info("serving flowbus.echo", metadata: ["flowbus.broker": "\(settings.broker)", "flowbus.lanes": "\(settings.lanes)", "flowbus.credit": "\(settings.credit)"])

            let service = EchoService(writer: writer)
            var served = 0
            var lastPublished = ContinuousClock.now
            try worker.run(until: { stopping.load(ordering: .relaxed) }) { request in
                served += 1
                // Status at most once a second: the Clone key says the plugin is alive, not each request.
                if ContinuousClock.now - lastPublished > .seconds(1) {
                    lastPublished = .now
                    publish("served \(served) requests: pid \(getpid()), incarnation \(settings.incarnation)")
                }
                return service.reply(to: request)
            }
            _ = try? agent.delete(key: statusKey)
            agent.stop()
            logger.info("stopped", metadata: ["flowbus.served": "\(served)"])
        } catch {
            logger.critical("flowbus-echo cannot run: \(error)")
            return 1
        }
        withExtendedLifetime(signalSources) {}
        return 0
    }
}
