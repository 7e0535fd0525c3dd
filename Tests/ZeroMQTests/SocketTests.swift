import Foundation
import Testing
@testable import ZeroMQ

@Suite struct SocketTests {
    let context = try! ZMQContext()

    /// A socket of type `bound` bound to a fresh endpoint, and one of type `connected` connected to it.
    func pair(_ bound: SocketType, _ connected: SocketType) throws -> (bound: ZMQSocket, connected: ZMQSocket) {
        let endpoint = ipcEndpoint()
        let first = try ZMQSocket(context: context, type: bound)
        try first.bind(endpoint)
        let second = try ZMQSocket(context: context, type: connected)
        try second.connect(endpoint)
        return (first, second)
    }

    @Test func multipartRoundTripThroughReqRep() throws {
        let (server, client) = try pair(.rep, .req)

        try client.send([Array("hello".utf8), [], [0, 1, 2, 255]])
        let request = try #require(try server.receiveMessage())
        #expect(request == [Array("hello".utf8), [], [0, 1, 2, 255]])

        try server.send([Array("world".utf8)])
        #expect(try client.receiveMessage() == [Array("world".utf8)])
    }

    @Test func receiveWithoutWaitingReturnsNilWhenNothingIsQueued() throws {
        let socket = try ZMQSocket(context: context, type: .pull)
        try socket.bind(ipcEndpoint())
        #expect(try socket.receiveMessage(dontWait: true) == nil)
        #expect(try socket.receiveFrame(dontWait: true) == nil)
    }

    @Test func receiveTimeoutReturnsNil() throws {
        let socket = try ZMQSocket(context: context, type: .pull)
        try socket.bind(ipcEndpoint())
        try socket.setReceiveTimeout(.milliseconds(20))
        #expect(try socket.receiveMessage() == nil)
    }

