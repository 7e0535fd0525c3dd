import Majordomo
import Testing
import ZeroMQ

@Suite("MDP codec")
struct CodecTests {
    static let commands: [MDPCommand] = [
        .clientRequest(service: Array("vm.signin".utf8), body: [Array("hello".utf8), []]),
        .clientReply(service: Array("vm.signin".utf8), body: [Array("ok".utf8)]),
        .ready(service: Array("echo".utf8)),
        .ready(service: Array("echo".utf8), credit: 2),
        .ready(service: Array("echo".utf8), credit: 1024),
        .request(client: [0x00, 0x80, 0x00, 0x41, 0xA7], body: [Array("x".utf8), [0xFF]]),
        .reply(client: [0x00, 0x80, 0x00, 0x41, 0xA7], body: [[]]),
        .heartbeat,
        .disconnect,
    ]

    @Test("round trip", arguments: commands)
    func roundTrip(_ command: MDPCommand) throws {
        let direction: MDPDirection = if case .clientReply = command { .fromBroker } else { .toBroker }
        let decoded = try MDPCommand.decode(command.frames, direction: direction)
        #expect(decoded == command)
        #expect(decoded.frames == command.frames)
    }

    @Test func wireFormatIsTheRFCs() {
        #expect(MDPCommand.ready(service: Array("echo".utf8)).frames == [[], Array("MDPW01".utf8), [0x01], Array("echo".utf8)])
        #expect(MDPCommand.heartbeat.frames == [[], Array("MDPW01".utf8), [0x04]])
        #expect(MDPCommand.disconnect.frames == [[], Array("MDPW01".utf8), [0x05]])
        #expect(MDPCommand.request(client: [7], body: [[1]]).frames == [[], Array("MDPW01".utf8), [0x02], [7], [], [1]])
        #expect(MDPCommand.reply(client: [7], body: [[1]]).frames == [[], Array("MDPW01".utf8), [0x03], [7], [], [1]])
        #expect(MDPCommand.clientRequest(service: Array("s".utf8), body: [[9]]).frames == [[], Array("MDPC01".utf8), Array("s".utf8), [9]])
    }

