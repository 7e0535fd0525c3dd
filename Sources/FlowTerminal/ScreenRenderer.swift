import FlowClient
import FlowProtocol
import Foundation

/// What the chrome shows besides the session: connection and time.
public struct RenderContext: Sendable, Equatable {
    public var connected = true
    /// Seconds since the last change of the session.
    public var secondsSinceUpdate: Double = 0
    /// The spinner's frame (advances with time while loading).
    public var frame = 0
    /// The session's events, newest last, for the log pane.
    public var events: [String] = []

    public init(connected: Bool = true, secondsSinceUpdate: Double = 0, frame: Int = 0, events: [String] = []) {
        self.connected = connected
        self.secondsSinceUpdate = secondsSinceUpdate
        self.frame = frame
        self.events = events
    }
}

/// Draws the session as a person sees it: navigation bar, the top screen's body, tab bar, modal,
/// alert, help, log pane and status line. A pure function of the controller and the context.
public enum ScreenRenderer {
    static let spinner: [String] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    public static func render(_ controller: ClientController, rows: Int, columns: Int, context: RenderContext = .init()) -> Canvas {
        var canvas = Canvas(rows: rows, columns: columns)
        guard rows >= 8, columns >= 30 else {
            canvas.put("Too small:", row: 0, column: 0)
            canvas.put("at least 30×8", row: 1, column: 0)
            return canvas
        }
        let view = controller.view
        let bottom = rows - 1
        drawStatus(&canvas, controller, context, row: bottom)
        let tabRow = view.tabs.isEmpty ? bottom : bottom - 1
        if !view.tabs.isEmpty { drawTabs(&canvas, view, row: tabRow) }
        let noticeRow = tabRow - 1
        if !controller.notice.isEmpty { canvas.put(controller.notice.clipped(columns - 2), row: noticeRow, column: 1, role: .muted) }

        var body = Rect(row: 2, column: 1, height: max(1, noticeRow - 2), width: columns - 2)
        if controller.showLog {
            if columns >= 110 {
                let width = columns * 2 / 5
                drawLog(&canvas, context.events, Rect(row: 1, column: columns - width, height: noticeRow - 1, width: width))
                body.width = columns - width - 2
            } else {
                let height = min(9, max(4, body.height / 2))
                drawLog(&canvas, context.events, Rect(row: noticeRow - height, column: 0, height: height, width: columns))
                body.height -= height
            }
        }

        guard let navigation = view.navigation, let top = view.topScreen else {
            drawBar(&canvas, title: "Flowbus", back: false, busy: false, frame: context.frame, columns: body.width + 2)
            if let reason = view.closedReason {
                canvas.put("This session was closed (\(reason)).", row: body.row, column: body.column, role: .error)
                canvas.put("Press q to quit; `flowbus client` opens a new session.", row: body.row + 1, column: body.column, role: .muted)
            } else {
                canvas.put(view.record == nil && view.navigation == nil ? "Waiting for the session's first screen…" : "This session has no screen.",
                           row: body.row, column: body.column, role: .muted)
            }
            drawOverlays(&canvas, controller, rows: rows, columns: columns)
            return canvas
        }
        if navigation.hasModal, let base = view.selectedStack?.screens.last {
            // The screen under the modal, without focus; the modal's form takes the keys.
            let baseForm = ScreenForm.make(for: base, in: view)
            drawBar(&canvas, title: baseForm.title, back: false, busy: controller.busy, frame: context.frame, columns: body.width + 2)
            drawBody(&canvas, baseForm, controller, focus: nil, in: body)
            if let form = controller.form {
                let width = min(body.width - 4, max(40, form.title.count + 8))
                let height = min(body.height, measure(form, width: width - 4) + 3)
                let rect = Rect(row: body.row + max(0, (body.height - height) / 2), column: body.column + (body.width - width) / 2, height: height, width: width)
                canvas.box(row: rect.row, column: rect.column, height: rect.height, width: rect.width)
                canvas.put(" \(form.title) ", row: rect.row, column: rect.column + 2, role: .title)
                drawBody(&canvas, form, controller, focus: controller.focusedTarget,
                         in: Rect(row: rect.row + 1, column: rect.column + 2, height: rect.height - 2, width: rect.width - 4))
            }
        } else if let form = controller.form {
            drawBar(&canvas, title: form.title, back: controller.canGoBack, busy: controller.busy, frame: context.frame, columns: body.width + 2)
            drawBody(&canvas, form, controller, focus: controller.alert == nil ? controller.focusedTarget : nil, in: body)
        }
        _ = top
        drawOverlays(&canvas, controller, rows: rows, columns: columns)
        return canvas
    }

