import FlowClient
import Foundation

/// The terminal client without a terminal: `keys` steps go through the same controller as real
/// keys, and `see` steps look at the same rendering, on a virtual screen of a fixed size.
public final class ScriptedTerminal: JourneyTerminal {
    public let rows: Int
    public let columns: Int
    private var controller: ClientController?
    private var session = ""

    public init(rows: Int = 24, columns: Int = 80) {
        self.rows = rows
        self.columns = columns
    }

    /// The screen as of the last key or look.
    public private(set) var screen = Canvas(rows: 0, columns: 0)

    func controller(for journey: Journey) throws -> (ClientController, SessionClient) {
        let client = try journey.requireClient()
        if let controller, session == client.session, controller.readOnly == journey.observing {
            controller.update(client.view)
            return (controller, client)
        }
        let fresh = ClientController(view: client.view, readOnly: journey.observing)
        controller = fresh
        session = client.session
        return (fresh, client)
    }

    public func press(_ keys: String, journey: Journey, timeout: Duration) async throws {
        let parsed = try Key.parse(keys)
        let (controller, client) = try controller(for: journey)
        for key in parsed {
            controller.update(client.view)
            // As a person waits for the spinner: a key waits while the screen loads or an action is in flight.
            if controller.busy {
                do {
                    try await client.waitUntilInTask(timeout: timeout, "the screen to finish loading before \(key)") { view in
                        controller.update(view)
                        return !controller.busy
                    }
                } catch {
                    throw JourneyFailure("the screen was still loading after \(timeout), so \(key) could not be pressed; the screen was:\n\(framed(render(controller, client)))")
                }
            }
            for command in controller.handle(key) + controller.takeDeferred() {
                switch command {
                case .quit: return
                case .send(let action, let fields):
                    // A script waits for each reply, so the next key sees its outcome.
                    do {
                        controller.finished(try await client.sendPressed(action: action, fields: fields))
                    } catch {
                        controller.failed(action, error)
                    }
                }
            }
        }
        screen = render(controller, client)
    }

    public func see(_ text: String, absent: Bool, journey: Journey, timeout: Duration) async throws {
        let (controller, client) = try controller(for: journey)
        do {
            try await client.waitUntilInTask(timeout: timeout, absent ? "the screen to stop showing \"\(text)\"" : "the screen to show \"\(text)\"") { view in
                controller.update(view)
                screen = render(controller, client)
                return screen.text.contains(text) != absent
            }
        } catch {
            screen = render(controller, client)
            throw JourneyFailure("\(absent ? "still saw" : "did not see") \"\(text)\" within \(timeout); the screen (\(columns)×\(rows)) was:\n\(framed(screen))")
        }
    }

    func render(_ controller: ClientController, _ client: SessionClient) -> Canvas {
        let events = controller.showLog ? client.events(last: 40).map(\.line) : []
        return ScreenRenderer.render(controller, rows: rows, columns: columns, context: RenderContext(events: events))
    }

    /// The screen between rules, so blank lines and edges show.
    public func framed(_ canvas: Canvas) -> String {
        let rule = "+" + String(repeating: "-", count: canvas.columns) + "+"
        return ([rule] + canvas.lines.map { "|" + $0.padded(canvas.columns) + "|" } + [rule]).joined(separator: "\n")
    }
}