    @Test func routerMandatoryReportsAnUnknownPeer() throws {
        let router = try ZMQSocket(context: context, type: .router)
        try router.setRouterMandatory(true)
        try router.bind(ipcEndpoint())
        #expect {
            try router.send([Array("nobody".utf8), Array("hi".utf8)])
        } throws: { error in
            (error as? ZMQError)?.code == .hostUnreachable
        }
    }

    @Test func routerAddressesADealerByItsRoutingID() throws {
        let endpoint = ipcEndpoint()
        let router = try ZMQSocket(context: context, type: .router)
        try router.bind(endpoint)
        let dealer = try ZMQSocket(context: context, type: .dealer)
        try dealer.setRoutingID(Array("worker/42/1".utf8))
        try dealer.connect(endpoint)
        #expect(try dealer.routingID() == Array("worker/42/1".utf8))

        try dealer.send([Array("ping".utf8)])
        let received = try #require(try router.receiveMessage())
        #expect(received == [Array("worker/42/1".utf8), Array("ping".utf8)])
        try router.send(prefix: [received[0]], [Array("pong".utf8)])
        #expect(try dealer.receiveMessage() == [Array("pong".utf8)])
    }

    @Test func subscriberGetsOnlyItsPrefix() throws {
        let endpoint = ipcEndpoint()
        let publisher = try ZMQSocket(context: context, type: .pub)
        try publisher.bind(endpoint)
        let subscriber = try ZMQSocket(context: context, type: .sub)
        try subscriber.subscribe("/s/abc/")
        try subscriber.connect(endpoint)
        try subscriber.setReceiveTimeout(.milliseconds(50))

        // Publish until the subscription has reached the publisher (the slow-joiner window).
        var first: [Frame]?
        for _ in 0..<100 where first == nil {
            try publisher.send([Array("/s/abcd/x".utf8), Array("other".utf8)])
            try publisher.send([Array("/s/abc/x".utf8), Array("mine".utf8)])
            first = try subscriber.receiveMessage()
        }
        #expect(first == [Array("/s/abc/x".utf8), Array("mine".utf8)])
        // Nothing of the longer session id ever arrives.
        while let next = try subscriber.receiveMessage() {
            #expect(next[0] == Array("/s/abc/x".utf8))
        }
    }

    @Test func boundedReceiveFlagsAndDrainsAnOversizeMessage() throws {
        let (pull, push) = try pair(.pull, .push)
        try push.send([[UInt8](repeating: 7, count: 600), [UInt8](repeating: 8, count: 600)])
        try push.send([Array("next".utf8)])

        let big = try #require(try pull.receiveMessage(maxFrames: 8, maxBytes: 1000))
        #expect(big.truncated)
        #expect(big.totalBytes == 1200)
        #expect(big.frames.count == 1)
        let next = try #require(try pull.receiveMessage(maxFrames: 8, maxBytes: 1000))
        #expect(!next.truncated)
        #expect(next.frames == [Array("next".utf8)])
    }

    /// `receiveParts` hands the reader each part's bytes where libzmq holds them, with the limits
    /// of `receiveMessage(maxFrames:maxBytes:)`, and leaves the socket in step after an oversize one.
    @Test func partsAreReadInPlaceWithinTheirLimits() throws {
        let (pull, push) = try pair(.pull, .push)
        #expect(try pull.receiveParts(dontWait: true, maxParts: 5, maxBytes: 100, { $0.count }) == nil)

        try push.send([Array("/k".utf8), [], [1, 2, 3]])
        try push.send([[UInt8](repeating: 7, count: 600), [UInt8](repeating: 8, count: 600)])
        try push.send([[1], [2], [3], [4]])
        try push.send([Array("next".utf8)])

        let first = try #require(try pull.receiveParts(maxParts: 5, maxBytes: 1000) { parts in
            (parts.count, parts.truncated, parts.totalBytes, Array(parts[0]), parts[1].isEmpty, Array(parts[2]), parts.frames)
        })
        #expect(first.0 == 3 && !first.1 && first.2 == 5)
        #expect(first.3 == Array("/k".utf8) && first.4 && first.5 == [1, 2, 3])
        #expect(first.6 == [Array("/k".utf8), [], [1, 2, 3]])

        let big = try #require(try pull.receiveParts(maxParts: 5, maxBytes: 1000) { ($0.count, $0.truncated, $0.totalBytes) })
        #expect(big.0 == 1 && big.1 && big.2 == 1200)

        let many = try #require(try pull.receiveParts(maxParts: 2, maxBytes: 1000) { ($0.count, $0.truncated, $0.frames) })
        #expect(many.0 == 2 && many.1 && many.2 == [[1], [2]])

        let next = try #require(try pull.receiveParts(maxParts: 5, maxBytes: 1000) { ($0.truncated, $0.frames) })
        #expect(!next.0 && next.1 == [Array("next".utf8)])
    }

    /// The slots `receiveParts` reads into stay initialized from one message to the next: each part
    /// reads as what was sent, whatever its slot held before (a larger part, one let go at once for
    /// its size, an empty one, one forwarded to another socket, the spare of a truncated message),
    /// and asking for more parts than before makes new slots.
    @Test func partsReadCorrectlyWhateverTheirSlotsHeldBefore() throws {
        let (pull, push) = try pair(.pull, .push)
        let (sink, source) = try pair(.pull, .push)
        let huge = [UInt8](repeating: 9, count: ZMQSocket.partKeptBytes + 1)
        let messages: [[[UInt8]]] = [
            [[UInt8](repeating: 1, count: 300), Array("/key".utf8), [2]],
            [[], [3, 4], []],
            [huge, [5]],
            [[6], [UInt8](repeating: 7, count: 40), [8]],
            [[1], [2], [3], [4], [5], [6], [7]],
            [Array("after".utf8)],
        ]
        for _ in 0..<3 {
            for message in messages { try push.send(message) }
            for (index, message) in messages.enumerated() {
                let maxParts = index == 4 ? 3 : 2 + index % 2
                let read = try #require(try pull.receiveParts(maxParts: maxParts, maxBytes: 200_000) { ($0.truncated, $0.frames) })
                #expect(read.0 == (message.count > maxParts))
                #expect(read.1 == Array(message.prefix(maxParts)), "message \(index)")
            }
            // A part handed on leaves its slot empty, and the next message still reads whole.
            try push.send([Array("moved".utf8), [UInt8](repeating: 4, count: 100)])
            try push.send([Array("kept".utf8)])
            let forwarded = try #require(try pull.receiveParts(maxParts: 2, maxBytes: 1000) { parts in
                _ = try? source.forward(parts, part: 1)
                return parts.frames
            })
            #expect(forwarded == [Array("moved".utf8), []])
            #expect(try sink.receiveMessage() == [[UInt8](repeating: 4, count: 100)])
            #expect(try pull.receiveParts(maxParts: 8, maxBytes: 1000) { $0.frames } == [Array("kept".utf8)])
        }
    }

    @Test func bindingAnUnsupportedTransportThrowsATypedError() throws {
        let socket = try ZMQSocket(context: context, type: .rep)
        do {
            try socket.bind("bogus://nowhere")
            Issue.record("bind should have failed")
        } catch {
            #expect(error.code == .protocolNotSupported)
            #expect(error.description.contains("zmq_bind(bogus://nowhere)"))
            #expect(!error.message.isEmpty)
        }
    }

    @Test func lastEndpointResolvesAWildcardPort() throws {
        let socket = try ZMQSocket(context: context, type: .router)
        try socket.bind("tcp://127.0.0.1:*")
        let endpoint = try socket.lastEndpoint()
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect(Int(endpoint.split(separator: ":").last!)! > 0)
    }

    @Test func everySocketTypeCanBeCreated() throws {
        for type in SocketType.allCases {
            let socket = try ZMQSocket(context: context, type: type)
            #expect(socket.type == type)
        }
    }
}
