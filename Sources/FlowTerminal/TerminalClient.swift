import FlowClient
import Foundation
import Logging
import Synchronization

/// Runs the full-screen client on the real terminal: keys to the controller, intents to the
/// bus, each change of the session drawn. The loop runs on a thread of its own (blocking reads
/// never sit on Swift's cooperative pool); replies come back through a locked inbox.
public final class TerminalClient: Sendable {
    let client: SessionClient
    let readOnly: Bool
    let welcome: String
    let logger: Logger
    private let inbox = Mutex<[Reply]>([])

    enum Reply: Sendable {
        case outcome(IntentOutcome)
        case failure(action: String, error: String)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `welcome`: a line the status area shows until the first thing happens (an app's note,
    /// e.g. its demo account).
    public init(client: SessionClient, readOnly: Bool, welcome: String = "", logger: Logger) {
        self.welcome = welcome
        self.client = client
        self.readOnly = readOnly
        self.logger = logger
    }

    /// Runs until the person quits or a stop signal arrives; the terminal is restored on return.
    public func run() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread { [self] in
                do {
                    try loop()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "flowbus-client"
            thread.start()
        }
    }

    private func loop() throws {
        let device = TerminalDevice()
        try device.start()
        defer { device.stop() }
        let controller = ClientController(view: client.view, readOnly: readOnly)
        if !welcome.isEmpty { controller.say(welcome) }
        var lastDrawn: Canvas?
        var frame = 0
        while !device.stopRequested {
            // Every key already typed (a paste, keys sent by tmux) before the next frame.
            var key = device.readKey(timeoutMilliseconds: 40)
            while let pressed = key {
                for command in controller.handle(pressed) {
                    switch command {
                    case .quit: return
                    case .send(let action, let fields): send(action, fields)
                    }
                }
                key = device.readKey(timeoutMilliseconds: 0)
            }
            for reply in inbox.withLock({ replies in defer { replies = [] }; return replies }) {
                switch reply {
                case .outcome(let outcome): controller.finished(outcome)
                case .failure(let action, let error): controller.failed(action, Failure(description: error))
                }
            }
            controller.update(client.view)
            for command in controller.takeDeferred() {
                if case .send(let action, let fields) = command { send(action, fields) }
            }
            if controller.busy { frame += 1 }
            let size = device.size
            let context = RenderContext(
                connected: client.isSynced, secondsSinceUpdate: Date().timeIntervalSince(controller.lastChange), frame: frame,
                events: controller.showLog ? client.events(last: 60).map(\.line) : [])
            let canvas = ScreenRenderer.render(controller, rows: size.rows, columns: size.columns, context: context)
            if canvas != lastDrawn {
                device.draw(canvas)
                lastDrawn = canvas
                // The fault seam for the crash test: the terminal must come back even then.
                if Self.crashAfterFirstFrame { fatalError("crash requested by FLOWBUS_CLIENT_CRASH_AFTER_FIRST_FRAME") }
            }
        }
    }

    /// Set to 1, the client crashes (a trap) right after drawing its first screen, so a test can
    /// check that the terminal is restored after a crash.
    static let crashAfterFirstFrame = ProcessInfo.processInfo.environment["FLOWBUS_CLIENT_CRASH_AFTER_FIRST_FRAME"] == "1"

    private func send(_ action: String, _ fields: [String: String]) {
        Task { [self] in
            do {
                let outcome = try await client.sendPressed(action: action, fields: fields)
                inbox.withLock { $0.append(.outcome(outcome)) }
            } catch {
                logger.warning("intent got no answer", metadata: ["flowbus.action": "\(action)", "flowbus.error": "\(error)"])
                inbox.withLock { $0.append(.failure(action: action, error: "\(error)")) }
            }
        }
    }
}
