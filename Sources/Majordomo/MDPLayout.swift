#if canImport(Glibc)
import Glibc
#endif
import ZeroMQ

/// Where the parts of one MDP message sit, found without copying a frame.
/// The broker reads messages through this on its hot path; `MDPCommand.decode` builds on it.
struct MDPLayout: Equatable {
    enum Kind: Equatable {
        case client
        case worker(MDP.WorkerCommand)
    }

    var kind: Kind
    /// Index of the service name (client messages, READY) or client address (REQUEST, REPLY); -1 otherwise.
    var subject: Int
    /// Index of the first body frame (client messages, REQUEST, REPLY); the message's count otherwise.
    var bodyStart: Int
    /// READY only: how many requests the worker takes at once (its credit frame, else 1).
    var credit = 1
    /// HEARTBEAT only: how many requests the worker holds, when its `held=N` frame says.
    var held: Int?

    /// Reads `frames[start...]` as one MDP command (`start` is 1 behind a ROUTER's identity frame):
    /// a message's frames, or its parts where libzmq holds them (`ReceivedParts`).
    static func parse<Frames: RandomAccessCollection>(
        _ frames: Frames, from start: Int
    ) throws(MDPDecodeError) -> MDPLayout where Frames.Index == Int, Frames.Element: RandomAccessCollection<UInt8> {
        let count = frames.count - start
        guard count > 0 else { throw .empty }
        guard frames[start].isEmpty else { throw .missingEmptyFrame }
        guard count >= 2 else { throw .truncated(command: "MDP message", frames: count, atLeast: 3) }
        let header = frames[start + 1]
        if Self.bytes(header, startWith: MDP.clientHeader, wholly: true) {
            guard count >= 3 else { throw .truncated(command: "client REQUEST/REPLY", frames: count, atLeast: 4) }
            guard !frames[start + 2].isEmpty else { throw .emptyServiceName }
            guard count >= 4 else { throw .missingBody(command: "client REQUEST/REPLY") }
            return MDPLayout(kind: .client, subject: start + 2, bodyStart: start + 3)
        }
        guard Self.bytes(header, startWith: MDP.workerHeader, wholly: true) else { throw .wrongHeader(Array(header.prefix(16))) }
        guard count >= 3 else { throw .truncated(command: "worker command", frames: count, atLeast: 3) }
        let commandFrame = frames[start + 2]
        guard commandFrame.count == 1, let byte = commandFrame.first, let command = MDP.WorkerCommand(rawValue: byte) else {
            throw .unknownCommand(Array(commandFrame.prefix(8)))
        }
        switch command {
        case .ready:
            guard count >= 4 else { throw .truncated(command: "READY", frames: count, atLeast: 4) }
            guard count <= 5 else { throw .extraFrames(command: "READY", frames: count, expected: 4) }
            guard !frames[start + 3].isEmpty else { throw .emptyServiceName }
            var credit = 1
            if count == 5 {
                guard let offered = MDP.parseCredit(frames[start + 4]) else { throw .invalidCredit(Array(frames[start + 4].prefix(16))) }
                credit = offered
            }
            return MDPLayout(kind: .worker(.ready), subject: start + 3, bodyStart: frames.count, credit: credit)
        case .request, .reply:
            guard count >= 6 else { throw .truncated(command: command.name, frames: count, atLeast: 6) }
            guard !frames[start + 3].isEmpty else { throw .emptyClientAddress }
            guard frames[start + 4].isEmpty else { throw .missingEnvelopeDelimiter }
            return MDPLayout(kind: .worker(command), subject: start + 3, bodyStart: start + 5)
        case .heartbeat where count == 4:
            guard let held = MDP.parseHeld(frames[start + 3]) else { throw .extraFrames(command: command.name, frames: count, expected: 3) }
            var layout = MDPLayout(kind: .worker(command), subject: -1, bodyStart: frames.count)
            layout.held = held
            return layout
        case .heartbeat, .disconnect:
            guard count == 3 else { throw .extraFrames(command: command.name, frames: count, expected: 3) }
            return MDPLayout(kind: .worker(command), subject: -1, bodyStart: frames.count)
        }
    }
}

extension MDPLayout {
    /// Whether `frame` starts with `prefix` (is it, when `wholly`): one `memcmp` for a message's
    /// frames or parts, where the generic comparison costs some hundred instructions a frame.
    @inline(__always)
    static func bytes<Bytes: RandomAccessCollection<UInt8>>(_ frame: Bytes, startWith prefix: Frame, wholly: Bool = false) -> Bool {
        guard wholly ? frame.count == prefix.count : frame.count >= prefix.count else { return false }
        guard !prefix.isEmpty else { return true }
        return frame.withContiguousStorageIfAvailable { bytes in
            prefix.withUnsafeBufferPointer { memcmp(bytes.baseAddress!, $0.baseAddress!, $0.count) == 0 }
        } ?? frame.starts(with: prefix)
    }
}

extension MDPCommand {
    /// Decodes one MDP command from its frames (no identity frame in front).
    public static func decode(_ frames: [Frame], direction: MDPDirection) throws(MDPDecodeError) -> MDPCommand {
        let layout = try MDPLayout.parse(frames, from: 0)
        let body = layout.bodyStart < frames.count ? Array(frames[layout.bodyStart...]) : []
        switch layout.kind {
        case .client:
            let service = frames[layout.subject]
            return direction == .toBroker ? .clientRequest(service: service, body: body) : .clientReply(service: service, body: body)
        case .worker(.ready): return .ready(service: frames[layout.subject], credit: layout.credit)
        case .worker(.request): return .request(client: frames[layout.subject], body: body)
        case .worker(.reply): return .reply(client: frames[layout.subject], body: body)
        case .worker(.heartbeat): return .heartbeat
        case .worker(.disconnect): return .disconnect
        }
    }

    /// Decodes a message as a ROUTER delivers it: the peer identity, then the command.
    public static func decode(routed frames: [Frame]) throws(MDPDecodeError) -> (peer: Frame, command: MDPCommand) {
        guard let peer = frames.first else { throw .empty }
        return (peer, try decode(Array(frames.dropFirst()), direction: .toBroker))
    }
}
