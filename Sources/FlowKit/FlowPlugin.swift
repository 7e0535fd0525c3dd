import Dispatch
import FlowbusEnvironment
import Foundation
import Logging
import Synchronization

/// A plugin's `@main` in one call: logging, the host's settings, SIGTERM/SIGINT for a graceful
/// stop, and an exit status. `body` serves until `stop()` returns true.
///
/// ```swift
/// exit(FlowPlugin.run("flowbus-auth") { bus, stop in
///     try CoordinatorRuntime(bus: bus, coordinator: AuthCoordinator.self).run(until: stop)
/// })
/// ```
public enum FlowPlugin {
    public static func run(_ executable: String, body: (PluginBus, @escaping @Sendable () -> Bool) throws -> Void) -> Int32 {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment[BusVariables.logLevel].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return handler
        }
        let environment: PluginEnvironment
        do {
            environment = try PluginEnvironment.fromProcess(executable: executable)
        } catch {
            FileHandle.standardError.write(Data("\(executable): \(error)\n".utf8))
            return 2
        }
        var logger = Logger(label: "flowbus.plugin.\(environment.plugin)")
        logger[metadataKey: "flowbus.plugin"] = "\(environment.plugin)"
        logger[metadataKey: "flowbus.replica"] = "\(environment.replica)"
        logger[metadataKey: "flowbus.incarnation"] = "\(environment.incarnation)"
        logger[metadataKey: "flowbus.pid"] = "\(getpid())"

        let stopping = Atomic<Bool>(false)
        // The bus, once made: the stop is announced to its serving loops, which then sleep
        // until there is something to do.
        let announced = Mutex<PluginBus?>(nil)
        let signalSources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                stopping.store(true, ordering: .relaxed)
                announced.withLock { $0 }?.announceStop()
            }
            source.resume()
            return source
        }
        // The host's fault orders (a skewed clock, a cut from the host): read now, and on SIGUSR2.
        ProcessFaultListener.apply(environment, signalled: false, logger: logger)
        signal(ProcessFaultOrder.signal, SIG_IGN)
        let faultSource = DispatchSource.makeSignalSource(signal: ProcessFaultOrder.signal, queue: .global())
        faultSource.setEventHandler { ProcessFaultListener.apply(environment, signalled: true, logger: logger) }
        faultSource.resume()
        defer { withExtendedLifetime((signalSources, faultSource)) {} }
        do {
            let bus = try PluginBus(environment: environment, logger: logger)
            bus.stopWillBeAnnounced()
            announced.withLock { $0 = bus }
            // A signal that came before the bus existed is announced now.
            if stopping.load(ordering: .relaxed) { bus.announceStop() }
            try body(bus) { stopping.load(ordering: .relaxed) }
            return 0
        } catch {
            logger.critical("\(executable) cannot run: \(error)")
            return 1
        }
    }
}