    struct Rect {
        var row: Int, column: Int, height: Int, width: Int
    }

    // MARK: Chrome

    static func drawBar(_ canvas: inout Canvas, title: String, back: Bool, busy: Bool, frame: Int, columns: Int) {
        canvas.fill(row: 0, column: 0, height: 1, width: columns, role: .bar)
        var column = 1
        if back { column = canvas.put("‹ Back", row: 0, column: 1, role: .bar) + 2 }
        canvas.put(title.clipped(columns - column - 14), row: 0, column: column, role: .bar)
        if busy { canvas.put("\(spinner[frame % spinner.count]) loading", row: 0, column: columns - 11, role: .bar) }
    }

    static func drawTabs(_ canvas: inout Canvas, _ view: SessionView, row: Int) {
        var column = 1
        for (index, tab) in view.tabs.enumerated() {
            let label = " \(index + 1) \(tab.capitalized) "
            column = canvas.put(label, row: row, column: column, role: tab == view.tab ? .focus : .muted) + 1
        }
    }

    static func drawStatus(_ canvas: inout Canvas, _ controller: ClientController, _ context: RenderContext, row: Int) {
        let columns = canvas.columns
        canvas.fill(row: row, column: 0, height: 1, width: columns, role: .bar)
        let link = context.connected ? "● connected" : "○ reconnecting"
        let age = context.secondsSinceUpdate < 1 ? "now" : String(format: "%.0fs ago", context.secondsSinceUpdate)
        let text = "\(link)" + (controller.readOnly ? " · observing (read-only)" : "")
            + " · session \(controller.view.session) · nav v\(controller.view.navigationVersion) · updated \(age)"
        // Letters go to a text field, so there the quit key is Ctrl-Q.
        let keys = controller.editing ? "F1:help F2:log ^Q:quit" : "?:help l:log q:quit"
        canvas.put(text.clipped(columns - keys.count - 3), row: row, column: 1, role: .bar)
        canvas.put(keys, row: row, column: columns - keys.count - 1, role: .bar)
    }

    static func drawLog(_ canvas: inout Canvas, _ events: [String], _ rect: Rect) {
        guard rect.height >= 3, rect.width >= 10 else { return }
        canvas.box(row: rect.row, column: rect.column, height: rect.height, width: rect.width, role: .muted)
        canvas.put(" event log ", row: rect.row, column: rect.column + 2, role: .title)
        let visible = events.suffix(rect.height - 2)
        for (offset, line) in visible.enumerated() {
            canvas.put(line.clipped(rect.width - 2), row: rect.row + 1 + offset, column: rect.column + 1)
        }
    }

    static func drawOverlays(_ canvas: inout Canvas, _ controller: ClientController, rows: Int, columns: Int) {
        if let alert = controller.alert {
            let width = min(columns - 4, 64)
            let message = wrap(alert.message, width: width - 4)
            let height = min(rows - 2, message.count + 5)
            let row = max(1, (rows - height) / 2)
            let column = (columns - width) / 2
            canvas.box(row: row, column: column, height: height, width: width, role: .error)
            canvas.put(" \(alert.title) ", row: row, column: column + 2, role: .error)
            for (offset, line) in message.prefix(height - 5).enumerated() {
                canvas.put(line, row: row + 2 + offset, column: column + 2, role: .error)
            }
            var at = column + 2
            for (index, button) in alert.buttons.enumerated() {
                at = canvas.put("[ \(button.label) ]", row: row + height - 2, column: at, role: index == controller.alertFocus ? .focus : .error) + 2
            }
        }
        if controller.showHelp { drawHelp(&canvas, rows: rows, columns: columns) }
    }