    @Test func creditIsAFifthReadyFrameOnlyAboveOne() throws {
        // Credit 1 is what 7/MDP already means: the READY stays exactly the RFC's four frames.
        #expect(MDPCommand.ready(service: Array("echo".utf8), credit: 1).frames.count == 4)
        #expect(MDPCommand.ready(service: Array("echo".utf8), credit: 64).frames
            == [[], Array("MDPW01".utf8), [0x01], Array("echo".utf8), Array("credit=64".utf8)])
        #expect(try MDPCommand.decode([[], Array("MDPW01".utf8), [0x01], Array("e".utf8), Array("credit=1".utf8)], direction: .toBroker)
            == .ready(service: Array("e".utf8), credit: 1))
    }

    @Test func emptyBodyIsSentAsOneEmptyFrame() throws {
        let frames = MDPCommand.clientRequest(service: Array("s".utf8), body: []).frames
        #expect(frames.count == 4)
        #expect(try MDPCommand.decode(frames, direction: .toBroker) == .clientRequest(service: Array("s".utf8), body: [[]]))
    }

    @Test func directionTellsClientRequestFromReply() throws {
        let frames = MDPCommand.clientRequest(service: Array("s".utf8), body: [[1]]).frames
        #expect(try MDPCommand.decode(frames, direction: .fromBroker) == .clientReply(service: Array("s".utf8), body: [[1]]))
    }

    @Test func routedMessageSplitsThePeer() throws {
        let routed = [Array("worker/1/1".utf8)] + MDPCommand.heartbeat.frames
        let (peer, command) = try MDPCommand.decode(routed: routed)
        #expect(peer == Array("worker/1/1".utf8))
        #expect(command == .heartbeat)
    }

    struct BadCase: Sendable, CustomTestStringConvertible {
        let name: String
        let frames: [Frame]
        let error: MDPDecodeError
        let kind: BadInputKind
        var testDescription: String { name }
    }

    static let W: Frame = Array("MDPW01".utf8)
    static let C: Frame = Array("MDPC01".utf8)

    static let badCases: [BadCase] = [
        BadCase(name: "no frames", frames: [], error: .empty, kind: .malformedFrames),
        BadCase(name: "frame 0 not empty", frames: [[1], W, [4]], error: .missingEmptyFrame, kind: .malformedFrames),
        BadCase(name: "only the empty frame", frames: [[]], error: .truncated(command: "MDP message", frames: 1, atLeast: 3), kind: .malformedFrames),
        BadCase(name: "wrong header", frames: [[], Array("MDPW02".utf8), [4]], error: .wrongHeader(Array("MDPW02".utf8)), kind: .wrongHeader),
        BadCase(name: "long wrong header is cut for the log", frames: [[], [UInt8](repeating: 0x41, count: 100), [4]],
                error: .wrongHeader([UInt8](repeating: 0x41, count: 16)), kind: .wrongHeader),
        BadCase(name: "worker header only", frames: [[], W], error: .truncated(command: "worker command", frames: 2, atLeast: 3), kind: .malformedFrames),
        BadCase(name: "unknown command byte", frames: [[], W, [0x09]], error: .unknownCommand([0x09]), kind: .unknownCommand),
        BadCase(name: "command frame of two bytes", frames: [[], W, [0x01, 0x01]], error: .unknownCommand([0x01, 0x01]), kind: .unknownCommand),
        BadCase(name: "empty command frame", frames: [[], W, []], error: .unknownCommand([]), kind: .unknownCommand),
        BadCase(name: "READY without service", frames: [[], W, [0x01]], error: .truncated(command: "READY", frames: 3, atLeast: 4), kind: .malformedFrames),
        BadCase(name: "READY with a fifth frame that is not a credit", frames: [[], W, [0x01], [0x61], [0x62]], error: .invalidCredit([0x62]), kind: .malformedFrames),
        BadCase(name: "READY with credit 0", frames: [[], W, [0x01], [0x61], Array("credit=0".utf8)], error: .invalidCredit(Array("credit=0".utf8)), kind: .malformedFrames),
        BadCase(name: "READY with credit over the limit", frames: [[], W, [0x01], [0x61], Array("credit=1025".utf8)], error: .invalidCredit(Array("credit=1025".utf8)), kind: .malformedFrames),
        BadCase(name: "READY with a leading zero in its credit", frames: [[], W, [0x01], [0x61], Array("credit=08".utf8)], error: .invalidCredit(Array("credit=08".utf8)), kind: .malformedFrames),
        BadCase(name: "READY with a signed credit", frames: [[], W, [0x01], [0x61], Array("credit=-4".utf8)], error: .invalidCredit(Array("credit=-4".utf8)), kind: .malformedFrames),
        BadCase(name: "READY with an empty credit", frames: [[], W, [0x01], [0x61], Array("credit=".utf8)], error: .invalidCredit(Array("credit=".utf8)), kind: .malformedFrames),
        BadCase(name: "READY with six frames", frames: [[], W, [0x01], [0x61], Array("credit=4".utf8), [0x62]], error: .extraFrames(command: "READY", frames: 6, expected: 4), kind: .malformedFrames),
        BadCase(name: "READY with empty service", frames: [[], W, [0x01], []], error: .emptyServiceName, kind: .malformedFrames),
        BadCase(name: "REQUEST truncated", frames: [[], W, [0x02], [7], []], error: .truncated(command: "REQUEST", frames: 5, atLeast: 6), kind: .malformedFrames),
        BadCase(name: "REPLY without delimiter", frames: [[], W, [0x03], [7], [1], [2]], error: .missingEnvelopeDelimiter, kind: .malformedFrames),
        BadCase(name: "REPLY with empty address", frames: [[], W, [0x03], [], [], [2]], error: .emptyClientAddress, kind: .malformedFrames),
        BadCase(name: "HEARTBEAT with extra frame", frames: [[], W, [0x04], []], error: .extraFrames(command: "HEARTBEAT", frames: 4, expected: 3), kind: .malformedFrames),
        BadCase(name: "HEARTBEAT with a held count that is no number", frames: [[], W, [0x04], Array("held=x".utf8)], error: .extraFrames(command: "HEARTBEAT", frames: 4, expected: 3), kind: .malformedFrames),
        BadCase(name: "HEARTBEAT with a held count with a leading zero", frames: [[], W, [0x04], Array("held=07".utf8)], error: .extraFrames(command: "HEARTBEAT", frames: 4, expected: 3), kind: .malformedFrames),
        BadCase(name: "DISCONNECT with extra frame", frames: [[], W, [0x05], [1]], error: .extraFrames(command: "DISCONNECT", frames: 4, expected: 3), kind: .malformedFrames),
        BadCase(name: "client request without body", frames: [[], C, Array("s".utf8)], error: .missingBody(command: "client REQUEST/REPLY"), kind: .malformedFrames),
        BadCase(name: "client request without service or body", frames: [[], C, []], error: .emptyServiceName, kind: .malformedFrames),
        BadCase(name: "client header only", frames: [[], C], error: .truncated(command: "client REQUEST/REPLY", frames: 2, atLeast: 4), kind: .malformedFrames),
        BadCase(name: "client request with empty service", frames: [[], C, [], [1]], error: .emptyServiceName, kind: .malformedFrames),
    ]

    @Test("typed decode errors", arguments: badCases)
    func decodeErrors(_ bad: BadCase) {
        #expect(throws: bad.error) { try MDPCommand.decode(bad.frames, direction: .toBroker) }
        #expect(bad.error.kind == bad.kind)
        #expect(!bad.error.description.isEmpty)
    }
}
