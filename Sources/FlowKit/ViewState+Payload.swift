import FlowProtocol
import Foundation

extension Flowbus_V1_ViewState {
    /// The wire form of `state` with the payload shown (kept in `error` too).
    init(state: ViewModelState, shown: ScreenPayload?) {
        self.init()
        phase = state.phase
        if case .error(let message) = state { self.message = message }
        if let shown, state != .none {
            payload = shown.bytes
            payloadKind = shown.kind
            if let notice = shown.notice {
                self.notice = notice.code
                if case .success = state { message = notice.text }
            }
        }
    }

    /// The payload and notice this state shows, nil when it shows none.
    public var shownPayload: ScreenPayload? {
        guard !payload.isEmpty || !payloadKind.isEmpty || !notice.isEmpty else { return nil }
        let text = phase == .success ? message : ""
        return ScreenPayload(kind: payloadKind, bytes: payload, notice: notice.isEmpty ? nil : Notice(notice, text))
    }

    /// The state as a view model or coordinator sees it.
    public var viewModelState: ViewModelState {
        switch phase {
        case .success: .success(shownPayload ?? ScreenPayload())
        case .error: .error(message)
        case .loading: .loading
        case .none, .UNRECOGNIZED: .none
        }
    }
}