    /// The keys, one entry a line with the descriptions in a column where the frame is wide
    /// enough, else each entry's description under its keys; whatever does not fit says so.
    static func drawHelp(_ canvas: inout Canvas, rows: Int, columns: Int) {
        let entries = [
            ("Tab / Shift-Tab", "next / previous control"),
            ("↑ ↓", "move; in a list, its items"),
            ("← →", "carousel items, choices, buttons"),
            ("Enter", "act: press, select, next field"),
            ("Space", "choose an option; press a button"),
            ("Esc, Backspace", "back; in a text field Esc leaves it (Backspace edits it)"),
            ("1-4, [ ]", "tabs (in a text field: Esc first, or Alt-1…4)"),
            ("l or F2", "event log"),
            ("? or F1", "this help"),
            ("q, Ctrl-C", "quit"),
        ]
        let width = min(columns - 2, 56)
        let inner = width - 4
        guard inner >= 8, rows >= 5 else { return }
        let keyColumn = min(18, (entries.map(\.0.count).max() ?? 0) + 2)
        var lines: [String]
        if inner - keyColumn >= 12 {
            // Descriptions in a column, wrapped within it.
            lines = entries.flatMap { entry in
                wrap(entry.1, width: inner - keyColumn).enumerated().map { index, part in
                    (index == 0 ? entry.0 : "").padding(toLength: keyColumn, withPad: " ", startingAt: 0) + part
                }
            }
        } else {
            lines = entries.flatMap { [$0.0] + wrap("  " + $0.1, width: inner) }
        }
        // A blank line above and below the keys when there is room for them.
        let padding = rows - 2 >= lines.count + 4 ? 1 : 0
        let height = min(rows - 2, lines.count + 2 + 2 * padding)
        let room = height - 2 - 2 * padding
        if lines.count > room {
            let hidden = lines.count - room + 1
            lines = Array(lines.prefix(room - 1)) + ["+\(hidden) more: enlarge".clipped(inner)]
        }
        let row = max(1, (rows - height) / 2)
        let column = (columns - width) / 2
        canvas.box(row: row, column: column, height: height, width: width)
        canvas.put(" Keys ", row: row, column: column + 2, role: .title)
        for (offset, line) in lines.enumerated() { canvas.put(line, row: row + 1 + padding + offset, column: column + 2) }
    }

    // MARK: Body

    /// Lines a form takes at `width`.
    static func measure(_ form: ScreenForm, width: Int) -> Int {
        form.blocks.reduce(0) { $0 + height(of: $1, width: width) }
    }

    static func height(of block: FormBlock, width: Int) -> Int {
        switch block {
        case .text(let text, _): wrap(text, width: width).count
        case .blank, .field, .buttons: 1
        case .choices(_, _, let options, _): 1 + choiceRows(options, width: width).count
        case .carousel: 3
        case .list(_, _, let items, _, _): 1 + min(items.count, listRows)
        }
    }

    static let listRows = 6

