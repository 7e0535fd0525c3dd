import CTerminal

/// The real terminal, through ncursesw (the CTerminal shim). One per process, used by one thread.
public final class TerminalDevice {
    private var started = false

    public init() {}

    /// Takes over the terminal; throws when standard input or output is not one.
    public func start() throws(TerminalError) {
        guard cterm_start() == 0 else { throw .notATerminal }
        started = true
    }

    /// Gives the terminal back (also done at exit and on a crash by the shim).
    public func stop() {
        guard started else { return }
        started = false
        cterm_stop()
    }

    deinit { stop() }

    public var size: (rows: Int, columns: Int) {
        var rows: Int32 = 0
        var columns: Int32 = 0
        cterm_size(&rows, &columns)
        return (Int(rows), Int(columns))
    }

    /// A stop signal (SIGTERM, SIGHUP, SIGINT) arrived, or the terminal went away.
    public var stopRequested: Bool { hungUp || cterm_stop_requested() != 0 }

    private var hungUp = false

    /// The next key, or nil after `timeoutMilliseconds` without one.
    public func readKey(timeoutMilliseconds: Int) -> Key? {
        var scalar: UInt32 = 0
        let kind = cterm_read_key(Int32(timeoutMilliseconds), &scalar)
        switch Int(kind) {
        case Int(CTERM_KEY_CHAR):
            switch scalar {
            case 9: return .tab
            case 27: return .escape
            case 1...26: return .control(Character(Unicode.Scalar(scalar + 96)!))
            default: return Unicode.Scalar(scalar).map { .character(Character($0)) }
            }
        case Int(CTERM_KEY_UP): return .up
        case Int(CTERM_KEY_DOWN): return .down
        case Int(CTERM_KEY_LEFT): return .left
        case Int(CTERM_KEY_RIGHT): return .right
        case Int(CTERM_KEY_BACKSPACE): return .backspace
        case Int(CTERM_KEY_DELETE): return .delete
        case Int(CTERM_KEY_ENTER): return .enter
        case Int(CTERM_KEY_BACKTAB): return .backTab
        case Int(CTERM_KEY_HOME): return .home
        case Int(CTERM_KEY_END): return .end
        case Int(CTERM_KEY_PAGE_UP): return .pageUp
        case Int(CTERM_KEY_PAGE_DOWN): return .pageDown
        case Int(CTERM_KEY_RESIZE): return .resize
        case Int(CTERM_KEY_F1): return .help
        case Int(CTERM_KEY_F2): return .toggleLog
        case Int(CTERM_KEY_HANGUP):
            hungUp = true
            return nil
        default: return nil
        }
    }

    /// Shows `canvas`; ncurses sends only the cells that changed, so redrawing is flicker-free.
    public func draw(_ canvas: Canvas) {
        cterm_begin_frame()
        var run: [UInt32] = []
        run.reserveCapacity(canvas.columns)
        for row in 0..<canvas.rows {
            var column = 0
            while column < canvas.columns {
                let role = canvas[row, column].role
                let start = column
                run.removeAll(keepingCapacity: true)
                while column < canvas.columns, canvas[row, column].role == role {
                    // A wide character's second cell is covered by the character itself.
                    if let scalar = canvas.shown(row: row, column: column) { run.append(scalar.value) }
                    column += 1
                }
                run.withUnsafeBufferPointer { cterm_put(Int32(row), Int32(start), $0.baseAddress, Int32($0.count), role.rawValue) }
            }
        }
        cterm_end_frame()
    }
}

public enum TerminalError: Error, Sendable, CustomStringConvertible {
    case notATerminal

    public var description: String {
        "standard input and output must be a terminal for the full-screen client; run it in a terminal (or tmux), or use --script FILE to play a script without one"
    }
}