    static func drawBody(_ canvas: inout Canvas, _ form: ScreenForm, _ controller: ClientController, focus: FocusTarget?, in rect: Rect) {
        // Scroll so the focused block is visible.
        let heights = form.blocks.map { height(of: $0, width: rect.width) }
        var top = 0
        if let focus {
            let start = heights.prefix(focus.block).reduce(0, +)
            let end = start + heights[focus.block]
            if end > rect.height { top = min(start, end - rect.height) }
        }
        var row = rect.row - top
        let disabled = controller.busy || controller.readOnly
        for (index, block) in form.blocks.enumerated() {
            let focused = focus?.block == index
            var scratch = Canvas(rows: heights[index], columns: rect.width)
            draw(block, into: &scratch, controller: controller, focused: focused, button: focus?.button ?? 0, disabled: disabled)
            for line in 0..<scratch.rows where row + line >= rect.row && row + line < rect.row + rect.height {
                for column in 0..<scratch.columns { canvas[row + line, rect.column + column] = scratch[line, column] }
            }
            row += heights[index]
        }
        if top > 0 { canvas.put("↑ more", row: rect.row, column: rect.column + rect.width - 6, role: .muted) }
        if row > rect.row + rect.height { canvas.put("↓ more", row: rect.row + rect.height - 1, column: rect.column + rect.width - 6, role: .muted) }
    }

    static func draw(_ block: FormBlock, into canvas: inout Canvas, controller: ClientController, focused: Bool, button: Int, disabled: Bool) {
        let width = canvas.columns
        switch block {
        case .blank: break
        case .text(let text, let role):
            for (offset, line) in wrap(text, width: width).enumerated() { canvas.put(line, row: offset, column: 0, role: role) }
        case .field(let field):
            let value = controller.value(field.name)
            let shown = field.masked ? String(repeating: "•", count: value.count) : value
            let column = canvas.put(field.label.padded(10) + " ", row: 0, column: 0, role: focused ? .title : .normal)
            let box = max(8, min(40, width - column - 2))
            let visible: String
            if focused {
                // The caret stays in view; what follows it fills the rest of the box.
                let caret = controller.caret(field.name)
                let head = (String(shown.prefix(caret)) + "▏").suffix(cells: box)
                visible = head + String(shown.dropFirst(caret)).prefix(cells: box - head.displayWidth)
            } else {
                visible = shown.clipped(box)
            }
            canvas.put("[" + visible.padded(box) + "]", row: 0, column: column, role: focused ? .focus : .normal)
        case .buttons(let buttons):
            var column = 0
            for (index, item) in buttons.enumerated() {
                let role: CellRole = focused && index == button ? .focus : (!item.enabled || disabled ? .disabled : .accent)
                column = canvas.put("[ \(item.label) ]", row: 0, column: column, role: role) + 2
            }
        case .choices(let name, let label, let options, let multiple):
            let chosen = Set(controller.value(name).split(separator: ",").map(String.init))
            canvas.put("\(label) (Space chooses, ← → move):", row: 0, column: 0, role: focused ? .title : .normal)
            let cursor = controller.cursor(name)
            for (line, indices) in choiceRows(options, width: width).enumerated() {
                var column = 2
                for index in indices {
                    let option = options[index]
                    let on = chosen.contains(option.id)
                    let mark = multiple ? (on ? "[x]" : "[ ]") : (on ? "(•)" : "( )")
                    let role: CellRole = focused && index == cursor ? .focus : on ? .selected : .normal
                    column = canvas.put("\(mark) \(option.label)", row: 1 + line, column: column, role: role) + 2
                }
            }
        case .carousel(let id, let title, let items, _, _):
            let cursor = min(controller.cursor(id), max(0, items.count - 1))
            canvas.put("\(title)  \(cursor + 1)/\(items.count)", row: 0, column: 0, role: focused ? .title : .normal)
            let cards = items.map { " \($0.title.clipped(22)) " }
            // Scroll the row of cards so the cursor's card is visible.
            var first = 0
            while first < cursor, cards[first...cursor].reduce(0, { $0 + $1.count + 1 }) + 2 > width { first += 1 }
            var column = first > 0 ? canvas.put("‹ ", row: 1, column: 0, role: .muted) : 0
            for index in first..<cards.count {
                guard column + cards[index].count <= width - 2 else {
                    canvas.put(" ›", row: 1, column: width - 2, role: .muted)
                    break
                }
                let role: CellRole = index == cursor ? (focused ? .focus : .selected) : .normal
                column = canvas.put(cards[index], row: 1, column: column, role: role) + 1
            }
            if focused, cursor < items.count, !items[cursor].subtitle.isEmpty {
                canvas.put(items[cursor].subtitle.clipped(width - 2), row: 2, column: 2, role: .muted)
            }
        case .list(let id, let title, let items, let action, _):
            let selectable = !action.isEmpty
            canvas.put(title, row: 0, column: 0, role: focused ? .title : .normal)
            let cursor = min(controller.cursor(id), max(0, items.count - 1))
            let first = max(0, min(cursor - listRows / 2, items.count - listRows))
            let columns = listColumns(items, width: width - 4)
            for (line, index) in (first..<min(items.count, first + listRows)).enumerated() {
                let role: CellRole = selectable && focused && index == cursor ? .focus : .normal
                canvas.put((selectable ? "› " : "  ") + listRow(items[index], columns, width: width - 4), row: 1 + line, column: 2, role: role)
            }
        }
    }

    /// Column widths of a list's rows: the title's, and the subtitle's when entries carry a
    /// detail (a value at the end of the row, such as an amount), so rows line up as a table.
    static func listColumns(_ items: [Flowbus_V1_Item], width: Int) -> (title: Int, subtitle: Int) {
        guard items.contains(where: { !$0.detail.isEmpty }) else { return (0, 0) }
        let detail = items.map(\.detail.count).max() ?? 0
        let subtitle = min(items.map(\.subtitle.count).max() ?? 0, max(0, (width - detail) / 3))
        let title = min(items.map(\.title.count).max() ?? 0, max(4, width - detail - subtitle - 4))
        return (title, subtitle)
    }

    static func listRow(_ item: Flowbus_V1_Item, _ columns: (title: Int, subtitle: Int), width: Int) -> String {
        guard columns.title > 0 else {
            return (item.title + (item.subtitle.isEmpty ? "" : " — \(item.subtitle)")).clipped(width)
        }
        var row = item.title.padded(columns.title)
        if columns.subtitle > 0 { row += "  " + item.subtitle.padded(columns.subtitle) }
        let gap = max(2, width - row.count - item.detail.count)
        return (row + String(repeating: " ", count: gap) + item.detail).clipped(width)
    }

    /// Choice indices per line, flowed to `width`.
    static func choiceRows(_ options: [Flowbus_V1_Option], width: Int) -> [[Int]] {
        var rows: [[Int]] = [[]]
        var used = 2
        for (index, option) in options.enumerated() {
            let cell = option.label.count + 6
            if used + cell > width, !rows[rows.count - 1].isEmpty {
                rows.append([])
                used = 2
            }
            rows[rows.count - 1].append(index)
            used += cell
        }
        return rows.filter { !$0.isEmpty }
    }

    /// Word-wraps `text` to `width` cells; honours newlines.
    static func wrap(_ text: String, width: Int) -> [String] {
        guard width > 0 else { return [] }
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            // A paragraph's leading spaces indent each of its lines (a hint under a field).
            let indent = String(paragraph.prefix { $0 == " " }.prefix(max(0, width - 8)))
            let room = width - indent.count
            var line = ""
            var wrapped: [String] = []
            for word in paragraph.split(separator: " ") {
                var word = String(word)
                while word.displayWidth > room {
                    if !line.isEmpty { wrapped.append(line); line = "" }
                    // At least one character a line, so a character wider than the room still moves on.
                    var head = word.prefix(cells: room)
                    if head.isEmpty { head = String(word.prefix(1)) }
                    wrapped.append(head)
                    word = String(word.dropFirst(head.count))
                }
                if line.isEmpty { line = word } else if line.displayWidth + 1 + word.displayWidth <= room { line += " " + word } else {
                    wrapped.append(line)
                    line = word
                }
            }
            wrapped.append(line)
            lines += wrapped.map { $0.isEmpty ? $0 : indent + $0 }
        }
        return lines
    }
}
